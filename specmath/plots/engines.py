"""Figures for chapter 8 (what engines actually verify)."""

from __future__ import annotations

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import tv_distance
from ..engines import (
    greedy_draft_acceptance,
    lenient_acceptance,
    lenient_output_distribution,
    typical_acceptance,
    typical_output_distribution,
)
from ..speedup import expected_tokens
from .style import MARKERS, PALETTE, axes_or_new

__all__ = ["plot_greedy_vs_sampled", "plot_lossy_tradeoff", "plot_mismatch", "lossy_curves"]


def plot_greedy_vs_sampled(P, Q, examples=(), ax=None):
    """Scatter of α = Σ min(p, q) against α_greedy = p(argmax q) over pairs (ch. 8)."""
    fig, ax = axes_or_new(ax, width=4.8, height=4.2)
    a = acceptance_probability(P, Q)
    g = greedy_draft_acceptance(P, Q)
    ax.scatter(a, g, s=10, alpha=0.35, color=PALETTE["target"], label="random pairs (p, q)")
    ax.plot([0, 1], [0, 1], color=PALETTE["dark"], lw=1, ls="--", label="equal")
    for i, (p, q, name) in enumerate(examples):
        ax.plot(acceptance_probability(p, q), greedy_draft_acceptance(p, q),
                marker=MARKERS[(i + 1) % len(MARKERS)], ms=9, ls="none",
                color=[PALETTE["residual"], PALETTE["overlap"]][i % 2], label=name)
    ax.set_xlabel("sampled draft: α = Σ min(p, q)")
    ax.set_ylabel("greedy draft: p(argmax q)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    return fig


def lossy_curves(P, Q, k: int, ls, epss, delta: float):
    """Mean acceptance, E[N] (at the mean acceptance) and mean TV along both sweeps."""
    alpha = float(np.mean(acceptance_probability(P, Q)))
    out = {"alpha": alpha}
    b = np.array([np.mean(lenient_acceptance(P, Q, l)) for l in ls])
    t = np.array([np.mean(tv_distance(lenient_output_distribution(P, Q, l), P)) for l in ls])
    out["lenient"] = (b, expected_tokens(b, k), t)
    b = np.array([np.mean(typical_acceptance(P, Q, e, delta)) for e in epss])
    t = np.array([np.mean(tv_distance(typical_output_distribution(P, Q, e, delta), P))
                  for e in epss])
    out["typical"] = (b, expected_tokens(b, k), t)
    return out


def plot_lossy_tradeoff(P, Q, k: int, ls, epss, delta: float = 0.3, mark=None, ax=None):
    """TV distance of the output from the target against E[N] for the lenient and the
    typical rule, with the frontier TV = β − α that no rule can beat (ch. 8)."""
    fig, ax = axes_or_new(ax)
    c = lossy_curves(P, Q, k, ls, epss, delta)
    beta = np.linspace(c["alpha"], 1.0, 100)
    ax.fill_between(expected_tokens(beta, k), 0, beta - c["alpha"], color=PALETTE["grey"],
                    alpha=0.2, label="impossible: TV < β − α")
    b, en, tv = c["lenient"]
    ax.plot(en, tv, marker="o", color=PALETTE["target"], lw=1.8, label="lenient, l ↓")
    b, en, tv = c["typical"]
    ax.plot(en, tv, marker="s", color=PALETTE["residual"], lw=1.8, ls="--",
            label=f"typical, δ = {delta:g}, ε ↑")
    ax.plot(expected_tokens(c["alpha"], k), 0, marker="*", ms=14, color=PALETTE["dark"],
            ls="none", label="exact speculative sampling")
    if mark is not None:
        ax.plot(*mark, marker="D", ms=9, color=PALETTE["accent"], ls="none",
                label="selected setting")
    ax.set_xlabel(f"E[N], tokens per iteration (k = {k})")
    ax.set_ylabel("mean TV(output, target)")
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    return fig


def plot_mismatch(target, outputs: dict, labels=None, ax=None):
    """Bars of the target and of the output law of each verification variant (ch. 8)."""
    fig, ax = axes_or_new(ax)
    target = np.asarray(target, float)
    V = target.size
    x = np.arange(V)
    w = 0.8 / (len(outputs) + 1)
    ax.bar(x - 0.4 + w / 2, target, width=w, color=PALETTE["target"], label="target")
    colors = [PALETTE["overlap"], PALETTE["residual"], PALETTE["draft"], PALETTE["accent"]]
    for i, (name, d) in enumerate(outputs.items()):
        ax.bar(x - 0.4 + w * (i + 1.5), d, width=w, color=colors[i % 4], label=name,
               hatch=["", "//", "..", "xx"][i % 4], edgecolor="white")
    ax.set_xticks(x, labels if labels is not None else [str(i) for i in x])
    ax.set_ylabel("probability of the emitted token")
    ax.legend(frameon=False, fontsize="small")
    return fig
