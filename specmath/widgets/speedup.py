"""The α–k–c speedup explorer (chapter 5)."""

from __future__ import annotations

import numpy as np

from ..plots.speedup import speedup_vs_k
from ..plots.style import PALETTE, new_axes
from ..speedup import expected_tokens, optimal_k, speedup
from ._base import explorer

__all__ = ["speedup_figure", "speedup_explorer"]


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
    right.set_xlabel("acceptance rate α")
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
                    show_controls=show_controls)
