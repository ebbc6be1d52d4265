"""Figures for chapter 4 (tokens per iteration): the law of N, E[N] and reported metrics."""

from __future__ import annotations

import numpy as np

from ..speedup import acceptance_rate_from_alpha, expected_tokens, tokens_per_iteration_pmf
from .style import LINESTYLES, MARKERS, PALETTE, axes_or_new

__all__ = ["plot_pmf", "plot_expected_tokens", "plot_acceptance_rate"]


def plot_pmf(alpha: float, k: int, samples=None, ax=None):
    """Bars of P(N = n), n = 1 … k+1, the simulated frequencies and E[N] (ch. 4, eq. pmf)."""
    fig, ax = axes_or_new(ax)
    pmf = tokens_per_iteration_pmf(alpha, k)
    n = np.arange(1, k + 2)
    ax.bar(n, pmf, width=0.7, color=PALETTE["target"], alpha=0.35, edgecolor=PALETTE["target"],
           label="P(N = n), exact")
    en = expected_tokens(alpha, k)
    ax.axvline(en, color=PALETTE["dark"], ls="--", lw=1.5, label=f"E[N] = {en:.3f}")
    if samples is not None:
        s = np.asarray(samples)
        freq = np.bincount(s, minlength=k + 2)[1:k + 2] / max(s.size, 1)
        ax.plot(n, freq, marker="o", ls="none", color=PALETTE["residual"], ms=7,
                label=f"simulated, {s.size} iterations")
        ax.axvline(s.mean(), color=PALETTE["residual"], ls=":", lw=1.5,
                   label=f"simulated mean = {s.mean():.3f}")
    ax.set_xticks(n)
    ax.set_xlabel("tokens emitted in one iteration, n")
    ax.set_ylabel("probability")
    ax.set_title(f"α = {alpha:.2f}, k = {k}")
    ax.legend(frameon=False, fontsize="small")
    return fig


def plot_expected_tokens(ks=(1, 2, 4, 8, 16), ax=None, *, n: int = 200):
    """E[N] against α for several k, with the k → ∞ limit 1/(1 − α) (ch. 4, limits)."""
    fig, ax = axes_or_new(ax)
    a = np.linspace(0.0, 0.97, n)
    for i, k in enumerate(ks):
        ax.plot(a, expected_tokens(a, k), ls=LINESTYLES[i % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)], markevery=n // 6, lw=1.8, label=f"k = {k}")
    ax.plot(a, 1.0 / (1.0 - a), color=PALETTE["dark"], lw=1.2, ls=(0, (1, 1)),
            label="k → ∞: 1/(1 − α)")
    ax.set_ylim(0.8, max(ks) + 1.5)
    ax.set_xlabel("acceptance probability α")
    ax.set_ylabel("E[N], tokens per iteration")
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    return fig


def plot_acceptance_rate(ks=(1, 3, 5, 10), ax=None, *, n: int = 101):
    """Accepted ÷ drafted tokens (what vLLM prints) against α, for several k (ch. 4, metrics)."""
    fig, ax = axes_or_new(ax)
    a = np.linspace(0.0, 1.0, n)
    ax.plot(a, a, color=PALETTE["grey"], lw=1.2, ls="-", label="α itself (k = 1)")
    for i, k in enumerate(ks):
        if k == 1:
            continue
        ax.plot(a, acceptance_rate_from_alpha(a, k), ls=LINESTYLES[(i + 1) % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)], markevery=n // 6, lw=1.8, label=f"k = {k}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("acceptance probability α")
    ax.set_ylabel("accepted ÷ drafted tokens")
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    return fig
