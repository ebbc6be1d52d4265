"""Chapter 2 explorer: move the draft toward the target and watch what each rule emits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..distributions import mix, softmax
from ..plots.acceptance import rule_outputs_figure
from ._base import explorer

__all__ = ["acceptance_explorer", "explorer_draft"]


def explorer_draft(p, q0, closeness: float, draft_temperature: float) -> np.ndarray:
    """The draft the explorer shows: q0 tempered by ``draft_temperature``, then moved a
    fraction ``closeness`` of the way to p (q = w·p + (1 − w)·q0^(1/T) normalised)."""
    q0 = np.asarray(q0, float)
    with np.errstate(divide="ignore"):
        qt = softmax(np.log(q0), draft_temperature)
    return mix(np.asarray(p, float), qt, closeness)


def acceptance_explorer(p, q0, labels: Sequence[str] | None = None, closeness: float = 0.3,
                        draft_temperature: float = 1.0,
                        rules: Sequence[str] = ("exact", "always-accept", "accept-if-top",
                                                "resample-from-p"),
                        show_controls: bool = True):
    """Sliders for the draft's closeness to p and its temperature; bars of each rule's output.

    The exact rule's bars sit on the target outline whatever the sliders say; the tempting
    rules drift away as the draft does. Shows the default figure first (static on the web).
    """
    import ipywidgets as w

    def plot(closeness, draft_temperature):
        q = explorer_draft(p, q0, closeness, draft_temperature)
        return rule_outputs_figure(
            p, q, rules, labels,
            title=f"draft closeness w = {closeness:.2f}, draft temperature {draft_temperature:.2f}")

    controls = {
        "closeness": w.FloatSlider(value=closeness, min=0.0, max=1.0, step=0.05,
                                   description="closeness w", continuous_update=False),
        "draft_temperature": w.FloatSlider(value=draft_temperature, min=0.2, max=3.0, step=0.1,
                                           description="draft T", continuous_update=False),
    }
    return explorer(plot, controls, show_controls=show_controls)
