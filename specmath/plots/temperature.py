"""Figures for chapter 6: α against temperature, p and q side by side, α against entropy,
and per-position acceptance."""

from __future__ import annotations

import numpy as np

from .style import LINESTYLES, MARKERS, PALETTE, axes_or_new

__all__ = ["alpha_temperature_curves", "distribution_bars", "alpha_entropy_plot",
           "positional_plot"]

_COLORS = [PALETTE["target"], PALETTE["draft"], PALETTE["overlap"], PALETTE["residual"],
           PALETTE["accent"]]


def alpha_temperature_curves(temperatures, curves: dict, limits: dict | None = None, ax=None,
                             mark_T=None):
    """α(T) curves on a log temperature axis; ``limits`` draws each T → 0 limit as a dotted
    horizontal line in the matching style (ch. 6)."""
    fig, ax = axes_or_new(ax)
    t = np.asarray(temperatures, float)
    for i, (name, a) in enumerate(curves.items()):
        col = _COLORS[i % len(_COLORS)]
        ax.plot(t, a, color=col, ls=LINESTYLES[i % len(LINESTYLES)], lw=2, label=name,
                marker=MARKERS[i % len(MARKERS)], markevery=max(1, len(t) // 8), ms=5)
        if limits and name in limits:
            ax.axhline(limits[name], color=col, ls=":", lw=1.2)
    if mark_T is not None:
        ax.axvline(mark_T, color=PALETTE["dark"], lw=1, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("temperature T (log scale)")
    ax.set_ylabel("acceptance probability α(T)")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def distribution_bars(p, q, ax=None, top: int = 15, title: str | None = None):
    """Bars of the target p and draft q over the ``top`` most likely target tokens, with the
    overlap min(p, q) hatched (its total mass is α)."""
    fig, ax = axes_or_new(ax)
    p, q = np.asarray(p, float), np.asarray(q, float)
    order = np.argsort(-p, kind="stable")[:top]
    x = np.arange(len(order))
    w = 0.4
    ax.bar(x - w / 2, p[order], width=w, color=PALETTE["target"], label="target p")
    ax.bar(x + w / 2, q[order], width=w, color=PALETTE["draft"], hatch="//",
           edgecolor=PALETTE["dark"], lw=0.3, label="draft q")
    ax.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[np.minimum(p, q)[order], 0], where="post",
            color=PALETTE["dark"], lw=1.2, label="min(p, q)")
    ax.set_xticks(x, [str(i) for i in order], fontsize=7)
    ax.set_xlabel("token (sorted by target probability)")
    ax.set_ylabel("probability")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig


def alpha_entropy_plot(entropies: dict, alphas: dict, ax=None):
    """Scatter of α against the target's entropy H(p), one marker per group (ch. 6)."""
    fig, ax = axes_or_new(ax)
    for i, name in enumerate(entropies):
        ax.plot(entropies[name], alphas[name], ls="none", marker=MARKERS[i % len(MARKERS)],
                color=_COLORS[i % len(_COLORS)], ms=4, alpha=0.6, label=name)
    ax.set_xlabel("entropy of the target H(p) (bits)")
    ax.set_ylabel("acceptance probability α")
    ax.legend(fontsize=8)
    return fig


def positional_plot(alphas, ax=None):
    """Per-position acceptance α_i (bars) and the probability of reaching position j,
    Π_{i≤j} α_i (line), for one or more named profiles (ch. 6)."""
    fig, ax = axes_or_new(ax)
    n = len(alphas)
    w = 0.8 / n
    for i, (name, a) in enumerate(alphas.items()):
        a = np.asarray(a, float)
        j = np.arange(1, len(a) + 1)
        col = _COLORS[i % len(_COLORS)]
        ax.bar(j + (i - (n - 1) / 2) * w, a, width=w, color=col, alpha=0.5,
               hatch=["", "//", "..", "xx"][i % 4], edgecolor=PALETTE["dark"], lw=0.3)
        ax.plot(j, np.cumprod(a), color=col, ls=LINESTYLES[i % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)], label=f"{name}: P(reach past j)")
    ax.set_xlabel("draft position j")
    ax.set_ylabel("α_j (bars), Π α_i (lines)")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    return fig
