"""Tokens per iteration when acceptance is not i.i.d. (chapter 6, section per-position).

Chapter 4's E[N] = (1 − α^(k+1))/(1 − α) assumes every drafted token is accepted with the
same probability α, independently. Here α may change with the position in the draft, or
with the context. The exact result is the chain rule: with
α_i = P(accept position i | positions 1 … i−1 accepted),

    E[N] = 1 + Σ_{j=1}^{k} Π_{i=1}^{j} α_i      (ch. 6, eq. en-positional).
"""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_generator, as_int, as_probability, scalar_or_array

__all__ = [
    "expected_tokens_positional",
    "tokens_per_iteration_pmf_positional",
    "simulate_tokens_positional",
    "markov_acceptance_by_position",
]


def _as_alphas(alphas) -> np.ndarray:
    a = as_probability(alphas, "alphas")
    if a.ndim < 1:
        raise ValueError("alphas must be a sequence (α_1 … α_k along the last axis); got a "
                         "scalar — use specmath.expected_tokens for a constant α")
    return a


def expected_tokens_positional(alphas):
    """E[N] = 1 + Σ_j Π_{i≤j} α_i for per-position acceptance α_1 … α_k (ch. 6, eq. en-positional).

    ``alphas`` has the positions on its last axis (k = its length; an empty last axis is
    k = 0 and gives 1); leading axes broadcast. A constant α_i = α recovers chapter 4's
    (1 − α^(k+1))/(1 − α).
    """
    a = _as_alphas(alphas)
    return scalar_or_array(1.0 + np.cumprod(a, axis=-1).sum(axis=-1))


def tokens_per_iteration_pmf_positional(alphas) -> np.ndarray:
    """P(N = n), n = 1 … k+1: (Π_{i<n} α_i)(1 − α_n) for n ≤ k, and Π_{i≤k} α_i for n = k+1."""
    a = _as_alphas(alphas)
    reach = np.concatenate([np.ones(a.shape[:-1] + (1,)), np.cumprod(a, axis=-1)], axis=-1)
    stop = np.concatenate([1.0 - a, np.ones(a.shape[:-1] + (1,))], axis=-1)
    return reach * stop


def simulate_tokens_positional(alphas, n_iterations: int, rng) -> np.ndarray:
    """Monte Carlo draws of N when position i is accepted with probability α_i (ch. 6).

    Each iteration walks the draft: position i is accepted independently with probability
    α_i; the iteration stops at the first rejection. ``alphas`` must be one-dimensional.
    Returns an int array of length ``n_iterations`` with values in 1 … k+1.
    """
    a = _as_alphas(alphas)
    if a.ndim != 1:
        raise ValueError(f"alphas must be one-dimensional (α_1 … α_k); got shape {a.shape}")
    n = as_int(n_iterations, "n_iterations")
    rng = as_generator(rng)
    accepted = rng.random((n, a.shape[0])) < a  # (n, k)
    # number of leading acceptances = position of the first rejection
    run = np.cumprod(accepted, axis=1).sum(axis=1)
    return (run + 1).astype(np.int64)


def markov_acceptance_by_position(target_transition, draft_transition, context_token: int, k):
    """Exact α_i for the Markov toy pair of :mod:`specmath.toy`, starting after ``context_token``.

    With M = min(P, Q) elementwise (P, Q the transition matrices), the probability that the
    first j drafted tokens are all accepted is e_ctxᵀ M^j 1: an accepted token x was drafted
    and kept with probability min(p, q)(x) given the previous token. The conditional rates
    are α_j = (e Mʲ 1)/(e M^(j−1) 1). Returns the array α_1 … α_k; plug it into
    :func:`expected_tokens_positional` for the exact E[N].
    """
    P = as_probability(target_transition, "target_transition")
    Q = as_probability(draft_transition, "draft_transition")
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape != Q.shape:
        raise ValueError(f"target_transition and draft_transition must be square matrices of the "
                         f"same shape; got {P.shape} and {Q.shape}")
    kk = int(as_count(k, "k"))
    c = as_int(context_token, "context_token")
    if c >= P.shape[0]:
        raise ValueError(f"context_token must be in [0, {P.shape[0]}); got {c}")
    M = np.minimum(P, Q)
    m = np.zeros(P.shape[0])
    m[c] = 1.0
    reach = [1.0]
    for _ in range(kk):
        m = m @ M
        reach.append(float(m.sum()))
    reach = np.asarray(reach)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(reach[:-1] > 0, reach[1:] / np.where(reach[:-1] > 0, reach[:-1], 1.0), 0.0)
    return out
