"""Figures for chapter 5: the speedup S over (α, c), the best draft length, S against k.

Heatmaps use the perceptually uniform ``cividis`` map (readable in greyscale and by
colour-blind readers), a colour bar, and labelled contour lines so the values can be read
without colour at all.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..speedup import optimal_k, optimal_k_continuous, speedup
from .style import LINESTYLES, MARKERS, PALETTE, axes_or_new, style_axes

__all__ = ["speedup_continuous", "speedup_heatmap", "best_k_heatmap", "speedup_maps",
           "speedup_vs_k", "scenario_curves"]


def speedup_continuous(alpha: float, x, c: float) -> np.ndarray:
    """S at a real draft length x ≥ 0: (1 − α^(x+1)) / ((1 − α)(1 + x/c)) (ch. 5, relaxed)."""
    x = np.asarray(x, dtype=float)
    if alpha >= 1.0:
        en = x + 1.0
    else:
        en = -np.expm1((x + 1.0) * np.log(alpha)) / (1.0 - alpha) if alpha > 0 else np.ones_like(x)
    return en / (1.0 + x / c)


def _grid_axes(ax, cs):
    ax.set_yscale("log")
    ax.set_ylim(cs.min(), cs.max())
    ax.set_xlabel("acceptance probability α")
    ax.set_ylabel("draft speed ratio c (log scale)")


def speedup_heatmap(alphas, cs, k_max: int = 32, ax=None, levels=(1.25, 1.5, 2, 3, 4, 6, 10),
                    label_size: float = 8):
    """Heatmap of the best achievable speedup max_k S(α, k, c) over a grid (ch. 5).

    Draws the break-even curve c = 1/α (below it no draft length helps). Returns the
    figure and the (len(cs), len(alphas)) array of speedups that was drawn.
    """
    alphas, cs = np.asarray(alphas, float), np.asarray(cs, float)
    A, C = np.meshgrid(alphas, cs)
    K = optimal_k(A, C, k_max=k_max)
    S = speedup(A, K, C)
    fig, ax = axes_or_new(ax, width=6.0, height=4.2)
    norm = plt.matplotlib.colors.LogNorm(1, max(S.max(), 1.01))
    mesh = ax.pcolormesh(A, C, S, cmap="cividis", shading="auto", norm=norm)
    cb = fig.colorbar(mesh, ax=ax)
    cb.set_label("best speedup  max$_k$ S (log colour scale)")
    cont = ax.contour(A, C, S, levels=[v for v in levels if v <= S.max()], colors="white",
                      linewidths=1.0)
    ax.clabel(cont, fmt=lambda v: f"{v:g}×", fontsize=label_size)
    a_line = alphas[alphas > 0]
    ax.plot(a_line, 1.0 / a_line, color=PALETTE["dark"], ls="--", lw=1.5,
            label="break-even c = 1/α")
    _grid_axes(ax, cs)
    ax.legend(loc="upper left", fontsize=label_size, framealpha=0.9)
    style_axes(ax)
    ax.grid(False)
    return fig, S


def best_k_heatmap(alphas, cs, k_max: int = 32, ax=None, label_size: float = 7):
    """Heatmap of the integer best draft length k*(α, c) with labelled contours (ch. 5).

    Returns the figure and the integer array that was drawn (shape (len(cs), len(alphas))).
    """
    alphas, cs = np.asarray(alphas, float), np.asarray(cs, float)
    A, C = np.meshgrid(alphas, cs)
    K = optimal_k(A, C, k_max=k_max)
    fig, ax = axes_or_new(ax, width=6.0, height=4.2)
    top = int(K.max())
    bounds = np.arange(-0.5, top + 1.5, 1.0)
    cmap = plt.get_cmap("cividis", len(bounds) - 1)
    mesh = ax.pcolormesh(A, C, K, cmap=cmap, norm=plt.matplotlib.colors.BoundaryNorm(bounds, cmap.N),
                         shading="auto")
    cb = fig.colorbar(mesh, ax=ax)
    cb.set_label("best draft length k*")
    step = max(1, (top + 1) // 8)
    cb.set_ticks(np.arange(0, top + 1, step))
    lv = [v for v in (0.5, 1.5, 2.5, 4.5, 8.5, 16.5) if v < top]
    cont = ax.contour(A, C, K, levels=lv, colors="white", linewidths=1.0)
    ax.clabel(cont, fmt=lambda v: f"k* ≥ {int(v + 0.5)}", fontsize=label_size)
    _grid_axes(ax, cs)
    style_axes(ax)
    ax.grid(False)
    return fig, K


def speedup_maps(alphas, cs, k_max: int = 32, *, width: float = 5.6,
                 font_size: float = 13):
    """Fig. 5.1: the best speedup (top) and the best draft length (bottom), stacked (ch. 5).

    Stacked, not side by side, and drawn narrow with large type, so that the labels stay
    readable where the figure is scaled down to a phone's width (about 0.65 of its size at
    390 px) and are shown at full size on a desktop. Returns ``(fig, S, K)`` with the two
    arrays of :func:`speedup_heatmap` and :func:`best_k_heatmap`.
    """
    from .style import new_axes

    # Sizes are set on the artists, not with plt.rc_context: leaving an rc_context inside
    # a Jupyter kernel resets the inline backend's state, and no later figure is shown.
    fig, (top, bottom) = new_axes(nrows=2, width=width, height=1.6 * width)
    _, S = speedup_heatmap(alphas, cs, k_max=k_max, ax=top, label_size=font_size - 1)
    _, K = best_k_heatmap(alphas, cs, k_max=k_max, ax=bottom, label_size=font_size - 1)
    for ax in fig.axes:   # the two maps and their colour bars
        ax.xaxis.label.set_size(font_size)
        ax.yaxis.label.set_size(font_size)
        ax.title.set_size(font_size)
        ax.tick_params(labelsize=font_size - 1)
    return fig, S, K


def speedup_vs_k(alpha: float, c: float, k_max: int = 16, k=None, ax=None, label=None,
                 color=None, marker="o", linestyle="-"):
    """S(k) at integer k (markers) and real k (line), with the best k of each marked (ch. 5)."""
    fig, ax = axes_or_new(ax)
    color = color or PALETTE["target"]
    ks = np.arange(k_max + 1)
    xs = np.linspace(0, k_max, 400)
    ax.plot(xs, speedup_continuous(alpha, xs, c), color=color, ls=linestyle, lw=1.2, alpha=0.8)
    ax.plot(ks, speedup(alpha, ks, c), marker=marker, ls="none", color=color, ms=4,
            label=label or f"α = {alpha:g}, c = {c:g}")
    kb = int(optimal_k(alpha, c, k_max=k_max))
    ax.plot([kb], [speedup(alpha, kb, c)], marker="*", ms=14, color=color,
            markeredgecolor=PALETTE["dark"], ls="none")
    if np.isfinite(c) and alpha < 1:
        kc = float(optimal_k_continuous(alpha, c))
        if 0 < kc <= k_max:
            ax.axvline(kc, color=color, ls=":", lw=1)
    if k is not None:
        ax.plot([k], [speedup(alpha, k, c)], marker="s", ms=9, mfc="none", color=PALETTE["dark"],
                ls="none", label=f"your k = {k}")
    ax.axhline(1.0, color=PALETTE["grey"], lw=1, ls="--")
    ax.set_xlabel("draft length k")
    ax.set_ylabel("speedup S")
    return fig


def scenario_curves(scenarios, k_max: int = 12, ax=None):
    """S(k) for several (name, α, c) scenarios on one axis, each with its own line style."""
    fig, ax = axes_or_new(ax)
    colors = [PALETTE["draft"], PALETTE["target"], PALETTE["residual"], PALETTE["overlap"]]
    for i, (name, a, c) in enumerate(scenarios):
        speedup_vs_k(a, c, k_max=k_max, ax=ax, label=f"{name}: α = {a:g}, c = {c:g}",
                     color=colors[i % len(colors)], marker=MARKERS[i % len(MARKERS)],
                     linestyle=LINESTYLES[i % len(LINESTYLES)])
    ax.legend(fontsize=8)
    return fig
