"""Figures for chapter 7 (real models), drawn from the benchmark's JSON results.

:func:`load_results` reads ``realmodel_<device>.json`` written by ``benchmarks/realmodel.py``
and shipped with the package (:func:`specmath.notebook.load_result`; no network). numpy and
matplotlib only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..notebook import load_result, result_path
from ..speedup import (
    tokens_per_iteration_pmf,
)
from .style import LINESTYLES, MARKERS, PALETTE, new_axes

__all__ = ["load_results", "results_path", "plot_alpha_same_contexts", "plot_alpha_by_position",
           "plot_N_histogram", "plot_verification_cost", "plot_sweep", "plot_hf", "mixture_pmf"]

TEMPS = [0.0, 0.3, 0.7, 1.0]
TASKS = ["code", "chat", "story"]


def results_path(device: str = "cpu") -> Path:
    """Where the recorded results of a ``device`` ("cpu" or "gpu") run live (package data)."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu'; got {device!r}")
    return result_path(f"realmodel_{device}.json")


def load_results(device: str = "cpu") -> dict:
    """The recorded benchmark of ``device``; ``FileNotFoundError`` naming the file and how
    to get it when none was recorded (test first with
    ``specmath.notebook.has_result("realmodel_gpu.json")`` for the optional GPU run)."""
    results_path(device)  # validates device
    return load_result(f"realmodel_{device}.json")


def _alpha(R, task, T, key):
    return R["alpha"]["runs"][f"{task}@{T}"][key]


def plot_alpha_same_contexts(temps, by_task: dict):
    """α against temperature on the same contexts (the traces): for each task, the mean
    over positions of Σ min(p^T, q^T) (T = 0: argmax agreement), on the target's greedy
    texts (solid) and on its T = 1 texts (dashed). ``by_task[task] = (greedy, sampled)``,
    two sequences of α, one per temperature."""
    fig, ax = new_axes(width=6.4, height=3.6)
    colours = [PALETTE["target"], PALETTE["draft"], PALETTE["overlap"], PALETTE["residual"]]
    for i, (task, (g, s)) in enumerate(by_task.items()):
        col = colours[i % len(colours)]
        ax.plot(temps, g, color=col, ls=LINESTYLES[0], marker=MARKERS[i],
                label=f"{task}: greedy texts")
        ax.plot(temps, s, color=col, ls=LINESTYLES[1], marker=MARKERS[i], mfc="none",
                label=f"{task}: T = 1 texts")
    ax.set_xlabel("temperature T of both models")
    ax.set_ylabel("mean α over positions")
    ax.set_xticks(temps)
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    return fig


def plot_alpha_by_position(rate, reached, survivorship=None, summin_reached=None):
    """Pooled P(accept at draft position i | reached i) with ± 2 s.e. bars, next to what
    survivorship alone predicts from each run's own α, and the mean Σ min(p, q) over the
    reached positions."""
    rate = np.asarray(rate, dtype=float)
    reached = np.asarray(reached, dtype=float)
    i = np.arange(1, rate.size + 1)
    se = np.sqrt(np.clip(rate * (1 - rate), 0, None) / np.maximum(reached, 1))
    fig, ax = new_axes(width=5.6, height=3.4)
    ax.errorbar(i, rate, yerr=2 * se, color=PALETTE["target"], marker=MARKERS[0], capsize=3,
                label="accepted ÷ reached, pooled (± 2 s.e.)")
    if survivorship is not None:
        ax.plot(i, survivorship, color=PALETTE["residual"], ls=":", marker=MARKERS[2],
                label="survivorship alone (each run's α)")
    if summin_reached is not None:
        ax.plot(i, summin_reached, color=PALETTE["draft"], ls="--", marker=MARKERS[1],
                label="mean Σ min(p, q), reached positions")
    ax.set_xticks(i)
    ax.set_xlabel("draft position i")
    ax.set_ylabel("acceptance")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc="lower left")
    return fig


def plot_N_histogram(counts, pmf_iid, pmf_mixture=None):
    """Observed share of iterations with N = n against the truncated geometric law(s)."""
    counts = np.asarray(counts, dtype=float)
    n = np.arange(1, len(counts) + 1)
    fig, ax = new_axes(width=5.6, height=3.4)
    ax.bar(n, counts / counts.sum(), color=PALETTE["grey"], alpha=0.6, label="measured")
    ax.plot(n, pmf_iid, color=PALETTE["target"], marker=MARKERS[0], ls="-",
            label="truncated geometric, pooled α")
    if pmf_mixture is not None:
        ax.plot(n, pmf_mixture, color=PALETTE["residual"], marker=MARKERS[2], ls="--",
                label="mixture over runs")
    ax.set_xlabel("tokens per iteration N")
    ax.set_ylabel("share of iterations")
    ax.set_xticks(n)
    ax.legend(fontsize=8)
    return fig


def plot_verification_cost(k, v, lo, hi, v_wall=None, v_matmul=None):
    """V(k), one target pass scoring k + 1 tokens in one-token passes: CPU-time medians
    with their order-statistic intervals, the wall-clock medians, and a bare matrix
    product with k + 1 rows, drawn next to the bounds 1 (the one-step assumption) and
    k + 1 (separate passes) that a correct CPU-time measurement respects."""
    k = np.asarray(k)
    v = np.asarray(v, dtype=float)
    fig, ax = new_axes(width=5.6, height=3.4)
    ax.errorbar(k, v, yerr=[v - np.asarray(lo), np.asarray(hi) - v], color=PALETTE["target"],
                marker=MARKERS[0], capsize=3, label="V(k), CPU time (interval)")
    if v_wall is not None:
        ax.plot(k, v_wall, color=PALETTE["grey"], marker=MARKERS[3], ls=LINESTYLES[1],
                label="V(k), wall clock")
    if v_matmul is not None:
        ax.plot(k, v_matmul, color=PALETTE["draft"], marker=MARKERS[1], ls="-.",
                label="one matrix product, k + 1 rows")
    ax.plot(k, np.ones(k.size), color=PALETTE["grey"], ls="--", label="one-step assumption")
    ax.plot(k, k + 1.0, color=PALETTE["residual"], ls=":", label="k + 1 separate passes")
    ax.set_xlabel("draft length k (the pass scores k + 1 tokens)")
    ax.set_ylabel("V(k), in target steps")
    ax.legend(fontsize=7)
    return fig


def plot_part_rates(names, ratio, lo, hi, whole_pass):
    """Chapter 7, where the draft loses speed: per part, the draft's GB per CPU second
    divided by the target's (median of the per-block ratios, with its order-statistic
    interval), beside the same ratio for the whole pass (c ÷ byte ratio) and one (no
    loss). Bars below one: the draft reads that part's bytes more slowly. The axis starts
    at zero, so bar lengths are in proportion to the ratios."""
    ratio, lo, hi = (np.asarray(x, dtype=float) for x in (ratio, lo, hi))
    y = np.arange(ratio.size)[::-1]
    fig, ax = new_axes(width=5.6, height=3.0)
    ax.barh(y, ratio, color=PALETTE["draft"], alpha=0.6)
    ax.errorbar(ratio, y, xerr=[ratio - lo, hi - ratio], fmt="none",
                ecolor=PALETTE["target"], capsize=3, label="interval of the median")
    ax.axvline(whole_pass, color=PALETTE["residual"], ls="--",
               label="whole pass (c ÷ byte ratio)")
    ax.axvline(1.0, color=PALETTE["grey"], ls=":", label="no loss")
    ax.set_yticks(y, list(names))
    ax.set_xlim(0.0, 1.02)   # from zero: bar lengths in proportion to the ratios
    ax.set_xlabel("draft GB per CPU second ÷ target's, paired per block")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    return fig


def plot_sweep(k, pred, pred_lo, pred_hi, one_step, measured=None, measured_pred=None):
    """Speedup against k: the prediction from exact N along each prompt's agreement string
    and the measured costs (median over prompts with an interval), chapter 5's one-step
    formula, and the timed runs (points) with their own predictions (crosses)."""
    k = np.asarray(k)
    fig, ax = new_axes(width=6.0, height=3.6)
    ax.fill_between(k, pred_lo, pred_hi, color=PALETTE["draft"], alpha=0.2, lw=0)
    ax.plot(k, pred, color=PALETTE["draft"], ls="-.", marker=MARKERS[2],
            label="exact N, measured V(k), c (median over prompts)")
    ax.plot(k, one_step, color=PALETTE["target"], ls="--", marker=MARKERS[1],
            label="E[N] / (1 + k/c)")
    for j, name in enumerate(measured or {}):
        kk, s = measured[name]
        ax.plot(kk, s, color=PALETTE["dark"], marker=MARKERS[j % len(MARKERS)], ls="",
                label=f"timed, {name}")
        if measured_pred is not None:
            ax.plot(kk, measured_pred[name], color=PALETTE["dark"], marker="x", ls="",
                    alpha=0.6)
    ax.axhline(1.0, color=PALETTE["grey"], lw=1)
    ax.set_xlabel("draft length k")
    ax.set_ylabel("speedup over plain decoding")
    ax.set_xticks(k)
    ax.legend(fontsize=7)
    return fig


def plot_hf(R: dict):
    """Tokens per second: our loops and Hugging Face generate, per task and mode."""
    runs = R["hf"]["runs"]
    keys = list(runs)
    series = [("ours_autoregressive", "ours, plain"), ("ours_speculative", "ours, speculative"),
              ("hf_plain", "HF generate"), ("hf_assisted", "HF assisted")]
    colours = [PALETTE["grey"], PALETTE["target"], PALETTE["overlap"], PALETTE["draft"]]
    hatches = ["", "//", "..", "xx"]
    x = np.arange(len(keys))
    w = 0.2
    fig, ax = new_axes(width=6.4, height=3.6)
    for j, ((key, label), col, h) in enumerate(zip(series, colours, hatches, strict=True)):
        ax.bar(x + (j - 1.5) * w, [runs[t][key]["tokens_per_s"] for t in keys], w, color=col,
               hatch=h, edgecolor="black", lw=0.5, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([t.replace("@0.0", ", greedy").replace("@1.0", ", T = 1") for t in keys])
    ax.set_ylabel("tokens per second")
    ax.legend(fontsize=8, ncol=2)
    return fig


def mixture_pmf(R: dict) -> np.ndarray:
    """Σ over runs of (iterations of the run) × truncated geometric at the run's α
    (Σ min over reached positions), normalised."""
    k = R["alpha"]["k"]
    tot = np.zeros(k + 1)
    for run in R["alpha"]["runs"].values():
        it = run["positions"]["iterations"]
        if it:
            tot += it * tokens_per_iteration_pmf(run["alpha_sum_min_reached"], k)
    return tot / tot.sum()
