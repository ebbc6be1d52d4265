"""Tokens per iteration, speedup and the best draft length under the i.i.d. model.

Chapter 4 (tokens per iteration) and chapter 5 (speedup and the best draft length).
Conventions: α is the per-token acceptance probability, k the number of drafted tokens per
iteration, c how many times faster the draft is than the target (target time per token ÷
draft time per token). Leviathan et al.'s cost coefficient is 1/c.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_int, as_positive, as_probability, scalar_or_array

__all__ = [
    "expected_tokens",
    "tokens_per_iteration_pmf",
    "speedup",
    "speedup_with_verification_cost",
    "leviathan_walltime_improvement",
    "operations_factor",
    "optimal_k",
    "optimal_k_continuous",
    "acceptance_rate_from_alpha",
    "alpha_from_acceptance_rate",
    "mean_tokens_from_alpha",
    "alpha_from_mean_tokens",
]


def _expected_tokens(a: np.ndarray, k: np.ndarray) -> np.ndarray:
    # (1 − α^(k+1)) / (1 − α) written as −expm1((k+1) log α) / (1 − α): accurate near α = 1;
    # α = 0 gives log 0 = −inf and −expm1(−inf) = 1; α = 1 is the limit k + 1.
    with np.errstate(divide="ignore", invalid="ignore"):
        num = -np.expm1((k + 1) * np.log(a))
        den = 1.0 - a
        out = np.where(a < 1.0, num / np.where(a < 1.0, den, 1.0), k + 1.0)
    # rounding can leave the quotient an ulp outside [1, k+1] (α = 0.75, k = 0 gave
    # 0.9999999999999999); E[N] lies in that interval exactly, so clip to it.
    return np.clip(out, 1.0, k + 1.0)


def expected_tokens(alpha, k):
    """E[N] = (1 − α^(k+1)) / (1 − α), tokens emitted per iteration (ch. 4, eq. expected-tokens).

    Exactly k + 1 at α = 1 (the limit; no 0/0 and no warning). Broadcasts over α and k.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    return scalar_or_array(_expected_tokens(a, kk))


def tokens_per_iteration_pmf(alpha, k: int) -> np.ndarray:
    """P(N = n) for n = 1 … k+1: a geometric law truncated at k+1 (ch. 4, eq. pmf).

    P(N = n) = α^(n−1)(1 − α) for n ≤ k, and P(N = k+1) = α^k. ``alpha`` broadcasts; the
    result has shape ``alpha.shape + (k + 1,)``.
    """
    a = as_probability(alpha, "alpha")
    kk = as_int(k, "k")
    n = np.arange(1, kk + 2)
    a_ = a[..., None]
    pmf = a_ ** (n - 1) * (1.0 - a_)
    pmf[..., kk] = a ** kk
    return pmf


def speedup(alpha, k, c):
    """S = E[N] / (1 + k/c): expected speedup over plain decoding (ch. 5, eq. speedup).

    One iteration costs k draft steps (each 1/c of a target step) plus one target pass
    that scores k + 1 positions, assumed to cost one target step. ``c = inf`` is a free
    draft (Leviathan et al.'s cost coefficient 0). Broadcasts over α, k and c.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    cc = as_positive(c, "c")
    return scalar_or_array(_expected_tokens(a, kk) / (1.0 + kk / cc))


def speedup_with_verification_cost(alpha, k, c, verify_cost):
    """S = E[N] / (k/c + V(k)), with V(k) the cost of scoring k+1 tokens in target steps.

    The refined cost model of the real-model chapter: V(k) = 1 recovers :func:`speedup`.
    ``verify_cost`` broadcasts like ``k`` (pass an array indexed by k for a sweep).
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    cc = as_positive(c, "c")
    v = as_positive(verify_cost, "verify_cost", allow_inf=False)
    return scalar_or_array(_expected_tokens(a, kk) / (kk / cc + v))


def _finite_nonnegative(x, name: str, meaning: str) -> np.ndarray:
    """``x`` as a float array of finite entries ≥ 0; the error names ``name`` and what it
    measures (``meaning``)."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}") from err
    if np.isnan(a).any() or (a < 0).any() or np.isinf(a).any():
        raise ValueError(f"{name} must be a finite number ≥ 0 ({meaning})")
    return a


def leviathan_walltime_improvement(alpha, gamma, c_leviathan):
    """Leviathan et al.'s Theorem 3.8: (1 − α^(γ+1)) / ((1 − α)(γ c_L + 1)).

    ``c_leviathan`` is *their* cost coefficient: draft time ÷ target time, i.e. 1/c in this
    course. Provided so chapter 5 can show the two formulas agree.
    """
    a = as_probability(alpha, "alpha")
    g = as_count(gamma, "gamma")
    cl = _finite_nonnegative(c_leviathan, "c_leviathan", "draft time ÷ target time")
    return scalar_or_array(_expected_tokens(a, g) / (g * cl + 1.0))


def operations_factor(alpha, k, c_hat=0.0):
    """Expected arithmetic work per token relative to plain decoding (ch. 5, eq. operations).

    One iteration makes the target score k + 1 positions and the draft produce k tokens,
    each costing ``c_hat`` of a target token in arithmetic operations; it emits E[N] tokens,
    while plain decoding spends one target token's operations per token. So the factor is
    (k + 1 + k ĉ) / E[N] = (1 − α)(k ĉ + k + 1) / (1 − α^(k+1)), Leviathan et al.'s
    Theorem 3.11 (their γ = k). It is ≥ 1: speculation saves time, not arithmetic.
    Broadcasts over α, k and ĉ.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    ch = _finite_nonnegative(c_hat, "c_hat",
                             "draft operations per token ÷ target operations per token")
    return scalar_or_array((kk + 1.0 + kk * ch) / _expected_tokens(a, kk))


def optimal_k(alpha, c, k_max: int = 64):
    """The integer k in 0 … k_max maximising :func:`speedup` (ch. 5, eq. best-k).

    0 means speculation does not pay. Ties go to the smaller k. Broadcasts over α and c.
    If S still grows at k_max (α = 1 with a free draft, say) the answer is k_max.
    """
    a = as_probability(alpha, "alpha")
    cc = as_positive(c, "c")
    km = as_int(k_max, "k_max")
    a, cc = np.broadcast_arrays(a, cc)
    ks = np.arange(km + 1)
    s = _expected_tokens(a[..., None], ks) / (1.0 + ks / cc[..., None])
    return scalar_or_array(np.argmax(s, axis=-1).astype(np.int64))


def optimal_k_continuous(alpha, c):
    """The real k ≥ 0 maximising S(k) = (1 − α^(k+1)) / ((1 − α)(1 + k/c)) (ch. 5).

    Setting dS/dk = 0 gives g(k) = −ln α · α^(k+1) (c + k) − (1 − α^(k+1)) = 0; g is
    decreasing, so the root is found by bisection. Returns 0 where g(0) ≤ 0, and inf for
    α = 1 (S grows without bound in k when the draft is perfect). Broadcasts.
    """
    a = as_probability(alpha, "alpha")
    cc = as_positive(c, "c", allow_inf=False)
    a, cc = np.broadcast_arrays(a, cc)
    a = a.astype(float)
    out = np.zeros(a.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.log(a)

        def g(kv):
            ak = a ** (kv + 1)
            return -la * ak * (cc + kv) - (1.0 - ak)

        interior = (a > 0) & (a < 1) & (g(np.zeros(a.shape)) > 0)
        lo = np.zeros(a.shape)
        hi = np.ones(a.shape)
        for _ in range(200):  # grow hi until g(hi) ≤ 0
            grow = interior & (g(hi) > 0)
            if not grow.any():
                break
            hi = np.where(grow, hi * 2.0, hi)
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            pos = g(mid) > 0
            lo = np.where(interior & pos, mid, lo)
            hi = np.where(interior & ~pos, mid, hi)
        out = np.where(interior, 0.5 * (lo + hi), out)
        out = np.where(a == 1.0, np.inf, out)
    return scalar_or_array(out)


# ---- what people report, and how to convert between them (chapter 4) ------------------

def acceptance_rate_from_alpha(alpha, k):
    """Expected accepted ÷ drafted tokens, α(1 − α^k) / (k(1 − α)) (ch. 4, eq. draft-acceptance-rate).

    This is what vLLM and many repositories print as "acceptance rate"; it is smaller
    than α because drafts after the first rejection are never checked. Needs k ≥ 1.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k", minimum=1)
    return scalar_or_array((_expected_tokens(a, kk) - 1.0) / kk)


def mean_tokens_from_alpha(alpha, k):
    """τ = E[N], the mean tokens per iteration ("mean acceptance length" in EAGLE/Spec-Bench)."""
    return expected_tokens(alpha, k)


def _invert_increasing(f, target: np.ndarray, iters: int = 200) -> np.ndarray:
    lo = np.zeros(target.shape)
    hi = np.ones(target.shape)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = f(mid) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def alpha_from_acceptance_rate(rate, k):
    """Invert :func:`acceptance_rate_from_alpha`: the α that gives this accepted ÷ drafted rate."""
    r = as_probability(rate, "rate")
    kk = as_count(k, "k", minimum=1)
    r, kk = np.broadcast_arrays(r, kk)
    a = _invert_increasing(lambda x: (_expected_tokens(x, kk) - 1.0) / kk, r)
    a = np.where(r >= 1.0, 1.0, np.where(r <= 0.0, 0.0, a))
    return scalar_or_array(a)


def alpha_from_mean_tokens(tau, k):
    """Invert :func:`expected_tokens`: the α that gives mean tokens per iteration τ ∈ [1, k+1]."""
    kk = as_count(k, "k")
    try:
        t = np.asarray(tau, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"tau must be a number in [1, k+1]; got {tau!r}") from err
    if np.isnan(t).any():
        raise ValueError("tau must be a number in [1, k+1]; got NaN")
    t, kk = np.broadcast_arrays(t, kk)
    if ((t < 1) | (t > kk + 1)).any():
        raise ValueError("tau must be in [1, k+1] (one token at least, k+1 at most per iteration)")
    a = _invert_increasing(lambda x: _expected_tokens(x, kk), t)
    a = np.where(t >= kk + 1, 1.0, np.where(t <= 1.0, 0.0, a))
    return scalar_or_array(a)
