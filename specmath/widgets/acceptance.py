"""Chapter 2 explorer: move the draft toward the target and watch what each rule emits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..distributions import mix, softmax
from ..plots.acceptance import rule_outputs_figure
from ._base import explorer

__all__ = ["acceptance_explorer", "explorer_draft", "acceptance_live"]


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
    return explorer(plot, controls, show_controls=show_controls,
                    live=lambda: acceptance_live(p, q0, labels, closeness, draft_temperature, rules))


def acceptance_live(p, q0, labels: Sequence[str] | None = None, closeness: float = 0.3,
                    draft_temperature: float = 1.0,
                    rules: Sequence[str] = ("exact", "always-accept", "accept-if-top",
                                            "resample-from-p")) -> dict:
    """The website's live version of the explorer (Vega-Lite; closed forms in the browser):
    the draft of :func:`explorer_draft` and each rule's exact output distribution
    (:func:`specmath.acceptance.naive_output_distribution`; the exact rule outputs p)."""
    from ..plots.acceptance import RULE_LABELS
    from ._live import panel_width, slider, top_level

    p = np.asarray(p, float)
    q0 = np.asarray(q0, float)
    names = [str(i) for i in range(p.size)] if labels is None else [str(s) for s in labels]
    top = int(np.argmax(p))
    data = {"values": [{"x": i, "token": names[i], "p": float(p[i]), "q0": float(q0[i])}
                       for i in range(p.size)]}
    outs = {"exact": "datum.p", "always-accept": "datum.q",
            "accept-if-top": f"if(datum.x == {top}, datum.qtop, 0) + (1 - datum.qtop) * datum.p",
            "resample-from-p": "datum.m + (1 - datum.alpha) * datum.p"}
    tr = [{"calculate": "pow(datum.q0, 1 / draft_T)", "as": "qt"},
          {"joinaggregate": [{"op": "sum", "field": "qt", "as": "qts"}]},
          {"calculate": "(1 - closeness) * datum.qt / datum.qts + closeness * datum.p", "as": "q"},
          {"calculate": "min(datum.p, datum.q)", "as": "m"},
          {"calculate": f"if(datum.x == {top}, datum.q, 0)", "as": "qt1"},
          {"joinaggregate": [{"op": "sum", "field": "m", "as": "alpha"},
                             {"op": "sum", "field": "qt1", "as": "qtop"}]}]
    n = len(rules)
    bw = f"0.8 * width / {p.size} / {n}"  # bar width follows the chart's width (phones)
    x = {"field": "x", "type": "quantitative", "title": None,
         "scale": {"domain": [-0.5, p.size - 0.5]},
         "axis": {"values": list(range(p.size)), "labelExpr": _label_expr(names)}}
    y = {"type": "quantitative", "title": "probability of emitting the token"}
    layers = []
    for i, r in enumerate(rules):
        layers.append({"name": f"rule_{r}", "transform": [{"calculate": outs[r], "as": "out"}],
                       "mark": {"type": "bar", "size": {"expr": bw},
                                "xOffset": {"expr": f"{i - (n - 1) / 2} * {bw}"},
                                "stroke": "black", "strokeWidth": 0.5},
                       "encoding": {"x": x, "y": dict(y, field="out"),
                                    "color": {"datum": RULE_LABELS.get(r, r)},
                                    "tooltip": [{"field": "token"},
                                                {"field": "out", "format": ".3f",
                                                 "title": RULE_LABELS.get(r, r)}]}})
    layers.append({"name": "target", "mark": {"type": "line", "interpolate": "step",
                                              "color": "black", "strokeWidth": 2},
                   "encoding": {"x": x, "y": dict(y, field="p")}})
    panel = {"width": 2 * panel_width, "height": 260, "data": data, "transform": tr,
             "title": {"text": {"expr": "'draft closeness w = ' + format(closeness, '.2f') + "
                                        "', draft temperature ' + format(draft_T, '.2f') + "
                                        "' (black steps: the target p)'"}},
             "layer": layers}
    params = [slider("closeness", closeness, 0.0, 1.0, 0.05, "closeness w"),
              slider("draft_T", draft_temperature, 0.2, 3.0, 0.1, "draft temperature")]
    return top_level(params, [panel],
                     "Acceptance rule explorer: the output distribution of the exact rule and "
                     "of three tempting rules, against the target p, as the draft changes.")


def _label_expr(names: Sequence[str]) -> str:
    """An axis labelExpr mapping token index i to its label."""
    arr = "[" + ", ".join("'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
                          for s in names) + "]"
    return f"{arr}[datum.value] || datum.value"
