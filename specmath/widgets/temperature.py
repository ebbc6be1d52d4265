"""The temperature explorer (chapter 6): p, q and α as both models are tempered."""

from __future__ import annotations

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import softmax, top1_agreement
from ..plots.style import PALETTE, new_axes
from ..plots.temperature import alpha_temperature_curves, distribution_bars
from ..temperature import alpha_at_temperature, perturbed_logits, zipf_logits
from ._base import explorer

__all__ = ["default_logits", "temperature_figure", "temperature_explorer"]


def default_logits(vocab_size: int = 40, exponent: float = 1.0, noise: float = 1.0, seed: int = 6):
    """A Zipf-like target and a noisy draft of it (the explorer's default pair)."""
    zp = zipf_logits(vocab_size, exponent)
    zq = perturbed_logits(zp, noise, np.random.default_rng(seed))
    return zp, zq


def temperature_figure(target_logits, draft_logits, T: float = 1.0, top: int = 15):
    """Left: p and q at temperature T. Right: α(T) over a log grid, the current T, and the
    T → 0 limit (top-1 agreement)."""
    fig, (left, right) = new_axes(ncols=2, width=9.5, height=3.6)
    p, q = softmax(target_logits, T), softmax(draft_logits, T)
    a = float(acceptance_probability(p, q))
    distribution_bars(p, q, ax=left, top=top, title=f"T = {T:.3g}: α = Σ min(p, q) = {a:.3f}")
    ts = np.logspace(-2, 2, 121)
    agree = float(top1_agreement(softmax(target_logits), softmax(draft_logits)))
    alpha_temperature_curves(ts, {"α(T)": alpha_at_temperature(target_logits, draft_logits, ts)},
                             limits={"α(T)": agree}, ax=right, mark_T=T if T > 0 else None)
    right.plot([max(T, 1e-2)], [a], marker="s", ms=9, mfc="none", color=PALETTE["dark"])
    right.set_title(f"top-1 agreement (T → 0 limit) = {agree:.0f}", fontsize=10)
    return fig


def temperature_explorer(target_logits=None, draft_logits=None, T: float = 1.0, top: int = 15,
                         show_controls: bool = True, noise: float = 1.0, seed: int = 6):
    """A temperature slider (log scale) redrawing :func:`temperature_figure`.

    With no logits given, the pair is :func:`default_logits` and two more sliders change
    the draft's noise and its random seed, so a reader can find pairs whose top tokens
    agree (α → 1 as T → 0) and pairs whose top tokens differ (α → 0).
    """
    import ipywidgets as w

    controls = {"T": w.FloatLogSlider(value=T, base=10, min=-2, max=2, step=0.05,
                                      description="T")}
    if target_logits is None or draft_logits is None:
        controls["noise"] = w.FloatSlider(value=noise, min=0.0, max=3.0, step=0.1,
                                          description="draft noise")
        controls["seed"] = w.IntSlider(value=seed, min=0, max=20, description="draft seed")

        def plot(T, noise, seed):
            zp, zq = default_logits(noise=noise, seed=seed)
            return temperature_figure(zp, zq, T, top)
    else:
        def plot(T):
            return temperature_figure(target_logits, draft_logits, T, top)
    return explorer(plot, controls, show_controls=show_controls)
