"""Figures of chapter 11 (speculation in a serving system)."""

from __future__ import annotations

import numpy as np

from .. import costmodel as cm
from ..batching import batch_speedup, best_k_for_batch
from ..serving import iteration_cost, iterations_to_n_pmf, renewal_normal_approx
from .style import LINESTYLES, MARKERS, PALETTE, new_axes

__all__ = ["plot_latency_distribution", "plot_batch_speedup", "plot_adaptive", "plot_ttft"]


def plot_latency_distribution(alpha: float, k: int, c: float, n: int, samples=None, ax=None):
    """Exact law of the time to n tokens (bars), its normal approximation, plain decoding."""
    if ax is None:
        fig, ax = new_axes(width=6.5, height=3.6)
    else:
        fig = ax.figure
    pm = iterations_to_n_pmf(alpha, k, n)
    tau = float(iteration_cost(k, c))
    m = np.arange(pm.size)
    keep = pm > 1e-6
    ax.bar(m[keep] * tau, pm[keep], width=0.8 * tau, color=PALETTE["target"], alpha=0.55,
           label="exact law of M(n)·τ")
    mu, var = renewal_normal_approx(alpha, k, n)
    x = np.linspace((m[keep].min() - 1) * tau, (m[keep].max() + 1) * tau, 400)
    dens = np.exp(-((x / tau - mu) ** 2) / (2 * var)) / np.sqrt(2 * np.pi * var)
    ax.plot(x, dens, color=PALETTE["dark"], ls="--", lw=1.5, label="renewal CLT")
    if samples is not None:
        vals, cnt = np.unique(np.asarray(samples), return_counts=True)
        ax.plot(vals, cnt / cnt.sum(), ls="none", marker="o", ms=4, color=PALETTE["draft"],
                label="simulated")
    ax.axvline(n, color=PALETTE["residual"], ls=":", lw=2, label="plain decoding (n steps)")
    ax.set_xlabel("time to emit n tokens (target steps)")
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    return fig


def plot_batch_speedup(alpha: float, target, draft, Bs=None, ks=(1, 3, 5, 8),
                       hardware=cm.H100_SXM, context: int = 0, ax=None):
    """Speedup against batch size for several k, and the best k (second axis)."""
    if ax is None:
        fig, ax = new_axes(width=6.5, height=3.8)
    else:
        fig = ax.figure
    Bs = np.unique(np.round(np.logspace(0, 10, 200, base=2)).astype(int)) if Bs is None else Bs
    for i, k in enumerate(ks):
        ax.plot(Bs, batch_speedup(alpha, k, Bs, target, draft, hardware, context),
                color=list(PALETTE.values())[i % 5], ls=LINESTYLES[i % 4], lw=2,
                label=f"k = {k}")
    kb = best_k_for_batch(alpha, Bs, target, draft, hardware, context)
    ax.plot(Bs, batch_speedup(alpha, kb, Bs, target, draft, hardware, context),
            color=PALETTE["grey"], lw=4, alpha=0.4, label="best k at each B")
    ax.axhline(1, color=PALETTE["dark"], lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("speedup over plain decoding at B")
    ax.set_title(f"{hardware.name}, α = {alpha:g}, context {context}", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    return fig


def plot_adaptive(names, points, intervals, ax=None,
                  interval_label: str = "95% bootstrap interval"):
    """Out-of-sample speedups of draft-length policies with intervals (ch. 11); chapter 11
    passes the range over the test prompts and ``interval_label`` saying so."""
    if ax is None:
        fig, ax = new_axes(width=6.5, height=3.4)
    else:
        fig = ax.figure
    y = np.arange(len(names))
    pts = np.asarray(points)
    iv = np.asarray(intervals)
    ax.errorbar(pts, y, xerr=[pts - iv[:, 0], iv[:, 1] - pts], ls="none",
                marker=MARKERS[1], color=PALETTE["target"], capsize=4)
    ax.set_yticks(y, names)
    ax.axvline(1, color=PALETTE["dark"], lw=1)
    ax.set_xlabel(f"speedup over plain decoding on the test prompts ({interval_label})")
    return fig


def plot_ttft(phis, ttft_plain, ttft_spec, sim_phi=None, sim_plain=None, sim_spec=None,
              label_spec="speculative", ax=None):
    """Mean time to first token against the plain utilisation (ch. 11, eq. ch11-pk).

    ``sim_plain`` and ``sim_spec`` are (mean, standard error) of simulated TTFTs at
    ``sim_phi``, drawn with two-standard-error bars.
    """
    if ax is None:
        fig, ax = new_axes(width=6.5, height=3.6)
    else:
        fig = ax.figure
    ax.plot(phis, ttft_plain, color=PALETTE["target"], label="plain decoding")
    ax.plot(phis, ttft_spec, color=PALETTE["draft"], ls=LINESTYLES[1], label=label_spec)
    for sim, col, mk in ((sim_plain, PALETTE["target"], MARKERS[0]),
                         (sim_spec, PALETTE["draft"], MARKERS[1])):
        if sim is not None:
            ax.errorbar([sim_phi], [sim[0]], yerr=[2 * sim[1]], fmt=mk, color=col,
                        capsize=3)
    ax.set_yscale("log")
    ax.set_xlabel("utilisation of the plain server, φ_p")
    ax.set_ylabel("mean TTFT (target steps)")
    ax.legend(fontsize=8)
    return fig
