"""Chapter 8 explorer: the lossy trade-off between tokens per iteration and fidelity."""

from __future__ import annotations

import numpy as np

from ..distributions import tv_distance
from ..engines import lenient_acceptance, lenient_output_distribution
from ..plots.engines import plot_lossy_tradeoff
from ..speedup import expected_tokens
from ._base import explorer

__all__ = ["lossy_explorer"]


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
    return explorer(plot, controls, show_controls=show_controls)
