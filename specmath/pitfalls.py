"""What goes wrong when the acceptance rule is fed the wrong draft distribution or reused
randomness (chapter 2).

The rule min(1, p/q) is exact only if q is the distribution the draft token was *actually*
sampled from. A common bug samples the draft token one way (greedily, or after top-k or a
temperature) and passes another q (the plain softmax) to the verifier.

The rule also needs its acceptance uniform, its residual sample and the bonus token's
sample to be *fresh*: independent of each other, of the randomness that drew the draft
tokens, and of the earlier slots' randomness. Ways to break that are modelled here: one
uniform number used both to draw the draft token and to accept it
(:func:`reused_uniform_output_distribution`), the residual drawn with the same Gumbel noise
that selected the draft token (:func:`gumbel_verifier_outputs`, exact law
:func:`shared_gumbel_output_distribution`), and, with uniforms independent of the drafts,
one uniform for every slot of a block
(:func:`one_uniform_per_block_second_token_distribution`), the residual drawn at the
acceptance uniform (:func:`residual_at_acceptance_uniform_output_distribution`) or the
bonus token drawn at the last slot's acceptance uniform
(:func:`bonus_at_acceptance_uniform_distribution`).

Freshness is sufficient, not necessary: :func:`rescaled_uniform_verifier` reuses the
draft's own uniform, rescaled inside the drafted token's interval, and is exact. What the
proof uses is that each draft, given the past, follows q, and that each slot, given the
past and its draft, accepts with min(1, p/q) and recovers from r. The second without the
first is not enough: :func:`draft_at_earlier_uniform_distributions` draws a later draft
at an earlier slot's acceptance uniform. Other verifiers on the draft's noise are exact
but can accept less than α (:func:`inverse_cdf_pairing_acceptance`,
:func:`gumbel_pairing_acceptance`).
"""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_distribution, as_generator, same_shape
from .acceptance import residual_distribution

__all__ = ["mismatched_output_distribution", "greedy", "reused_uniform_output_distribution",
           "gumbel_verifier_outputs", "shared_gumbel_recovery_distribution",
           "shared_gumbel_output_distribution",
           "one_uniform_per_block_second_token_distribution",
           "residual_at_acceptance_uniform_output_distribution",
           "bonus_at_acceptance_uniform_distribution", "rescaled_uniform_verifier",
           "draft_at_earlier_uniform_distributions", "inverse_cdf_pairing_acceptance",
           "gumbel_pairing_acceptance"]


def greedy(q) -> np.ndarray:
    """The one-hot distribution at argmax q (ties to the lowest index): greedy drafting."""
    q = as_distribution(q, "q")
    out = np.zeros_like(q)
    np.put_along_axis(out, np.argmax(q, axis=-1)[..., None], 1.0, axis=-1)
    return out


def mismatched_output_distribution(p, q_used, q_sampled) -> np.ndarray:
    """Exact output distribution when the draft token comes from ``q_sampled`` but the
    verifier computes min(1, p/q_used) and resamples from norm(max(0, p − q_used)).

    P(emit x) = q_sampled(x)·min(1, p(x)/q_used(x)) + (1 − a)·r(x), with a the total
    acceptance probability and r = residual(p, q_used). Equals p when q_used = q_sampled
    (ch. 2, theorem ch2-exact); differs from p in general otherwise.

    A token with q_sampled > 0 but q_used = 0 is handled as :func:`speculative_step` does
    (the test u·q(x) < p(x)): accepted when p(x) > 0, rejected when p(x) = 0.
    """
    p = as_distribution(p, "p")
    qu = as_distribution(q_used, "q_used")
    qs = as_distribution(q_sampled, "q_sampled")
    same_shape(p, qu, "p", "q_used")
    same_shape(p, qs, "p", "q_sampled")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(qu > 0, np.minimum(1.0, p / np.where(qu > 0, qu, 1.0)),
                         (p > 0).astype(float))
    kept = qs * ratio
    a = kept.sum(axis=-1, keepdims=True)
    # a ≤ Σ q_sampled = 1 exactly; rounding can push the sum past 1 by an ulp, and a
    # negative 1 − a would leave tiny negative entries in the output
    return kept + np.maximum(1.0 - a, 0.0) * residual_distribution(p, qu)


def _ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """min(1, p/q), with q = 0 handled as the step rule u·q < p does (accept iff p > 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, np.minimum(1.0, p / np.where(q > 0, q, 1.0)),
                        (p > 0).astype(float))


def reused_uniform_output_distribution(p, q) -> np.ndarray:
    """Exact output when one uniform U draws the draft token and also decides acceptance.

    Chapter 2, pitfall "fresh randomness". The draft token is X = F_q⁻¹(U) (inverse CDF:
    X = x when F(x−1) ≤ U < F(x)), so X ~ q exactly, and the verifier accepts iff
    U < min(1, p(X)/q(X)) with the **same** U; a rejection draws a fresh sample from the
    residual. Token x is then accepted for U in [F(x−1), F(x)) ∩ [0, min(1, p(x)/q(x))),
    an interval whose length is not q(x)·min(1, p(x)/q(x)) in general, so the output is
    biased even though X ~ q.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q, "p", "q")
    hi = np.cumsum(q, axis=-1)
    lo = hi - q
    kept = np.clip(np.minimum(hi, _ratio(p, q)) - lo, 0.0, None)
    a = kept.sum(axis=-1, keepdims=True)
    return kept + (1.0 - a) * residual_distribution(p, q)


def gumbel_verifier_outputs(p, q, n, rng,
                            shared_noise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Drafted and emitted tokens of ``n`` one-token verifications by Gumbel-max (ch. 2).

    The draft token is X = argmax(log q + G) with G a vector of independent standard
    Gumbel variables, so X ~ q exactly. The verifier accepts iff U < min(1, p(X)/q(X))
    with a fresh uniform U, and after a rejection recovers argmax(log r + G'), r the
    residual. With ``shared_noise=False``, G' is fresh noise and the output is exactly p.
    With ``shared_noise=True``, G' = G: the noise that made X win is reused, the bug that
    vLLM's V2 model runner had with ``draft_sample_method="probabilistic"`` (fixed by
    salting the draft's Philox offset; vLLM pull requests 47386 and 54282). The recovery
    then follows r(y)·Φ(r(y)/q(y)) instead of r (exact law:
    :func:`shared_gumbel_recovery_distribution`), tilted toward the tokens with the largest
    r/q, whatever the draft's ranking, and the output is biased.

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft distributions.
    n : int
        Number of independent verifications (≥ 1).
    rng : numpy.random.Generator
    shared_noise : bool
        Reuse the draft's Gumbel noise for the recovery (the bug) or draw it fresh.

    Returns
    -------
    (drafts, emitted) : two numpy.ndarray of int, shape (n,)
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q, "p", "q")
    if p.ndim != 1:
        raise ValueError(f"p and q must be single rows (1-D); got shape {p.shape}")
    n = int(as_count(n, "n", minimum=1))
    rng = as_generator(rng)
    with np.errstate(divide="ignore"):
        log_q, log_r = np.log(q), np.log(residual_distribution(p, q))
    g = rng.gumbel(size=(n, p.size))
    x = np.argmax(log_q + g, axis=1)
    accept = rng.random(n) < _ratio(p, q)[x]
    g_rec = g if shared_noise else rng.gumbel(size=(n, p.size))
    y = np.argmax(log_r + g_rec, axis=1)
    return x, np.where(accept, x, y)


def _rows(p, q) -> tuple[np.ndarray, np.ndarray]:
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q, "p", "q")
    if p.ndim != 1:
        raise ValueError(f"p and q must be single rows (1-D); got shape {p.shape}")
    return p, q


def shared_gumbel_recovery_distribution(p, q) -> np.ndarray:
    """Exact law of the recovered token after a rejection when it reuses the draft's
    Gumbel noise (ch. 2, pitfall "fresh randomness"; :func:`gumbel_verifier_outputs`).

    With E_z = exp(−G_z) ~ Exp(1), X = x and Y = y mean E_x/q_x < E_z/q_z and
    E_y/r_y < E_z/r_z for all other z (r the residual; a rejected x has r_x = 0).
    Substituting s = E_x/q_x, w = E_y/r_y, s = τw and integrating w out gives

        P(X = x, Y = y) = q_x · r_y · Φ(r_y/q_y),   Φ(t) = ∫_0^t dτ / h(τ)²,
        h(τ) = Σ_z max(q_z τ, r_z),

    (Φ(∞) when q_y = 0). h is piecewise linear, so Φ is summed exactly piece by piece:
    ∫_a^b dτ/h² = (b − a)/(h(a) h(b)). The law after a rejection, r_y Φ(r_y/q_y), does
    not depend on which x was rejected; fresh noise would give r_y. Since Φ increases,
    the tilt Φ(r_y/q_y) orders tokens by r_y/q_y.
    """
    p, q = _rows(p, q)
    r = residual_distribution(p, q)
    if not np.any(p < q):
        raise ValueError("p and q must differ (p < q somewhere) for a rejection to occur")
    with np.errstate(divide="ignore", invalid="ignore"):
        knots = np.where(q > 0, r / np.where(q > 0, q, 1.0), np.inf)
    inner = np.unique(knots[np.isfinite(knots) & (knots > 0)])

    def h(t: np.ndarray) -> np.ndarray:
        return np.maximum(np.outer(t, q), r).sum(axis=1)

    grid = np.concatenate([[0.0], inner])
    hg = h(grid)
    pieces = np.diff(grid) / (hg[:-1] * hg[1:])
    phi_grid = np.concatenate([[0.0], np.cumsum(pieces)])
    # the last piece [grid[-1], inf): h = 1·τ + sum of r_z with q_z = 0, so ∫ = 1/(A h)
    slope = q.sum()
    phi_inf = phi_grid[-1] + 1.0 / (slope * hg[-1])
    phi = np.zeros_like(r)
    for y in np.flatnonzero(r > 0):
        t = knots[y]
        phi[y] = phi_inf if np.isinf(t) else phi_grid[np.searchsorted(grid, t)]
    return r * phi


def shared_gumbel_output_distribution(p, q) -> np.ndarray:
    """Exact output law of the verifier of :func:`gumbel_verifier_outputs` with
    ``shared_noise=True``: q·min(1, p/q) + (1 − α)·(law after a rejection), the latter
    from :func:`shared_gumbel_recovery_distribution` (chapter 2)."""
    p, q = _rows(p, q)
    kept = q * _ratio(p, q)
    return kept + (1.0 - kept.sum()) * shared_gumbel_recovery_distribution(p, q)


def one_uniform_per_block_second_token_distribution(p, q) -> np.ndarray:
    """Exact law of the second emitted token, given that slot 1 accepted, when one
    uniform U decides both slots of a block with k = 2 (chapter 2, requirement (ii)).

    The drafts X_1, X_2 are drawn independently from q (context-free p and q, so the
    target's law of each token is p), U is independent of them, and slot i accepts iff
    U < a(X_i), a = min(1, p/q); a rejection at slot 2 draws a fresh residual sample.
    Given slot 1 accepted, U < a(X_1), so slot 2 sees a uniform that is not fresh.
    """
    p, q = _rows(p, q)
    a = _ratio(p, q)
    alpha = float(q @ a)
    both = np.minimum.outer(a, a)                # P(U < a(x1) and U < a(x2))
    acc2 = q @ both * q                          # P(slot 1 and slot 2 accept, X_2 = y)
    rej2 = alpha - acc2.sum()                    # P(slot 1 accepts, slot 2 rejects)
    return (acc2 + rej2 * residual_distribution(p, q)) / alpha


def residual_at_acceptance_uniform_output_distribution(p, q) -> np.ndarray:
    """Exact output law when the residual sample is drawn by inverting the residual's
    cumulative distribution at the acceptance uniform itself (chapter 2, requirement (ii)).

    U is independent of the draft X ~ q, so acceptance is right, but after a rejection
    U lies in [a(X), 1), a = min(1, p/q), and Y = F_r⁻¹(U) is not distributed as r.
    """
    p, q = _rows(p, q)
    a = _ratio(p, q)
    r = residual_distribution(p, q)
    hi = np.cumsum(r)
    lo = hi - r
    # P(X = x, U in [max(lo_y, a_x), hi_y)) for each rejected x and residual token y
    span = np.clip(hi[None, :] - np.maximum(lo[None, :], a[:, None]), 0.0, None)
    return q * a + q @ span


def bonus_at_acceptance_uniform_distribution(p, q) -> np.ndarray:
    """Exact law of the bonus token, given that the slot accepted, when the bonus is drawn
    by inverting the cumulative distribution of p at that slot's acceptance uniform
    (chapter 2, requirement (ii); one draft, k = 1).

    The draft X ~ q and the uniform U are independent, so acceptance is right, but given
    acceptance U lies in [0, a(X)), a = min(1, p/q), and B = F_p⁻¹(U) is not distributed
    as p: P(B = y | accepted) = Σ_x q(x)·|[F(y−1), F(y)) ∩ [0, a(x))| / α, with α the
    acceptance probability. With context-free p and q (the same rows at both positions,
    so the target's law of each token is p), the second emitted token then has law
    (1 − α)·p + α·(this law): a rejection ends the iteration, and the next one's first
    token is exact. A bonus drawn at a fresh uniform has law p.
    """
    p, q = _rows(p, q)
    return _inverse_cdf_law_given_accepted(p, q, _ratio(p, q))


def _inverse_cdf_law_given_accepted(row: np.ndarray, q: np.ndarray,
                                    a: np.ndarray) -> np.ndarray:
    """Law of F_row⁻¹(U) given that a slot accepted, U < a(X), with X ~ q independent
    of the uniform U: Σ_x q(x)·|[F(y−1), F(y)) ∩ [0, a(x))| / α for each token y."""
    alpha = float(q @ a)
    if alpha <= 0:
        raise ValueError("p and q must overlap (min(p, q) > 0 somewhere) for the slot "
                         "to accept")
    hi = np.cumsum(row)
    lo = hi - row
    # P(X = x, U in [lo_y, min(hi_y, a_x))) for each draft x and token y
    span = np.clip(np.minimum(hi[None, :], a[:, None]) - lo[None, :], 0.0, None)
    return q @ span / alpha


def _inverse_cdf(w: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Token x with F(x−1) ≤ w < F(x) for the cumulative sums F of ``row``; a w at or
    above the rounded total goes to the last token with positive mass."""
    idx = np.searchsorted(np.cumsum(row), w, side="right")
    return np.minimum(idx, np.flatnonzero(row > 0)[-1])


def rescaled_uniform_verifier(p, q, u, *,
                              rescale_residual: bool = True
                              ) -> tuple[np.ndarray, np.ndarray]:
    """Draft and verify one slot with one uniform per slot, the draft's own (chapter 2,
    section "Fresh randomness").

    The draft token is X = F_q⁻¹(U), so X ~ q. The position of U inside X's interval,
    U' = (U − F_q(X−1))/q(X), is uniform on [0, 1) and independent of X. The verifier
    accepts iff U' < a(X), a = min(1, p/q); after a rejection U' is uniform on
    [a(X), 1), so U'' = (U' − a(X))/(1 − a(X)) is uniform on [0, 1) and independent of
    X, and Y = F_r⁻¹(U'') ~ r, the residual. Given X = x the slot thus accepts with
    probability a(x) and otherwise draws from r, all that the proof of ch2-thm-exact
    uses: the output is exactly p, with acceptance probability α, although no fresh
    random number is drawn. With ``rescale_residual=False`` the residual is drawn at U'
    itself, which after a rejection lies in [a(X), 1): the output then has the law of
    :func:`residual_at_acceptance_uniform_output_distribution`, biased.

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft distributions.
    u : array_like of float
        The draft's uniforms, each in [0, 1).
    rescale_residual : bool
        Rescale U' to U'' after a rejection (exact) or reuse U' (the bias of pitfall (d)).

    Returns
    -------
    (drafts, emitted) : two numpy.ndarray of int, the shape of ``u``
    """
    p, q = _rows(p, q)
    u = np.asarray(u, dtype=float)
    if u.size == 0 or not np.all((u >= 0) & (u < 1)):
        raise ValueError("u must be a non-empty array of uniforms, each in [0, 1)")
    x = _inverse_cdf(u, q)
    lo = np.cumsum(q)[x] - q[x]
    u1 = np.clip((u - lo) / q[x], 0.0, np.nextafter(1.0, 0.0))
    a = _ratio(p, q)[x]
    accept = u1 < a
    if rescale_residual:
        u2 = (u1 - a) / np.where(accept, 1.0, 1.0 - a)
    else:
        u2 = u1
    y = _inverse_cdf(np.clip(u2, 0.0, np.nextafter(1.0, 0.0)),
                     residual_distribution(p, q))
    return x, np.where(accept, x, y)


def draft_at_earlier_uniform_distributions(p, q) -> tuple[np.ndarray, np.ndarray]:
    """Exact laws, given that slot 1 accepted, of the second draft and of the second
    emitted token when the second draft is drawn at slot 1's acceptance uniform
    (chapter 2, "What the proof needs"; review R15a finding 1).

    A block with k = 2 and context-free p and q (the same rows at both positions, so the
    target's law of each token is p). X_1 ~ q with noise of its own; slot 1 accepts iff
    a fresh U_1 < a(X_1), a = min(1, p/q). The second draft is X_2 = F_q⁻¹(U_1), the
    inverse cumulative distribution of q at U_1, so X_2 ~ q; slot 2's uniform, every
    residual sample and the bonus are fresh. Given the past and X_2 = x, slot 2 then
    accepts with probability a(x) and after a rejection draws from r, and the bonus
    follows p: all but one condition the proof of ch2-thm-sequence uses. The one that
    fails: given the past, X_2 does not follow q. Given slot 1 accepted, U_1 < a(X_1),
    so X_2 has law P(X_2 = x | accepted) = Σ_x1 q(x1)·|[F_q(x−1), F_q(x)) ∩ [0, a(x1))|/α,
    and the second emitted token has law d·a + (1 − Σ d·a)·r for that law d.

    Returns
    -------
    (draft_law, token_law) : two numpy.ndarray, shape (V,)
    """
    p, q = _rows(p, q)
    a = _ratio(p, q)
    draft = _inverse_cdf_law_given_accepted(q, q, a)     # X_2 = F_q⁻¹(U_1), U_1 < a(X_1)
    kept = draft * a
    return draft, kept + (1.0 - kept.sum()) * residual_distribution(p, q)


def inverse_cdf_pairing_acceptance(p, q) -> float:
    """Exact probability that Y = F_p⁻¹(U) equals X = F_q⁻¹(U) for one uniform U: the
    total overlap of token x's interval under q with its interval under p (chapter 2,
    verifiers on the draft's noise). Y ~ p exactly; the overlap is at most α, the
    acceptance of the rule, and equals it on two tokens:
    min(q_0, p_0) + min(q_1, p_1)."""
    p, q = _rows(p, q)
    hq, hp = np.cumsum(q), np.cumsum(p)
    lo = np.maximum(hq - q, hp - p)
    return float(np.clip(np.minimum(hq, hp) - lo, 0.0, None).sum())


def gumbel_pairing_acceptance(p, q) -> float:
    """Exact probability that Y = argmax(log p + G) equals X = argmax(log q + G) for one
    vector G of independent standard Gumbels (chapter 2, verifiers on the draft's noise).

    With E_z = exp(−G_z) ~ Exp(1), X = Y = x means E_z > E_x · max(q_z/q_x, p_z/p_x) for
    every z ≠ x; given E_x = e that has probability exp(−e Σ_{z≠x} max(…)), and
    integrating against e^{−e} gives

        P(X = Y) = Σ_x 1 / Σ_z max(q_z/q_x, p_z/p_x),

    over the x with p_x > 0 and q_x > 0 (the term z = x is 1). On two tokens each term
    is min(q_x, p_x), so the sum is α; on more it can be less.
    """
    p, q = _rows(p, q)
    on = np.flatnonzero((p > 0) & (q > 0))
    ratios = np.maximum(q[None, :] / q[on, None], p[None, :] / p[on, None])
    return float((1.0 / ratios.sum(axis=1)).sum())
