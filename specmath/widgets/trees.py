"""Chapter 10 explorer: several candidates and the best draft tree, as the draft improves."""

from __future__ import annotations

import numpy as np

from ._base import explorer

__all__ = ["trees_pair", "trees_figure", "trees_explorer"]


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
    plot_tree_budget(rank_acceptance(p, q, 6), int(n_max), ax=ax2)
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
    return explorer(trees_figure, controls, show_controls=show_controls)
