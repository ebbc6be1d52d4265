"""Chapter 4 explorer: the distribution of N, the tokens emitted per iteration."""

from __future__ import annotations

import numpy as np

from ..simulation import simulate_tokens_per_iteration
from ._base import explorer

__all__ = ["tokens_figure", "tokens_explorer"]


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
    return explorer(tokens_figure, controls, show_controls=show_controls)
