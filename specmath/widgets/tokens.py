"""Chapter 4 explorer: the distribution of N, the tokens emitted per iteration."""

from __future__ import annotations

import numpy as np

from ..simulation import simulate_tokens_per_iteration
from ._base import explorer

__all__ = ["tokens_figure", "tokens_explorer", "tokens_live"]


def tokens_figure(alpha: float = 0.8, k: int = 5, n_iterations: int = 2000, seed: int = 0):
    """Exact pmf of N, a seeded simulation of ``n_iterations`` iterations, and E[N]."""
    from ..plots.tokens import plot_pmf

    samples = simulate_tokens_per_iteration(alpha, k, n_iterations, np.random.default_rng(seed))
    return plot_pmf(alpha, k, samples=samples)


def tokens_explorer(alpha: float = 0.8, k: int = 5, n_iterations: int = 2000, seed: int = 0,
                    show_controls: bool = True):
    """Sliders for α, k and the number of simulated iterations (ch. 4 explorer)."""
    import ipywidgets as w

    controls = {
        "alpha": w.FloatSlider(value=alpha, min=0.0, max=1.0, step=0.01, description="α"),
        "k": w.IntSlider(value=k, min=0, max=16, description="k"),
        "n_iterations": w.IntSlider(value=n_iterations, min=100, max=20000, step=100,
                                    description="iterations"),
        "seed": w.IntSlider(value=seed, min=0, max=99, description="seed"),
    }
    return explorer(tokens_figure, controls, show_controls=show_controls,
                    live=lambda: tokens_live(alpha, k, n_iterations, seed))


def tokens_live(alpha: float = 0.8, k: int = 5, n_iterations: int = 2000, seed: int = 0,
                k_max: int = 16) -> dict:
    """The website's live version of :func:`tokens_figure` (Vega-Lite).

    The exact law of N (ch. 4, eq. pmf) and E[N] are closed forms evaluated in the browser.
    The seeded simulation is precomputed with specmath for α = 0, 0.05, …, 1 and every k
    (``n_iterations`` iterations, ``seed``) and filtered by the sliders, so the site's α
    moves in steps of 0.05 (the kernel's slider in 0.01).
    """
    from ._live import frames_filter, grid, panel_width, slider, top_level

    freq, means = [], []
    for a in grid(0.0, 1.0, 0.05):
        for kk in range(k_max + 1):
            s = simulate_tokens_per_iteration(a, kk, n_iterations, np.random.default_rng(seed))
            f = np.bincount(s, minlength=kk + 2)[1:kk + 2] / s.size
            freq += [{"a": a, "k": kk, "n": n, "f": round(float(v), 6)}
                     for n, v in enumerate(f, start=1)]
            means.append({"a": a, "k": kk, "mean": round(float(s.mean()), 6)})
    sel = frames_filter(a="alpha", k="k")
    x = {"field": "n", "type": "quantitative", "title": "tokens emitted in one iteration, n",
         "scale": {"domain": [0.5, k_max + 1.5]}, "axis": {"tickMinStep": 1}}
    y = {"type": "quantitative", "title": "probability", "scale": {"domain": [0, 1]}}
    panel = {
        "width": 2 * panel_width, "height": 260,
        "title": {"text": {"expr": "'α = ' + format(alpha, '.2f') + ', k = ' + k + ': E[N] = '"
                                   " + format(" + _en("alpha", "k") + ", '.3f')"}},
        "layer": [
            {"name": "pmf_exact", "data": {"sequence": {"start": 1, "stop": k_max + 2, "as": "n"}},
             "transform": [{"filter": "datum.n <= k + 1"},
                           {"calculate": "if(datum.n <= k, pow(alpha, datum.n - 1) * (1 - alpha),"
                                         " pow(alpha, k))", "as": "P"}],
             "mark": {"type": "bar", "size": 14, "opacity": 0.5},
             "encoding": {"x": x, "y": dict(y, field="P"),
                          "color": {"datum": "P(N = n), exact"}}},
            {"name": "expected_tokens", "data": {"values": [{}]},
             "transform": [{"calculate": _en("alpha", "k"), "as": "n"}],
             "mark": {"type": "rule", "strokeDash": [6, 3], "strokeWidth": 2},
             "encoding": {"x": x, "color": {"datum": "E[N], exact"}}},
            {"name": "simulated", "data": {"values": freq}, "transform": [{"filter": sel}],
             "mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": x, "y": dict(y, field="f"),
                          "color": {"datum": f"simulated, {n_iterations} iterations"}}},
            {"name": "simulated_mean", "data": {"values": means},
             "transform": [{"filter": sel}, {"calculate": "datum.mean", "as": "n"}],
             "mark": {"type": "rule", "strokeDash": [2, 2], "strokeWidth": 2},
             "encoding": {"x": x, "color": {"datum": "simulated mean"}}},
        ]}
    params = [slider("alpha", round(round(alpha / 0.05) * 0.05, 10), 0.0, 1.0, 0.05,
                     "α (acceptance probability)"),
              slider("k", int(k), 0, k_max, 1, "k (draft length)")]
    return top_level(params, [panel],
                     f"Tokens per iteration explorer: the exact law of N with E[N], and a seeded "
                     f"simulation of {n_iterations} iterations, for the chosen α and k.")


def _en(a: str, k: str) -> str:
    """E[N] = (1 − α^(k+1))/(1 − α), limit k + 1 at α = 1 (ch. 4), as a Vega expression."""
    return f"if({a} >= 1, {k} + 1, (1 - pow({a}, {k} + 1)) / (1 - {a}))"
