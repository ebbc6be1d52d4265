"""Chapter 8 explorer: the lossy trade-off between tokens per iteration and fidelity."""

from __future__ import annotations

import numpy as np

from ..distributions import tv_distance
from ..engines import lenient_acceptance, lenient_output_distribution
from ..plots.engines import plot_lossy_tradeoff
from ..plots.style import PALETTE
from ..speedup import expected_tokens
from ._base import explorer

__all__ = ["lossy_explorer", "lossy_live"]


def lossy_explorer(P, Q, k: int = 4, l: float = 0.5, delta: float = 0.3,
                   show_controls: bool = True):
    """Sliders for the lenience l, the draft length k and Medusa's δ; the trade-off figure
    with the chosen lenient setting marked. Shows the default figure first."""
    import ipywidgets as w

    ls = np.linspace(1.0, 0.05, 12)
    epss = np.geomspace(0.005, 0.6, 12)

    def plot(l, k, delta):
        b = float(np.mean(lenient_acceptance(P, Q, l)))
        tv = float(np.mean(tv_distance(lenient_output_distribution(P, Q, l), P)))
        fig = plot_lossy_tradeoff(P, Q, k, ls, epss, delta, mark=(expected_tokens(b, k), tv))
        fig.axes[0].set_title(f"l = {l:.2f}: E[N] = {expected_tokens(b, k):.2f}, "
                              f"TV = {tv:.3f}")
        return fig

    controls = {
        "l": w.FloatSlider(value=l, min=0.05, max=1.0, step=0.05, description="lenience l",
                           continuous_update=False),
        "k": w.IntSlider(value=k, min=1, max=10, description="k", continuous_update=False),
        "delta": w.FloatSlider(value=delta, min=0.05, max=1.0, step=0.05,
                               description="typical δ", continuous_update=False),
    }
    return explorer(plot, controls, show_controls=show_controls,
                    live=lambda: lossy_live(P, Q, k, l, delta))


def lossy_live(P, Q, k: int = 4, l: float = 0.5, delta: float = 0.3) -> dict:
    """The website's live version of the explorer (Vega-Lite). The mean acceptance and TV of
    the lenient and typical rules (specmath.engines, averaged over the contexts) are
    precomputed along the figure's sweeps, for l = 0.05, 0.1, …, 1 and δ = 0.05, …, 1;
    E[N] = (1 − β^(k+1))/(1 − β) at the chosen k is evaluated in the browser (ch. 4, 8)."""
    from ..acceptance import acceptance_probability
    from ..engines import typical_acceptance, typical_output_distribution
    from ._live import frames_filter, grid, panel_width, slider, top_level

    def bt(accept, output, *args):
        return (round(float(np.mean(accept(P, Q, *args))), 12),
                round(float(np.mean(tv_distance(output(P, Q, *args), P))), 12))

    alpha = float(np.mean(acceptance_probability(P, Q)))
    rows = []
    for lv in np.linspace(1.0, 0.05, 12):
        b, t = bt(lenient_acceptance, lenient_output_distribution, lv)
        rows.append({"s": "lenient", "d": 0, "l": round(float(lv), 10), "b": b, "t": t})
    for d in grid(0.05, 1.0, 0.05):
        for e in np.geomspace(0.005, 0.6, 12):
            b, t = bt(typical_acceptance, typical_output_distribution, e, d)
            rows.append({"s": "typical", "d": d, "l": 0, "b": b, "t": t})
    for lv in grid(0.05, 1.0, 0.05):
        b, t = bt(lenient_acceptance, lenient_output_distribution, lv)
        rows.append({"s": "mark", "d": 0, "l": lv, "b": b, "t": t})
    for beta in np.linspace(alpha, 1.0, 100):
        rows.append({"s": "frontier", "d": 0, "l": 0, "b": round(float(beta), 15),
                     "t": round(float(beta) - alpha, 15)})
    rows.append({"s": "exact", "d": 0, "l": 0, "b": round(alpha, 15), "t": 0})
    en = [{"calculate": "if(datum.b >= 1, k + 1, (1 - pow(datum.b, k + 1)) / (1 - datum.b))",
           "as": "EN"}]
    x = {"field": "EN", "type": "quantitative", "title": "E[N], tokens per iteration"}
    y = {"field": "t", "type": "quantitative", "title": "mean TV(output, target)"}

    def layer(name, filt, mark, label, extra=None):
        enc = {"x": x, "y": y, "color": {"datum": label}}
        enc.update(extra or {})
        return {"name": name, "transform": [{"filter": filt}] + en, "mark": mark,
                "encoding": enc}

    panel = {"width": 2 * panel_width, "height": 280, "data": {"values": rows},
             "title": {"text": {"expr": "'k = ' + k + ', lenience l = ' + format(lenience, '.2f')"
                                        " + ', typical δ = ' + format(delta, '.2f')"}},
             "layer": [
                 layer("impossible", "datum.s == 'frontier'",
                       {"type": "area", "opacity": 0.2, "color": PALETTE["grey"]},
                       "impossible: TV < β − α"),
                 layer("lenient", "datum.s == 'lenient'", {"type": "line", "point": True},
                       "lenient, l ↓"),
                 layer("typical", f"datum.s == 'typical' && {frames_filter(d='delta')}",
                       {"type": "line", "point": {"shape": "square"}, "strokeDash": [5, 3]},
                       "typical at δ, ε ↑"),
                 layer("exact", "datum.s == 'exact'",
                       {"type": "point", "shape": "diamond", "size": 200, "filled": True},
                       "exact speculative sampling"),
                 layer("selected", f"datum.s == 'mark' && {frames_filter(l='lenience')}",
                       {"type": "point", "shape": "square", "size": 160, "filled": False,
                        "strokeWidth": 2.5}, "selected lenient setting",
                       {"tooltip": [{"field": "EN", "format": ".2f", "title": "E[N]"},
                                    {"field": "t", "format": ".3f", "title": "TV"}]}),
             ]}
    params = [slider("lenience", round(round(l / 0.05) * 0.05, 10), 0.05, 1.0, 0.05, "lenience l"),
              slider("k", int(k), 1, 10, 1, "k (draft length)"),
              slider("delta", round(round(delta / 0.05) * 0.05, 10), 0.05, 1.0, 0.05,
                     "typical δ")]
    return top_level(params, [panel],
                     "Lossy verification explorer: output error (TV) against tokens per "
                     "iteration for the lenient and typical rules, with the impossible region.")
