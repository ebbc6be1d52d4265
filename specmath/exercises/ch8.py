"""Exercise answers for chapter 8 (computed, never typed)."""

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import tv_distance
from ..engines import (
    greedy_draft_acceptance,
    lenient_acceptance,
    lenient_output_distribution,
    mean_tokens_from_metric,
    mismatched_output_distribution,
)
from ..speedup import alpha_from_mean_tokens
from . import register

#: Parameters the chapter's exercises use (the notebook reads them from here too).
EX1_P = (0.5, 0.3, 0.2)
EX1_Q = (0.2, 0.5, 0.3)
EX2_P = (0.5, 0.3, 0.2)
EX2_Q = (0.2, 0.5, 0.3)
EX3_P = (0.5, 0.3, 0.2)
EX3_Q = (0.2, 0.5, 0.3)
EX4_P = (0.5, 0.3, 0.2)
EX4_Q = (0.2, 0.5, 0.3)
EX4_BETA = 0.9
EX5_VLLM_RATE, EX5_VLLM_K = 0.55, 3
EX5_SGLANG_LEN, EX5_SGLANG_K = 2.9, 4


def _ex1():
    return np.array([greedy_draft_acceptance(EX1_P, EX1_Q),
                     acceptance_probability(EX1_P, EX1_Q)])


def _ex2():
    # one-hot verification of a *sampled* draft accepts with Σ_x q(x) p(x)
    return float(np.dot(EX2_P, EX2_Q))


def _ex3():
    q = np.asarray(EX3_Q)
    onehot = np.eye(q.size)[int(np.argmax(q))]
    return float(tv_distance(mismatched_output_distribution(EX3_P, onehot, q), EX3_P))


def _ex4():
    # β(l) = Σ min(q, p/l) is continuous and non-increasing in l: bisect for β(l) = EX4_BETA
    lo, hi = 1e-9, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if lenient_acceptance(EX4_P, EX4_Q, mid) >= EX4_BETA:
            lo = mid
        else:
            hi = mid
    l = lo
    return np.array([l, tv_distance(lenient_output_distribution(EX4_P, EX4_Q, l), EX4_P)])


def _ex5():
    en1 = mean_tokens_from_metric(EX5_VLLM_RATE, "vllm_draft_acceptance_rate", EX5_VLLM_K)
    en2 = mean_tokens_from_metric(EX5_SGLANG_LEN, "mean_acceptance_length", EX5_SGLANG_K)
    return np.array([alpha_from_mean_tokens(en1, EX5_VLLM_K),
                     alpha_from_mean_tokens(en2, EX5_SGLANG_K)])


register("ch8-ex1", _ex1, hint=("One rule looks only at the draft's top token; the other at the overlap "
              "of the whole distributions."))
register("ch8-ex2", _ex2, hint=("With which probability does a one-hot test accept a given token? Then "
              "average over the draft."))
register("ch8-ex3", _ex3, hint=("Split the output into the accepted top token and what the residual "
              "emits after a rejection."))
register("ch8-ex4", _ex4, hint=("The lenient acceptance is piecewise simple in l: find the piece that "
              "reaches the stated β."))
register("ch8-ex5", _ex5, hint=("Turn each engine's metric into tokens per iteration first, then invert "
              "the chapter's formula for α."))
