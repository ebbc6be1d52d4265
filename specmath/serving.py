"""Variance, latency and burstiness of speculative decoding (chapter 11, first part).

Chapter 4 priced one iteration by its mean E[N]. A serving system also cares about the
spread: how long one request of n tokens takes (a renewal process whose steps are the
iterations), its percentiles against plain decoding, how bursty the stream of tokens is,
and how to average speedups over a workload. Conventions: α per-token acceptance
probability (i.i.d., chapter 4's assumption), k draft length, c = target time per token ÷
draft time per token, time measured in target steps. numpy only.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_int, as_positive, as_probability, scalar_or_array
from .speedup import _expected_tokens, tokens_per_iteration_pmf

__all__ = [
    "tokens_per_iteration_variance",
    "iteration_cost",
    "iterations_to_n_pmf",
    "iterations_to_n_moments",
    "renewal_normal_approx",
    "latency_quantile",
    "simulate_latency",
    "inter_token_gaps",
    "chunk_size_seen_by_token",
    "workload_speedups",
]


def tokens_per_iteration_variance(alpha, k):
    """Var(N) for the truncated geometric N of chapter 4 (ch. 11, eq. ch11-var).

    Var(N) = [α − (2k + 1)(1 − α) α^(k+1) − α^(2k+2)] / (1 − α)²; 0 at α = 1 and α = 0.
    Evaluated as Σ (2j + 1) α^j − E[N]² (j = 0 … k) near α = 1, where the closed form
    cancels. Broadcasts over α and k.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    a, kk = np.broadcast_arrays(a, kk)
    a = a.astype(float)
    kf = kk.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        num = a - (2 * kf + 1) * (1 - a) * a ** (kf + 1) - a ** (2 * kf + 2)
        closed = num / (1 - a) ** 2
    near = a > 0.95
    if near.any():
        km = int(kk.max())
        j = np.arange(km + 1)
        mask = j <= kk[..., None]
        aj = np.where(mask, a[..., None] ** j, 0.0)
        en = aj.sum(-1)
        direct = ((2 * j + 1) * aj).sum(-1) - en**2
        closed = np.where(near, direct, closed)
    return scalar_or_array(np.maximum(closed, 0.0))


def iteration_cost(k, c, verify_cost=1.0):
    """Time of one iteration in target steps: k/c + V (ch. 5; V = 1 under one-step verification)."""
    kk = as_count(k, "k")
    cc = as_positive(c, "c")
    v = as_positive(verify_cost, "verify_cost", allow_inf=False)
    return scalar_or_array(kk / cc + v)


def _iteration_pmf(alpha: float, k: int) -> np.ndarray:
    return np.asarray(tokens_per_iteration_pmf(alpha, k), dtype=float)


def iterations_to_n_pmf(alpha, k, n) -> np.ndarray:
    """P(M(n) = m), m = 0 … n: iterations needed to emit at least n tokens (ch. 11).

    M(n) = min{m : N₁ + … + N_m ≥ n} with N_i i.i.d. as in chapter 4 (the last iteration
    may overshoot; the request stops at n). Exact, by propagating the law of the running
    total below n. Entry 0 is 0 for n ≥ 1. ``alpha`` and ``k`` are scalars.
    """
    a = float(as_probability(alpha, "alpha"))
    kk = as_int(k, "k", minimum=0)
    nn = as_int(n, "n", minimum=1)
    pmf = _iteration_pmf(a, kk)                 # P(N = j), j = 1 … k+1
    alive = np.zeros(nn)                        # P(S_m = s, S_m < n), s = 0 … n−1
    alive[0] = 1.0
    out = np.zeros(nn + 1)
    for m in range(1, nn + 1):
        new = np.zeros(nn + kk + 1)
        for j, pj in enumerate(pmf, start=1):
            new[j:j + nn] += pj * alive
        out[m] = new[nn:].sum()
        alive = new[:nn]
        if alive.sum() < 1e-15:
            break
    return out


def iterations_to_n_moments(alpha, k, n) -> tuple[float, float]:
    """Exact mean and variance of M(n), the iterations needed for n tokens (ch. 11)."""
    pm = iterations_to_n_pmf(alpha, k, n)
    m = np.arange(pm.size)
    mean = float(pm @ m)
    return mean, float(pm @ m**2 - mean**2)


def renewal_normal_approx(alpha, k, n) -> tuple[float, float]:
    """Renewal central limit theorem: M(n) ≈ Normal(n/μ, n σ²/μ³) (ch. 11, eq. ch11-clt).

    μ = E[N], σ² = Var(N). Returns (mean, variance) of the approximating normal law.
    Broadcasts over α, k and n.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    nn = as_count(n, "n", minimum=1).astype(float)
    mu = _expected_tokens(a, kk)
    var = np.asarray(tokens_per_iteration_variance(a, kk))
    return scalar_or_array(nn / mu), scalar_or_array(nn * var / mu**3)


def latency_quantile(alpha, k, c, n, q, verify_cost=1.0) -> float:
    """The q-quantile of the time to emit n tokens, in target steps (ch. 11).

    Time = M(n) × (k/c + V), from the exact law of M(n). Plain decoding takes n steps.
    """
    qq = float(as_probability(q, "q"))
    pm = iterations_to_n_pmf(alpha, k, n)
    cdf = np.cumsum(pm)
    m = int(np.searchsorted(cdf, qq - 1e-12))
    return float(m * iteration_cost(k, c, verify_cost))


def simulate_latency(alpha, k, c, n, n_requests, rng, verify_cost=1.0) -> np.ndarray:
    """Simulated times (target steps) of ``n_requests`` requests of n tokens (ch. 11).

    Each iteration emits N ~ chapter 4's law (drawn by inverse CDF); the request ends at the
    first iteration that brings the total to n or more. Vectorised over requests.
    """
    from ._validate import as_generator

    a = float(as_probability(alpha, "alpha"))
    kk = as_int(k, "k", minimum=0)
    nn = as_int(n, "n", minimum=1)
    R = as_int(n_requests, "n_requests", minimum=1)
    rng = as_generator(rng)
    cdf = np.cumsum(_iteration_pmf(a, kk))
    total = np.zeros(R, dtype=np.int64)
    iters = np.zeros(R, dtype=np.int64)
    active = np.ones(R, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        N = np.searchsorted(cdf, rng.random(idx.size), side="right") + 1
        N = np.minimum(N, kk + 1)
        total[idx] += N
        iters[idx] += 1
        active[idx] = total[idx] < nn
    return iters * float(iteration_cost(kk, c, verify_cost))


def inter_token_gaps(alpha, k, c, verify_cost=1.0):
    """Law of the gap before a token in a streamed response (ch. 11, eq. ch11-gaps).

    Tokens of one iteration arrive together: the first after a gap θ = k/c + V, the other
    N − 1 after a gap 0. In the long run a fraction 1/E[N] of tokens carries the gap θ.
    Returns (θ, P(gap = θ), mean gap, coefficient of variation √(E[N] − 1)); plain
    decoding has gap 1 and CV 0.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    tau = np.asarray(iteration_cost(kk, c, verify_cost))
    mu = _expected_tokens(a, kk)
    p = 1.0 / mu
    return (scalar_or_array(tau), scalar_or_array(p), scalar_or_array(tau * p),
            scalar_or_array(np.sqrt(mu - 1.0)))


def chunk_size_seen_by_token(alpha, k) -> np.ndarray:
    """P(the chunk a random token arrives in has n tokens), n = 1 … k+1 (ch. 11).

    Size-biased law n P(N = n) / E[N] (the inspection paradox); its mean is E[N²]/E[N].
    """
    a = float(as_probability(alpha, "alpha"))
    kk = as_int(k, "k", minimum=0)
    pm = _iteration_pmf(a, kk)
    n = np.arange(1, kk + 2)
    return n * pm / (n @ pm)


def workload_speedups(alphas, lengths, k, c, verify_cost=1.0) -> dict:
    """Two averages of speedup over a workload of requests (ch. 11, eq. ch11-ratio).

    Request i has acceptance α_i and n_i tokens; its speedup is S_i = E[N](α_i)/θ.
    ``ratio_of_means`` = Σ n_i / Σ (n_i / S_i) (total plain time ÷ total speculative time,
    a length-weighted harmonic mean of the S_i); ``mean_of_ratios`` = mean of the S_i.
    By the AM–HM inequality the second is at least the first when lengths are equal.
    """
    a = as_probability(alphas, "alphas")
    n = as_positive(lengths, "lengths", allow_inf=False)
    if a.ndim != 1 or n.shape != a.shape:
        raise ValueError(f"alphas and lengths must be 1-D of the same length; got shapes "
                         f"{a.shape} and {n.shape}")
    kk = as_count(k, "k")
    tau = float(iteration_cost(kk, c, verify_cost))
    S = _expected_tokens(a, kk) / tau
    return {"per_request": S, "ratio_of_means": float(n.sum() / (n / S).sum()),
            "mean_of_ratios": float(S.mean())}
