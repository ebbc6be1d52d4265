"""Exercise answers for chapter 4 (computed, never typed)."""

import numpy as np

from ..markov_tokens import expected_tokens_markov
from ..speedup import (
    alpha_from_acceptance_rate,
    expected_tokens,
    tokens_per_iteration_pmf,
)
from . import register

#: Parameters the chapter's exercises use (the notebook reads them from here too).
EX1_ALPHAS = (0.7, 0.8)
EX1_K = 6     # not the body's k = 5, whose E[N] at α = 0.8 the chapter prints (R6b 12)
EX2_ALPHA, EX2_K = 0.8, 5
# ch4-ex3: the same draft's dashboard reading at two draft lengths (k = 2, then k = 4)
EX3_RATES, EX3_KS = (0.7, 0.6), (2, 4)
EX4_ALPHA, EX4_FRACTION = 0.9, 0.95
EX5_ALPHA, EX5_K = 0.6, 3
EX6_V, EX6_CLOSENESS, EX6_SEED, EX6_K = 5, 0.5, 2, 3


def _ex1():
    return np.array([expected_tokens(a, EX1_K) for a in EX1_ALPHAS])


def _ex2():
    # Var(N) = E[N²] − E[N]², from the pmf.
    pmf = tokens_per_iteration_pmf(EX2_ALPHA, EX2_K)
    n = np.arange(1, EX2_K + 2)
    return float(pmf @ n**2 - (pmf @ n) ** 2)


def _ex3():
    # [α implied by the k = 2 reading, α implied by the k = 4 reading, τ at k = 4]
    a1, a2 = (alpha_from_acceptance_rate(r, k) for r, k in zip(EX3_RATES, EX3_KS, strict=True))
    return np.array([a1, a2, expected_tokens(a2, EX3_KS[1])])


def _ex4():
    limit = 1.0 / (1.0 - EX4_ALPHA)
    k = 0
    while expected_tokens(EX4_ALPHA, k) < EX4_FRACTION * limit:
        k += 1
    return k


def _ex5():
    # share of emitted tokens that come from full iterations: (k + 1) α^k / E[N]
    full = float(tokens_per_iteration_pmf(EX5_ALPHA, EX5_K)[-1])
    return (EX5_K + 1) * full / float(expected_tokens(EX5_ALPHA, EX5_K))


def _ex6():
    from ..toy import toy_pair

    target, draft = toy_pair(EX6_V, EX6_CLOSENESS, seed=EX6_SEED)
    return expected_tokens_markov(target, draft, EX6_K)


register("ch4-ex1", _ex1, hint=("Which closed form of this chapter gives the mean tokens per iteration? "
              "Use it at both α."))
register("ch4-ex2", _ex2, hint=("The tail-sum trick of the chapter works for the second moment too; "
              "then take the variance."))
register("ch4-ex3", _ex3, hint=("At the shorter draft the rate is a quadratic in α: keep its root in "
              "[0, 1]. At the longer one, bracket α and halve the bracket. For τ, count "
              "the tokens an iteration emits: what does the rate fix without α?"))
register("ch4-ex4", _ex4, rtol=0.0, atol=0.0,
         hint=("The gap between the mean at draft length k and its ceiling 1/(1 − α) "
               "is a power of α divided by 1 − α. Require it to be at most (1 − f)/(1 − α), "
               "take logarithms (ln α < 0 turns the inequality round) and round up."))
register("ch4-ex5", _ex5, hint=("Count tokens, not iterations: over many iterations, how many tokens "
              "do the full ones emit, and how many do all of them emit?"))
register("ch4-ex6", _ex6, hint=("Build the kernel between starting states first; its stationary law "
              "then weights the per-state means."))
