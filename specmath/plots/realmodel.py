"""Figures for chapter 7 (real models), drawn from the benchmark's JSON results.

:func:`load_results` reads ``book/results/realmodel_<device>.json`` written by
``benchmarks/realmodel.py`` (from the repository checkout, or from GitHub in Colab, where
the package is installed without the book). numpy and matplotlib only.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np

from ..speedup import (
    tokens_per_iteration_pmf,
)
from .style import LINESTYLES, MARKERS, PALETTE, new_axes

__all__ = ["load_results", "results_path", "plot_alpha_by_task", "plot_alpha_by_position",
           "plot_N_histogram", "plot_verification_cost", "plot_sweep", "plot_hf"]

_RAW = "https://raw.githubusercontent.com/specmath/specmath/main/book/results/"
TEMPS = [0.0, 0.3, 0.7, 1.0]
TASKS = ["code", "chat", "story"]


def results_path(device: str = "cpu") -> Path:
    """Where the committed results of a ``device`` ("cpu" or "gpu") run live in the repo."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu'; got {device!r}")
    return Path(__file__).resolve().parents[2] / "book" / "results" / f"realmodel_{device}.json"


def load_results(device: str = "cpu", *, download: bool = True) -> dict | None:
    """The recorded benchmark of ``device``, or None if none was recorded."""
    path = results_path(device)
    if path.is_file():
        return json.loads(path.read_text())
    if not download:
        return None
    try:  # Colab: the package is installed without book/
        with urllib.request.urlopen(_RAW + path.name, timeout=10) as f:
            return json.loads(f.read().decode())
    except OSError:
        return None


def _alpha(R, task, T, key):
    return R["alpha"]["runs"][f"{task}@{T}"][key]


def plot_alpha_by_task(R: dict):
    """α by task and temperature, both estimates: Σ min(p, q) and from accepted ÷ drafted."""
    fig, ax = new_axes(width=6.4, height=3.6)
    colours = [PALETTE["target"], PALETTE["draft"], PALETTE["overlap"]]
    for i, task in enumerate(TASKS):
        a1 = [_alpha(R, task, T, "alpha_sum_min") for T in TEMPS]
        a2 = [_alpha(R, task, T, "alpha_from_rate") for T in TEMPS]
        ax.plot(TEMPS, a1, color=colours[i], ls=LINESTYLES[0], marker=MARKERS[i],
                label=f"{task}: Σ min(p, q)")
        ax.plot(TEMPS, a2, color=colours[i], ls=LINESTYLES[1], marker=MARKERS[i], mfc="none",
                label=f"{task}: from accepted ÷ drafted")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("α")
    ax.set_xticks(TEMPS)
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    return fig


def plot_alpha_by_position(R: dict):
    """P(accept at draft position i | position i reached), pooled, with Σ min(p, q)."""
    pos = R["alpha"]["positions_all"]
    k = len(pos["reached"])
    i = np.arange(1, k + 1)
    rate = np.array([np.nan if v is None else v for v in pos["accept_given_reached"]])
    reached = np.array(pos["reached"], dtype=float)
    se = np.sqrt(np.clip(rate * (1 - rate), 0, None) / np.maximum(reached, 1))
    fig, ax = new_axes(width=5.6, height=3.4)
    ax.errorbar(i, rate, yerr=2 * se, color=PALETTE["target"], marker=MARKERS[0], capsize=3,
                label="accepted ÷ reached (± 2 s.e.)")
    ax.plot(i, pos["sum_min_by_position"], color=PALETTE["draft"], ls="--", marker=MARKERS[1],
            label="mean Σ min(p, q)")
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


def plot_verification_cost(R: dict):
    """V(k): the time of one target pass scoring k+1 tokens, in one-token steps: from the
    microbenchmark and, when recorded, from the passes inside the k sweep."""
    V = R["costs"]["V"]
    k = np.array([int(x) for x in V])
    v = np.array([V[str(x)] for x in k])
    fig, ax = new_axes(width=5.6, height=3.4)
    ax.plot(k, v, color=PALETTE["target"], marker=MARKERS[0], label="V(k), microbenchmark")
    if "costs_in_run" in R:
        v2 = np.array([R["costs_in_run"]["V"][str(x)] for x in k])
        ax.plot(k, v2, color=PALETTE["draft"], marker=MARKERS[1], ls="-.",
                label="V(k), inside the k sweep")
    ax.plot(k, np.ones_like(v), color=PALETTE["grey"], ls="--", label="one-step assumption")
    ax.plot(k, k + 1.0, color=PALETTE["residual"], ls=":", label="k + 1 separate steps")
    ax.set_xlabel("draft length k (the pass scores k + 1 tokens)")
    ax.set_ylabel("V(k), in target steps")
    ax.legend(fontsize=8)
    return fig


def plot_sweep(R: dict):
    """Measured speedup over k against both cost models."""
    S = R["sweep"]
    k = np.array(S["k"])
    fig, ax = new_axes(width=6.0, height=3.6)
    ax.plot(k, S["speedup_measured"], color=PALETTE["dark"], marker=MARKERS[0],
            label="measured")
    ax.plot(k, S["speedup_predicted_one_step"], color=PALETTE["target"], ls="--",
            marker=MARKERS[1], label="E[N] / (1 + k/c)")
    ax.plot(k, S["speedup_predicted_measured_V"], color=PALETTE["draft"], ls="-.",
            marker=MARKERS[2], label="E[N] / (k/c + V(k))")
    ax.axhline(1.0, color=PALETTE["grey"], lw=1)
    ax.set_xlabel("draft length k")
    ax.set_ylabel("speedup over plain decoding")
    ax.set_xticks(k)
    ax.legend(fontsize=8)
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
    """Σ over runs of (iterations of the run) × truncated geometric at the run's α, normalised."""
    k = R["alpha"]["k"]
    tot = np.zeros(k + 1)
    for run in R["alpha"]["runs"].values():
        it = run["positions"]["iterations"]
        if it:
            tot += it * tokens_per_iteration_pmf(run["alpha_sum_min"], k)
    return tot / tot.sum()
