"""Figures for chapter 9 (block verification): accepted drafts by rule, and the real pair."""

from __future__ import annotations

import numpy as np

from ..block import accepted_length_pmf, accepted_upper_bound
from .style import MARKERS, PALETTE, axes_or_new

__all__ = ["plot_accepted_by_k", "plot_realmodel_gain"]


def plot_accepted_by_k(target, draft, ks=(1, 2, 3, 4), context=(), ax=None):
    """Exact E[τ] against k: token-wise, block, and the ceiling Σ min(P, Q) (ch. 9).

    Returns the figure; the three curves are computed by exact enumeration
    (:func:`specmath.block.accepted_length_pmf`, :func:`specmath.block.accepted_upper_bound`).
    """
    fig, ax = axes_or_new(ax)
    ks = [int(k) for k in ks]
    rows = {"token-wise": [], "block": [], "ceiling Σ min(P, Q)": []}
    for k in ks:
        for rule, key in (("tokenwise", "token-wise"), ("block", "block")):
            pmf = accepted_length_pmf(target, draft, k, rule=rule, context=context)
            rows[key].append(float(np.arange(k + 1) @ pmf))
        rows["ceiling Σ min(P, Q)"].append(accepted_upper_bound(target, draft, k,
                                                                context=context))
    colors = (PALETTE["draft"], PALETTE["target"], PALETTE["dark"])
    styles = ("--", "-", ":")
    for (label, ys), c, ls, m in zip(rows.items(), colors, styles, MARKERS, strict=False):
        ax.plot(ks, ys, ls=ls, marker=m, color=c, label=label)
    ax.set_xticks(ks)
    ax.set_xlabel("draft length k")
    ax.set_ylabel("expected accepted drafts E[τ]")
    ax.legend(frameon=False, fontsize="small")
    return fig


def plot_realmodel_gain(summary: dict, ax=None, *, per_prompt: dict | None = None):
    """Prefix-conditional gain in E[ℓ] of block over token-wise on the real pair, by draft
    length k' ≤ k (ch. 9; block_cpu.json): bars are the means over prompts; with
    ``per_prompt`` (the file's ``summary["per_prompt"]``) one dot per prompt, no interval
    (a handful of prompts supports no stated coverage level)."""
    fig, ax = axes_or_new(ax)
    g = np.asarray(summary["exact_gain_by_k"], dtype=float)
    ks = np.arange(1, g.size + 1)
    ax.bar(ks, g, width=0.6, color=PALETTE["target"], alpha=0.5, edgecolor=PALETTE["target"],
           label="block − token-wise, mean over prompts")
    if per_prompt:
        pts = np.array([row["exact_gain_by_k"] for row in per_prompt.values()], dtype=float)
        if pts.ndim != 2 or pts.shape[1] != g.size:
            raise ValueError("per_prompt rows must have exact_gain_by_k of the summary's length")
        jitter = np.linspace(-0.18, 0.18, pts.shape[0])
        for j, row in enumerate(pts):
            ax.plot(ks + jitter[j], row, "o", ms=3, color=PALETTE["dark"],
                    label="one prompt" if j == 0 else None)
    ax.set_xticks(ks)
    ax.set_xlabel("draft length k′")
    ax.set_ylabel("gain in accepted drafts per iteration")
    ax.legend(frameon=False, fontsize="small")
    return fig
