"""Figures for chapters 0 and 2: target and draft side by side, what each verification rule
emits, and the decomposition behind the exactness proof."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..acceptance import (
    NAIVE_RULES,
    acceptance_probability,
    naive_output_distribution,
    output_distribution,
    residual_distribution,
)
from ..distributions import mix, tv_distance
from .style import PALETTE, new_axes

__all__ = ["RULE_LABELS", "rule_output", "pq_figure", "rule_outputs_figure",
           "decomposition_figure", "bias_figure"]

#: Human-readable names of the verification rules compared in chapter 2.
RULE_LABELS = {
    "exact": "min(1, p/q), resample residual",
    "always-accept": "always accept",
    "accept-if-top": "accept if top token of p",
    "resample-from-p": "min(1, p/q), resample from p",
}
_HATCHES = {"exact": "", "always-accept": "//", "accept-if-top": "xx", "resample-from-p": ".."}
_COLOURS = {"exact": PALETTE["target"], "always-accept": PALETTE["draft"],
            "accept-if-top": PALETTE["accent"], "resample-from-p": PALETTE["grey"]}


def rule_output(p, q, rule: str) -> np.ndarray:
    """Exact output distribution of one position under ``rule`` ("exact" or a naive rule)."""
    if rule == "exact":
        return output_distribution(p, q)
    if rule in NAIVE_RULES:
        return naive_output_distribution(p, q, rule)
    raise ValueError(f"rule must be 'exact' or one of {NAIVE_RULES}; got {rule!r}")


def _labels(labels, V):
    return [str(i) for i in range(V)] if labels is None else list(labels)


def pq_figure(p, q, labels: Sequence[str] | None = None, show_overlap: bool = True):
    """Target p and draft q as side-by-side bars, with the shared mass min(p, q) shaded."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    x = np.arange(p.size)
    fig, ax = new_axes()
    w = 0.38
    ax.bar(x - w / 2, p, w, color=PALETTE["target"], label="target p", edgecolor="black")
    ax.bar(x + w / 2, q, w, color=PALETTE["draft"], label="draft q", edgecolor="black",
           hatch="//")
    if show_overlap:
        m = np.minimum(p, q)
        ax.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[m, m[-1]], where="post",
                color=PALETTE["overlap"], lw=2.2,
                label=f"min(p, q): shared mass α = {acceptance_probability(p, q):.2f}")
    ax.set_xticks(x, _labels(labels, p.size))
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    return fig


def rule_outputs_figure(p, q, rules: Sequence[str] = ("exact", "always-accept", "accept-if-top"),
                        labels: Sequence[str] | None = None, title: str | None = None):
    """Grouped bars: the target p (outlined) and the output distribution of each rule.

    Each rule's legend entry carries its bias TV(output, p).
    """
    p, q = np.asarray(p, float), np.asarray(q, float)
    x = np.arange(p.size)
    fig, ax = new_axes(width=6.6)
    n = len(rules)
    w = 0.8 / n
    for i, r in enumerate(rules):
        out = rule_output(p, q, r)
        ax.bar(x - 0.4 + (i + 0.5) * w, out, w, color=_COLOURS.get(r, PALETTE["grey"]),
               hatch=_HATCHES.get(r, ""), edgecolor="black", lw=0.6,
               label=f"{RULE_LABELS.get(r, r)}: TV to p = {tv_distance(out, p):.3f}")
    ax.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[p, p[-1]], where="post", color="black",
            lw=2.0, label="target p")
    ax.set_xticks(x, _labels(labels, p.size))
    ax.set_ylabel("probability of emitting the token")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7.5)
    return fig


def decomposition_figure(p, q, labels: Sequence[str] | None = None):
    """The proof in one picture: accepted mass min(p, q) stacked under the rejection mass
    (1 − α)·residual, which together rebuild p exactly."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    x = np.arange(p.size)
    alpha = acceptance_probability(p, q)
    acc = np.minimum(p, q)
    rej = (1 - alpha) * residual_distribution(p, q)
    fig, ax = new_axes()
    ax.bar(x, acc, 0.6, color=PALETTE["overlap"], edgecolor="black",
           label="drafted and accepted: min(p, q)")
    ax.bar(x, rej, 0.6, bottom=acc, color=PALETTE["residual"], edgecolor="black", hatch="//",
           label="rejected, then resampled: (1 − α)·residual")
    ax.plot(x, p, "D", ms=9, mfc="none", mec="black", mew=1.8, label="target p")
    ax.plot(x, q, "v", ms=8, color=PALETTE["draft"], mec="black", label="draft q")
    ax.set_xticks(x, _labels(labels, p.size))
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    return fig


def bias_figure(p, q0, closeness=None,
                rules: Sequence[str] = ("exact", "always-accept", "accept-if-top",
                                        "resample-from-p")):
    """Bias TV(output, p) of each rule as the draft q = mix(p, q0, w) moves toward p."""
    w = np.linspace(0, 1, 101) if closeness is None else np.asarray(closeness, float)
    p, q0 = np.asarray(p, float), np.asarray(q0, float)
    qs = mix(p, q0, w[:, None])
    fig, ax = new_axes()
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D"]
    for i, r in enumerate(rules):
        pp = np.broadcast_to(p, qs.shape)
        tv = np.asarray(tv_distance(rule_output(pp, qs, r), pp))
        ax.plot(w, tv, color=_COLOURS.get(r, PALETTE["grey"]), ls=styles[i % 4],
                marker=markers[i % 4], markevery=max(len(w) // 8, 1), lw=2,
                label=RULE_LABELS.get(r, r))
    ax.set_xlabel("closeness w of the draft to the target (q = w·p + (1 − w)·q₀)")
    ax.set_ylabel("bias: TV(output, p)")
    ax.legend(fontsize=8)
    return fig
