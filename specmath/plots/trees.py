"""Figures for chapter 10 (many drafts and trees)."""

from __future__ import annotations

import numpy as np

from ..multidraft import MAX_TUPLES, multidraft_acceptance, multidraft_ot_ceiling
from ..trees import (
    best_tree_values,
    chain_tree,
    kary_tree,
    tree_depths,
    tree_expected_accepted,
)
from .style import LINESTYLES, MARKERS, PALETTE, axes_or_new

__all__ = ["plot_multidraft", "plot_tree_budget", "draw_tree"]


def plot_multidraft(p, q, ms=(1, 2, 3, 4), ax=None, *, ceiling_max_m: int = 4):
    """P(some candidate kept) against m: recursive rejection with and without replacement
    and the optimal-transport ceiling for i.i.d. candidates (ch. 10, eqs. multi-accept, ot-lp)."""
    fig, ax = axes_or_new(ax)
    ms = np.asarray(ms)
    V = np.asarray(p).shape[-1]
    rec = [multidraft_acceptance(p, q, int(m)) for m in ms]
    ax.plot(ms, rec, marker=MARKERS[0], color=PALETTE["target"], lw=1.8,
            label="recursive rejection, i.i.d. candidates")
    mw = ms[(ms <= V) & (float(V) ** ms <= MAX_TUPLES)]  # exact enumeration's limit
    wo = [multidraft_acceptance(p, q, int(m), replacement=False) for m in mw]
    ax.plot(mw, wo, marker=MARKERS[1], ls=LINESTYLES[1], color=PALETTE["overlap"], lw=1.8,
            label="recursive rejection, without replacement")
    mc = ms[ms <= ceiling_max_m]
    ot = [multidraft_ot_ceiling(p, q, int(m)) for m in mc]
    ax.plot(mc, ot, marker=MARKERS[2], ls=LINESTYLES[2], color=PALETTE["residual"], lw=1.8,
            label="optimal-transport ceiling, i.i.d. candidates")
    ax.set_xticks(ms)
    ax.set_xlabel("candidates at the position, m")
    ax.set_ylabel("P(some candidate is kept)")
    ax.set_ylim(0, 1.02)
    ax.legend(frameon=False, fontsize="small", loc="lower right")
    return fig


def plot_tree_budget(acceptance, n_max: int = 40, ax=None, *, karies=(2, 3, 4)):
    """Best tree of n nodes (DP) against the chain and full k-ary trees: E[N] against n.

    ``acceptance`` with R ranks allows at most R children per node; pass ``n_max`` ranks
    for the best tree without that cap (ch. 10, fig. budget)."""
    fig, ax = axes_or_new(ax)
    ns = np.arange(0, n_max + 1)
    best = best_tree_values(acceptance, n_max)
    ax.plot(ns, best + 1, color=PALETTE["target"], lw=2.0, label="best tree (dynamic programme)")
    chain = [tree_expected_accepted(chain_tree(n), acceptance) + 1 for n in ns]
    ax.plot(ns, chain, color=PALETTE["draft"], ls=LINESTYLES[1], lw=1.8, label="chain")
    for i, k in enumerate(karies):
        pts = []
        for d in range(1, 12):
            t = kary_tree(k, d)
            if t.size > n_max:
                break
            pts.append((t.size, tree_expected_accepted(t, acceptance) + 1))
        if pts:
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, marker=MARKERS[(i + 1) % len(MARKERS)], ls=":", lw=1.0,
                    color=[PALETTE["overlap"], PALETTE["residual"], PALETTE["accent"]][i % 3],
                    label=f"full {k}-ary trees")
    ax.set_xlabel("tree size n (tokens the target scores in one pass)")
    ax.set_ylabel("E[N], tokens per iteration")
    ax.legend(frameon=False, fontsize="small", loc="lower right")
    return fig


def draw_tree(parents, ax=None, *, labels=None):
    """Draw a draft tree: the root (the context) on the left, depth to the right."""
    fig, ax = axes_or_new(ax)
    par = np.asarray(parents, dtype=np.int64)
    depth = tree_depths(par) if par.size else np.zeros(0, dtype=np.int64)
    kids: dict[int, list[int]] = {}
    for i, u in enumerate(par):
        kids.setdefault(int(u), []).append(i)
    y: dict[int, float] = {}
    nxt = [0.0]

    def place(u: int) -> float:
        ch = kids.get(u, [])
        if not ch:
            y[u] = nxt[0]
            nxt[0] += 1
            return y[u]
        ys = [place(c) for c in ch]
        y[u] = float(np.mean(ys))
        return y[u]

    place(-1)
    xs = {-1: 0}
    xs.update({i: int(depth[i]) for i in range(par.size)})
    for i, u in enumerate(par):
        ax.plot([xs[int(u)], xs[i]], [-y[int(u)], -y[i]], color=PALETTE["grey"], lw=1.2,
                zorder=1)
    ax.scatter([0], [-y[-1]], s=120, color=PALETTE["dark"], zorder=2, label="context")
    if par.size:
        ax.scatter([xs[i] for i in range(par.size)], [-y[i] for i in range(par.size)], s=80,
                   color=PALETTE["target"], zorder=2, label="draft node")
        if labels is not None:
            for i in range(par.size):
                ax.annotate(str(labels[i]), (xs[i], -y[i]), textcoords="offset points",
                            xytext=(6, 4), fontsize="small")
    ax.set_xlabel("depth (position after the context)")
    ax.set_yticks([])
    ax.set_xticks(range(int(depth.max(initial=0)) + 1))
    ax.legend(frameon=False, fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=2)
    return fig
