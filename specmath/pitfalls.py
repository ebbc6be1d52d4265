"""What goes wrong when the acceptance rule is fed the wrong draft distribution or reused
randomness (chapter 2).

The rule min(1, p/q) is exact only if q is the distribution the draft token was *actually*
sampled from. A common bug samples the draft token one way (greedily, or after top-k or a
temperature) and passes another q (the plain softmax) to the verifier.

The rule also needs its acceptance uniform and its residual sample to be *fresh*:
independent of the randomness that drew the draft token. Two ways to break that are
modelled here: one uniform number used both to draw the draft token and to accept it
(:func:`reused_uniform_output_distribution`), and the residual drawn with the same Gumbel
noise that selected the draft token (:func:`gumbel_verifier_outputs`).
"""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_distribution, as_generator, same_shape
from .acceptance import residual_distribution

__all__ = ["mismatched_output_distribution", "greedy", "reused_uniform_output_distribution",
           "gumbel_verifier_outputs"]


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
    return kept + (1.0 - a) * residual_distribution(p, qu)


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
    then under-weights tokens the draft ranked high but lost, and the output is biased.

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
