"""Chapter 3 explorer: a draft against a fixed target, its overlap α and TV."""

from __future__ import annotations

from ..acceptance import acceptance_probability
from ..tv import best_guess_accuracy, overlap_pair
from ._base import explorer

__all__ = ["overlap_figure", "overlap_explorer"]


def overlap_figure(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0):
    """Two panels: p, q and min(p, q) shaded; α and TV as the draft is mixed toward p."""
    from ..plots import new_axes
    from ..plots.overlap import plot_alpha_vs_weight, plot_overlap

    p, q = overlap_pair(shift, temperature, weight)
    p0, q0 = overlap_pair(shift, temperature, 0.0)
    fig, (ax1, ax2) = new_axes(ncols=2, width=10.0, height=3.8)
    a = acceptance_probability(p, q)
    guess = best_guess_accuracy(p, q)
    plot_overlap(p, q, ax=ax1,
                 title=f"α = {a:.3f}, TV = {1 - a:.3f}, best guess right {guess:.3f}")
    plot_alpha_vs_weight(p0, q0, ax=ax2, mark=weight)
    ax2.set_title("mixing this draft toward the target")
    return fig


def overlap_explorer(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0,
                     show_controls: bool = True):
    """Sliders for the draft's shift, temperature and mixing weight (ch. 3 explorer)."""
    import ipywidgets as w

    controls = {
        "shift": w.FloatSlider(value=shift, min=-4.0, max=4.0, step=0.25, description="shift"),
        "temperature": w.FloatSlider(value=temperature, min=0.25, max=3.0, step=0.05,
                                     description="temperature"),
        "weight": w.FloatSlider(value=weight, min=0.0, max=1.0, step=0.05,
                                description="mix weight w"),
    }
    return explorer(overlap_figure, controls, show_controls=show_controls)
