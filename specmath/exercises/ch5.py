"""Exercise answers for chapter 5 (computed, never typed).

``PARAMS`` holds each exercise's inputs; the chapter glues them into the exercise text, so
the text and the checker can never disagree.
"""

from __future__ import annotations

import numpy as np

from ..speedup import optimal_k, optimal_k_continuous, speedup, tokens_per_iteration_pmf
from . import register

PARAMS = {
    "ch5-ex1": {"c": 3.0},
    "ch5-ex2": {"alpha": 0.85, "c": 20.0},
    "ch5-ex3": {"alpha": 0.7, "k": 4},
    "ch5-ex4": {"c": 10.0, "k_low": 4},
    "ch5-ex5": {"c": 10.0, "target_speedup": 3.0},
    "ch5-ex6": {"alpha": 0.75, "cs": [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]},
    "ch5-ex7": {"alpha": 0.75, "k": 4, "c": 8.0, "sigma": 0.75, "n": 10_000},
}

K_MAX = 64


def _bisect(f, lo: float, hi: float, iters: int = 80) -> float:
    """Root of an increasing function f on [lo, hi] by bisection."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def breakeven_alpha(c: float) -> float:
    """Smallest α at which some draft length beats plain decoding: S(1) > 1 ⟺ α > 1/c."""
    return 1.0 / c


def breakeven_alpha_two(c: float) -> float:
    """α above which drafting k = 2 tokens pays: S(α, 2, c) > 1 ⟺ α + α² > 2/c ⟺
    α > (√(1 + 8/c) − 1)/2 (chapter 5, exercise 1)."""
    return float((np.sqrt(1 + 8 / c) - 1) / 2)


def best_k_and_speedup(alpha: float, c: float) -> np.ndarray:
    """[κ*, S(κ*), best integer k, S(k)]: the continuous and the integer optimum."""
    x = float(optimal_k_continuous(alpha, c))
    s_x = (1 - alpha ** (x + 1)) / ((1 - alpha) * (1 + x / c))
    k = int(optimal_k(alpha, c, k_max=K_MAX))
    return np.array([x, s_x, k, speedup(alpha, k, c)], dtype=float)


def longer_draft_threshold(alpha: float, k: int) -> float:
    """The c above which drafting k + 1 tokens beats drafting k (chapter 5, exercise 3):
    S(k+1) > S(k) ⟺ c > c_k = (1 + α + … + α^k)/α^{k+1} − k."""
    return float(sum(alpha ** j for j in range(k + 1)) / alpha ** (k + 1) - k)


def optimal_c_range(alpha: float, k: int) -> np.ndarray:
    """[c_{k−1}, c_k]: the range of c over which k is the best draft length."""
    return np.array([longer_draft_threshold(alpha, k - 1),
                     longer_draft_threshold(alpha, k)], dtype=float)


def indifference_alpha(c: float, k_low: int) -> float:
    """The α at which S(k_low) = S(k_low + 1) (above it the longer draft wins)."""
    return _bisect(lambda a: speedup(a, k_low + 1, c) - speedup(a, k_low, c), 1e-9, 1 - 1e-12)


def alpha_for_best_speedup(c: float, target_speedup: float) -> float:
    """Smallest α whose best-k speedup reaches ``target_speedup`` at this c."""
    def best(a):
        return speedup(a, optimal_k(a, c, k_max=K_MAX), c)
    return _bisect(lambda a: best(a) - target_speedup, 0.0, 1 - 1e-12)


register("ch5-ex1", lambda: breakeven_alpha_two(**PARAMS["ch5-ex1"]),
         hint=("For two drafted tokens, write the break-even condition as a quadratic "
               "inequality in α and keep its root in [0, 1]."))
register("ch5-ex2", lambda: best_k_and_speedup(**PARAMS["ch5-ex2"]),
         hint=("The chapter's Lambert-W form gives the continuous optimum; the best "
              "integer is one of its neighbours."))
register("ch5-ex3", lambda: optimal_c_range(**PARAMS["ch5-ex3"]),
         hint=("Compare the speedups of k and k + 1 drafted tokens, clear the "
               "denominators and solve for c; the lower end of the range is the same "
               "comparison one step down."))
register("ch5-ex4", lambda: indifference_alpha(**PARAMS["ch5-ex4"]), rtol=1e-3,
         hint=("How often can the difference of the two speedups change sign as α "
              "grows? Then search for that point."))
register("ch5-ex5", lambda: alpha_for_best_speedup(**PARAMS["ch5-ex5"]), rtol=1e-3,
         hint="For each α only the best draft length matters; then search over α.")
register("ch5-ex6", lambda: np.array([optimal_k(PARAMS["ch5-ex6"]["alpha"], c, k_max=K_MAX)
                                      for c in PARAMS["ch5-ex6"]["cs"]], dtype=float),
         hint=("Try every k at each c and keep the best, ties going to the shorter "
               "draft; give the lengths in the order of the c values."))

def measured_speedup_se(alpha: float, k: int, c: float, sigma: float, n: int) -> np.ndarray:
    """[S, se]: the speedup and the large-n standard error of a measured speedup
    ΣN_i / Σt_i over n iterations whose times t_i = 1 + k/c + ε_i carry independent noise
    of standard deviation σ (chapter 5, exercise 7): se = √(Var N + S²σ²) / (√n (1 + k/c)).
    Only σ² enters, so any noise law with that variance gives it; the chapter draws positive (gamma)
    times. The exercise's σ is large enough that an interval without the noise term fails
    its coverage checks."""
    n_vals = np.arange(1, k + 2)
    pmf = tokens_per_iteration_pmf(alpha, k)
    mean = pmf @ n_vals
    var = pmf @ n_vals**2 - mean**2
    cost = 1 + k / c
    s = mean / cost
    return np.array([s, np.sqrt(var + s**2 * sigma**2) / (np.sqrt(n) * cost)])


register("ch5-ex7", lambda: measured_speedup_se(**PARAMS["ch5-ex7"]), rtol=1e-3,
         hint=("Centre each iteration: N_i − S t_i has mean zero. Its variance, over the "
               "mean time per iteration, gives the spread of the ratio."))
