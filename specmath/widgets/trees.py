"""Chapter 10 explorer: several candidates and the best draft tree, as the draft improves."""

from __future__ import annotations

import numpy as np

from ._base import explorer

__all__ = ["trees_pair", "trees_figure", "trees_explorer", "trees_live"]


def trees_pair(closeness: float = 0.3, V: int = 6, decay: float = 0.6):
    """A toy pair: p ∝ decay^i, q = closeness · p + (1 − closeness) · p reversed."""
    p = decay ** np.arange(V, dtype=float)
    p /= p.sum()
    q = closeness * p + (1 - closeness) * p[::-1]
    return p, q


def trees_figure(closeness: float = 0.3, m_max: int = 3, n_max: int = 30):
    """Left: P(kept) against m (ch. 10, fig. multidraft). Right: E[N] against tree size."""
    import matplotlib.pyplot as plt

    from ..plots.style import style_axes
    from ..plots.trees import plot_multidraft, plot_tree_budget
    from ..trees import rank_acceptance

    p, q = trees_pair(closeness)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for ax in (ax1, ax2):
        style_axes(ax)
    plot_multidraft(p, q, ms=tuple(range(1, int(m_max) + 1)), ax=ax1, ceiling_max_m=3)
    # as many ranks as nodes: no cap on the children per node (ch. 10, eq. dp)
    plot_tree_budget(rank_acceptance(p, q, max(int(n_max), 1)), int(n_max), ax=ax2)
    ax1.set_title(f"closeness = {closeness:.2f}")
    return fig


def trees_explorer(closeness: float = 0.3, m_max: int = 3, n_max: int = 30,
                   show_controls: bool = True):
    """Sliders for the draft's closeness to the target, m and the tree budget (ch. 10)."""
    import ipywidgets as w

    controls = {
        "closeness": w.FloatSlider(value=closeness, min=0.0, max=1.0, step=0.05,
                                   description="closeness"),
        "m_max": w.IntSlider(value=m_max, min=1, max=6, description="m up to"),
        "n_max": w.IntSlider(value=n_max, min=4, max=60, step=2, description="nodes up to"),
    }
    return explorer(trees_figure, controls, show_controls=show_controls,
                    live=lambda: trees_live(closeness, m_max, n_max))


def trees_frames(closeness: float, m_hi: int = 6, n_hi: int = 60) -> list[dict]:
    """The data of :func:`trees_figure` at one closeness, as records (series, x, y)."""
    from ..multidraft import MAX_TUPLES, multidraft_acceptance, multidraft_ot_ceiling
    from ..trees import best_tree_values, chain_tree, kary_tree, rank_acceptance, tree_expected_accepted

    p, q = trees_pair(closeness)
    out = []

    def add(series, x, y):
        out.append({"c": closeness, "series": series, "x": int(x), "y": round(float(y), 9)})

    for m in range(1, m_hi + 1):
        add("recursive rejection, i.i.d. candidates", m, multidraft_acceptance(p, q, m))
        if m <= p.size and float(p.size) ** m <= MAX_TUPLES:  # as plot_multidraft
            add("recursive rejection, without replacement", m,
                multidraft_acceptance(p, q, m, replacement=False))
        if m <= 3:
            add("optimal-transport ceiling, i.i.d. candidates", m, multidraft_ot_ceiling(p, q, m))
    acc = rank_acceptance(p, q, n_hi)      # as many ranks as nodes: no cap on children
    for n, v in enumerate(best_tree_values(acc, n_hi)):
        add("best tree (dynamic programme)", n, v + 1)
    for n in range(n_hi + 1):
        add("chain", n, tree_expected_accepted(chain_tree(n), acc) + 1)
    for kk in (2, 3, 4):
        for d in range(1, 12):
            t = kary_tree(kk, d)
            if t.size > n_hi:
                break
            add(f"full {kk}-ary trees", t.size, tree_expected_accepted(t, acc) + 1)
    return out


def trees_live(closeness: float = 0.3, m_max: int = 3, n_max: int = 30) -> dict:
    """The website's live version of :func:`trees_figure` (Vega-Lite). Multi-draft
    acceptance, the transport ceiling and the best tree need specmath's recursions and
    optimisations, so they are precomputed for closeness 0, 0.1, …, 1 (the site's slider
    moves in steps of 0.1) and filtered; m and the tree budget cut the curves."""
    from ._live import frames_filter, grid, panel_width, slider, top_level

    data = [r for c in grid(0.0, 1.0, 0.1) for r in trees_frames(c)]
    sel = frames_filter(c="closeness")
    left_series = ["recursive rejection, i.i.d. candidates",
                   "recursive rejection, without replacement",
                   "optimal-transport ceiling, i.i.d. candidates"]
    ls = "indexof(" + json_list(left_series) + ", datum.series) >= 0"
    colour = {"field": "series", "type": "nominal", "title": None}
    left = {"width": panel_width, "height": 240,
            "title": {"text": {"expr": "'closeness = ' + format(closeness, '.2f')"}},
            "layer": [{"name": "multidraft", "data": {"values": data},
                       "transform": [{"filter": f"{sel} && {ls} && datum.x <= m_max"}],
                       "mark": {"type": "line", "point": True},
                       "encoding": {"x": {"field": "x", "type": "quantitative",
                                          "title": "candidates at the position, m",
                                          "axis": {"tickMinStep": 1}},
                                    "y": {"field": "y", "type": "quantitative",
                                          "title": "P(some candidate is kept)",
                                          "scale": {"domain": [0, 1.02]}},
                                    "color": colour, "strokeDash": colour}}]}
    right = {"width": panel_width, "height": 240, "title": "E[N] against tree size",
             "layer": [{"name": "tree_budget", "data": {"values": data},
                        "transform": [{"filter": f"{sel} && !({ls}) && datum.x <= n_max"}],
                        "mark": {"type": "line", "point": {"size": 12}},
                        "encoding": {"x": {"field": "x", "type": "quantitative",
                                           "title": "tree size n (tokens scored in one pass)"},
                                     "y": {"field": "y", "type": "quantitative",
                                           "title": "E[N], tokens per iteration"},
                                     "color": colour, "strokeDash": colour}}]}
    params = [slider("closeness", round(round(closeness / 0.1) * 0.1, 10), 0.0, 1.0, 0.1,
                     "draft closeness"),
              slider("m_max", int(m_max), 1, 6, 1, "m up to (candidates)"),
              slider("n_max", int(n_max), 4, 60, 2, "nodes up to (tree size)")]
    return top_level(params, [left, right],
                     "Trees explorer: probability that some of m candidates is kept, and "
                     "tokens per iteration against tree size, for a draft of the chosen closeness.")


def json_list(items) -> str:
    """A list of strings as a Vega expression array literal."""
    return "[" + ", ".join("'" + s.replace("'", "\\'") + "'" for s in items) + "]"
