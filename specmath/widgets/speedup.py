"""The α–k–c speedup explorer (chapter 5)."""

from __future__ import annotations

import numpy as np

from ..plots.speedup import speedup_vs_k
from ..plots.style import PALETTE, new_axes
from ..speedup import expected_tokens, optimal_k, speedup
from ._base import explorer

__all__ = ["speedup_figure", "speedup_explorer", "speedup_live"]


def speedup_figure(alpha: float = 0.8, k: int = 5, c: float = 10.0, k_max: int = 16):
    """Two panels: S against k at this (α, c), and S against α at this (k, c).

    The left panel marks your k (square), the best integer k (star) and the continuous
    optimum (dotted line); the right one the break-even α = 1/c below which even k = 1 loses.
    """
    fig, (left, right) = new_axes(ncols=2, width=9.0, height=3.6)
    speedup_vs_k(alpha, c, k_max=k_max, k=k, ax=left)
    left.legend(fontsize=8, loc="lower right")
    a = np.linspace(0, 1, 201)
    right.plot(a, speedup(a, k, c), color=PALETTE["target"], lw=2, label=f"k = {k}")
    right.plot(a, speedup(a, optimal_k(a, c, k_max=k_max), c), color=PALETTE["draft"], ls="--",
               lw=2, label="best k")
    right.axhline(1.0, color=PALETTE["grey"], ls="--", lw=1)
    if c > 1:
        right.axvline(1.0 / c, color=PALETTE["dark"], ls=":", lw=1.2, label="α = 1/c")
    right.plot([alpha], [speedup(alpha, k, c)], marker="s", ms=9, mfc="none",
               color=PALETTE["dark"], ls="none")
    right.set_xlabel("acceptance probability α")
    right.set_ylabel("speedup S")
    right.legend(fontsize=8, loc="upper left")
    kb = int(optimal_k(alpha, c, k_max=k_max))
    fig.suptitle(f"α = {alpha:.2f}, k = {k}, c = {c:g}:  E[N] = {expected_tokens(alpha, k):.2f},"
                 f"  S = {speedup(alpha, k, c):.2f}×;  best k = {kb} (S = "
                 f"{speedup(alpha, kb, c):.2f}×)", fontsize=10)
    return fig


def speedup_explorer(alpha: float = 0.8, k: int = 5, c: float = 10.0, k_max: int = 16,
                     show_controls: bool = True):
    """Sliders for α, k and c redrawing :func:`speedup_figure` (the static default comes first)."""
    import ipywidgets as w

    controls = {
        "alpha": w.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="α"),
        "k": w.IntSlider(value=k, min=0, max=k_max, step=1, description="k"),
        "c": w.FloatLogSlider(value=c, base=10, min=0, max=2, step=0.05, description="c"),
    }
    return explorer(lambda alpha, k, c: speedup_figure(alpha, k, c, k_max), controls,
                    show_controls=show_controls,
                    live=lambda: speedup_live(alpha, k, min(max(c, 1.0), 100.0), k_max))


def _en_expr(a: str, k: str) -> str:
    """E[N] = (1 − α^(k+1))/(1 − α) (eq. 4.x), with its limit k + 1 at α = 1, in Vega."""
    return f"if({a} >= 1, {k} + 1, (1 - pow({a}, {k} + 1)) / (1 - {a}))"


_STAR = ("M0,-1L0.22,-0.31L0.95,-0.31L0.36,0.12L0.59,0.81L0,0.38L-0.59,0.81L-0.36,0.12"
         "L-0.95,-0.31L-0.22,-0.31Z")


def speedup_live(alpha: float = 0.8, k: int = 5, c: float = 10.0, k_max: int = 16) -> dict:
    """The website's live version of :func:`speedup_figure` (Vega-Lite; closed forms in the
    browser: E[N] and S = E[N]/(1 + k/c) of chapter 5, the best k as the maximum over
    k = 0…k_max)."""
    from ._live import panel_width, slider, top_level

    W, H = panel_width, 230
    S_k = [{"calculate": _en_expr("alpha", "datum.k"), "as": "EN"},
           {"calculate": "datum.EN / (1 + datum.k / c)", "as": "S"},
           {"joinaggregate": [{"op": "max", "field": "S", "as": "Smax"}]}]
    seq = {"sequence": {"start": 0, "stop": k_max + 1, "as": "k"}}
    x_k = {"field": "k", "type": "quantitative", "title": "draft length k",
           "scale": {"domain": [0, k_max]}}
    y_S = {"field": "S", "type": "quantitative", "title": "speedup S"}
    one = {"data": {"values": [{}]},  # one rule, with or without the panel's data
           "mark": {"type": "rule", "strokeDash": [4, 4], "color": PALETTE["grey"]},
           "encoding": {"y": {"datum": 1, "type": "quantitative"}}}
    left = {
        "width": W, "height": H,
        "title": {"text": {"expr": "'S against k at α = ' + format(alpha, '.2f') + ', c = '"
                                   " + format(c, '.3g')"}},
        "layer": [
            {"name": "speedup_by_k", "data": seq, "transform": S_k, "mark": {"type": "line", "point": True,
                                             "color": PALETTE["target"]},
             "encoding": {"x": x_k, "y": y_S}},
            {"name": "your_k", "data": seq, "transform": S_k + [{"filter": "datum.k == k"}],
             "mark": {"type": "point", "shape": "square", "size": 160, "filled": False,
                      "strokeWidth": 2, "color": PALETTE["dark"]},
             "encoding": {"x": x_k, "y": y_S}},
            {"name": "best_k", "data": seq,
             "transform": S_k + [{"filter": "datum.S == datum.Smax"}],
             "mark": {"type": "point", "shape": _STAR, "size": 260, "filled": True,
                      "color": PALETTE["target"], "stroke": PALETTE["dark"]},
             "encoding": {"x": x_k, "y": y_S,
                          "tooltip": [{"field": "k", "title": "best k"},
                                      {"field": "S", "format": ".3f"}]}},
            one,
        ]}
    x_a = {"field": "a", "type": "quantitative", "title": "acceptance probability α",
           "scale": {"domain": [0, 1]}}
    right = {
        "width": W, "height": H,
        "title": {"text": {"expr": "'k = ' + k + ': E[N] = ' + format(" + _en_expr("alpha", "k")
                                   + ", '.2f') + ', S = ' + format(" + _en_expr("alpha", "k")
                                   + " / (1 + k / c), '.2f') + '×'"}},
        "data": {"sequence": {"start": 0, "stop": 1.0001, "step": 0.005, "as": "a"}},
        "layer": [
            {"name": "speedup_by_alpha",
             "transform": [{"calculate": _en_expr("datum.a", "k") + " / (1 + k / c)", "as": "S"}],
             "mark": {"type": "line", "strokeWidth": 2},
             "encoding": {"x": x_a, "y": y_S, "color": {"datum": "your k"}}},
            {"name": "best_k_by_alpha",
             "transform": [{"calculate": f"sequence(0, {k_max + 1})", "as": "kk"},
                           {"flatten": ["kk"]},
                           {"calculate": _en_expr("datum.a", "datum.kk") + " / (1 + datum.kk / c)",
                            "as": "Sk"},
                           {"aggregate": [{"op": "max", "field": "Sk", "as": "S"}],
                            "groupby": ["a"]}],
             "mark": {"type": "line", "strokeWidth": 2, "strokeDash": [6, 3]},
             "encoding": {"x": x_a, "y": y_S, "color": {"datum": "best k"}}},
            {"name": "break_even", "data": {"values": [{}]},
             "transform": [{"filter": "c > 1"}, {"calculate": "1 / c", "as": "a"}],
             "mark": {"type": "rule", "strokeDash": [2, 2], "color": PALETTE["dark"]},
             "encoding": {"x": {"field": "a", "type": "quantitative"}}},
            {"name": "your_point", "data": {"values": [{}]},
             "transform": [{"calculate": "alpha", "as": "a"},
                           {"calculate": _en_expr("alpha", "k") + " / (1 + k / c)", "as": "S"}],
             "mark": {"type": "point", "shape": "square", "size": 160, "filled": False,
                      "strokeWidth": 2, "color": PALETTE["dark"]},
             "encoding": {"x": x_a, "y": y_S}},
            one,
        ]}
    params = [slider("alpha", alpha, 0.0, 0.99, 0.01, "α (acceptance probability)"),
              slider("k", k, 0, k_max, 1, "k (draft length)"),
              slider("c", c, 1.0, 100.0, 0.5, "c (draft speed ratio)")]
    return top_level(params, [left, right],
                     "Speedup explorer: speedup S against draft length k (your k a square, the "
                     "best k a star) and against the acceptance probability α (dotted line α = 1/c).")
