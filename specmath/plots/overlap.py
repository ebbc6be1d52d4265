"""Figures for chapter 3 (draft quality): overlapping distributions, event gaps, mixing."""

from __future__ import annotations

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import mix, tv_distance
from ..tv import event_gaps
from .style import PALETTE, axes_or_new

__all__ = ["plot_overlap", "plot_event_gaps", "plot_alpha_vs_weight", "plot_alpha_vs_shift"]


def plot_overlap(p, q, ax=None, *, title: str | None = None, legend: bool = True):
    """Bars of p (target) and q (draft) with their overlap min(p, q) shaded (ch. 3, eq. alpha).

    The shaded area is α = Σ min(p, q); the two unshaded slivers each have area TV(p, q).
    Returns the figure.
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    fig, ax = axes_or_new(ax)
    x = np.arange(p.size)
    overlap = np.minimum(p, q)
    ax.bar(x, overlap, width=0.8, color=PALETTE["overlap"], alpha=0.45, hatch="//",
           edgecolor=PALETTE["overlap"], linewidth=0, label="min(p, q): overlap α")
    ax.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[p, p[-1]], where="post",
            color=PALETTE["target"], lw=2, ls="-", label="p (target)")
    ax.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[q, q[-1]], where="post",
            color=PALETTE["draft"], lw=2, ls="--", label="q (draft)")
    ax.set_xlabel("token x")
    ax.set_ylabel("probability")
    ax.set_xticks(x)
    a = acceptance_probability(p, q)
    ax.set_title(title if title is not None else f"α = Σ min(p, q) = {a:.3f},  TV = {1 - a:.3f}")
    if legend:
        ax.legend(frameon=False, fontsize="small")
    return fig


def plot_event_gaps(p, q, ax=None):
    """P(A) − Q(A) for every event A of a small vocabulary, sorted; the top one is TV (ch. 3)."""
    events, gaps = event_gaps(p, q)
    fig, ax = axes_or_new(ax)
    order = np.argsort(gaps)
    ax.plot(np.arange(gaps.size), gaps[order], color=PALETTE["grey"], lw=1.5, ls="-",
            label="P(A) − Q(A), all events, sorted")
    tv = tv_distance(p, q)
    ax.axhline(tv, color=PALETTE["target"], ls="--", lw=1.5, label=f"TV(p, q) = {tv:.3f}")
    ax.axhline(-tv, color=PALETTE["draft"], ls=":", lw=1.5, label="−TV(p, q)")
    ax.plot([gaps.size - 1], [gaps[order[-1]]], marker="o", color=PALETTE["target"], ms=8,
            ls="none", label="A = {p > q}")
    ax.set_xlabel(f"event rank (all {gaps.size} events)")
    ax.set_ylabel("P(A) − Q(A)")
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(0.0, 0.9))
    return fig


def plot_alpha_vs_weight(p, q, ax=None, *, n: int = 41, mark: float | None = None):
    """α and TV of the draft mixed toward the target, (1 − w)·q + w·p, against w (ch. 3)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    fig, ax = axes_or_new(ax)
    w = np.linspace(0.0, 1.0, n)
    drafts = mix(p, q, w[:, None])
    alpha = acceptance_probability(np.broadcast_to(p, drafts.shape), drafts)
    ax.plot(w, alpha, color=PALETTE["overlap"], ls="-", lw=2, label="α(w)")
    ax.plot(w, 1 - alpha, color=PALETTE["residual"], ls="--", lw=2, label="TV(w) = 1 − α(w)")
    if mark is not None:
        a = acceptance_probability(p, mix(p, q, mark))
        ax.plot([mark, mark], [a, 1 - a], marker="o", ls="none", color=PALETTE["dark"],
                label=f"w = {mark:.2f}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("mixing weight w (0 = original draft, 1 = target)")
    ax.set_ylabel("probability")
    ax.legend(frameon=False, fontsize="small")
    return fig


def plot_alpha_vs_shift(shifts, temperatures, ax=None):
    """α of chapter 3's draft family against the shift, one line per draft temperature."""
    from ..tv import overlap_pair
    from .style import LINESTYLES, MARKERS

    fig, ax = axes_or_new(ax)
    shifts = np.asarray(shifts, dtype=float)
    for i, t in enumerate(temperatures):
        a = [acceptance_probability(*overlap_pair(s, t, 0.0)) for s in shifts]
        ax.plot(shifts, a, ls=LINESTYLES[i % len(LINESTYLES)], marker=MARKERS[i % len(MARKERS)],
                markevery=max(1, shifts.size // 8), label=f"draft temperature {t:g}")
    ax.set_xlabel("shift of the draft's bumps (tokens)")
    ax.set_ylabel("α = Σ min(p, q)")
    ax.set_ylim(0, 1.02)
    ax.legend(frameon=False, fontsize="small")
    return fig
