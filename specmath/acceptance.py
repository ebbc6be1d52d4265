"""The acceptance rule of speculative sampling and its residual distribution.

Chapter 2 (the acceptance rule) and chapter 3 (draft quality). Conventions: ``p`` is the
**target** distribution, ``q`` the **draft**; Chen et al. (2023) swap the two letters.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_distribution, as_generator, same_shape, scalar_or_array

__all__ = [
    "acceptance_probability",
    "residual_distribution",
    "output_distribution",
    "speculative_step",
    "naive_output_distribution",
    "naive_step",
    "NAIVE_RULES",
    "RESIDUAL_MASS_EPS",
]

#: Below this residual mass Σ max(0, p − q) the two distributions are treated as equal:
#: rejection (probability = residual mass) cannot happen, and the residual is defined as p.
RESIDUAL_MASS_EPS = 1e-12


def acceptance_probability(p, q):
    """α = Σₓ min(p(x), q(x)): probability that a draft token x ~ q is accepted (ch. 3, eq. alpha).

    Equals 1 − TV(p, q). Broadcasts over leading axes; a float for a single pair.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    return scalar_or_array(np.minimum(p, q).sum(axis=-1))


def _residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p − q)) on validated float64 rows (p itself where the mass is ~0)."""
    r = np.maximum(p - q, 0.0)
    mass = r.sum(axis=-1, keepdims=True)
    ok = mass > RESIDUAL_MASS_EPS
    safe = np.where(ok, mass, 1.0)
    return np.where(ok, r / safe, p)


def residual_distribution(p, q) -> np.ndarray:
    """norm(max(0, p − q)): where a rejected draft is resampled from (ch. 2, eq. residual).

    When p = q (residual mass below :data:`RESIDUAL_MASS_EPS`) a rejection has probability
    zero and any distribution would do; we return ``p`` itself, which is finite, sums to
    one, and keeps :func:`output_distribution` equal to p. Never NaN.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    return _residual(p, q)


def output_distribution(p, q) -> np.ndarray:
    """Exact distribution of the token emitted at one draft position (ch. 2, theorem exactness).

    P(emit x) = q(x)·min(1, p(x)/q(x)) + (1 − α)·residual(x) = min(p, q)(x) + (1 − α)·r(x),
    which equals p(x). Computed analytically, not by sampling.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    accept_part = np.minimum(p, q)
    alpha = accept_part.sum(axis=-1, keepdims=True)
    return accept_part + (1.0 - alpha) * _residual(p, q)


def _sample(dist: np.ndarray, rng: np.random.Generator) -> int:
    """Inverse-CDF sample of one token from a probability vector."""
    cdf = np.cumsum(dist)
    i = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(i, dist.shape[-1] - 1)


def _check_step_inputs(p, q, draft_tokens):
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    if p.ndim != 2:
        raise ValueError(f"p must have shape (k+1, V): one row per draft position plus the "
                         f"bonus position; got shape {p.shape}")
    if q.ndim != 2:
        raise ValueError(f"q must have shape (k, V): one row per draft position; got {q.shape}")
    k = q.shape[0]
    if p.shape[0] != k + 1:
        raise ValueError(f"p must have k+1 = {k + 1} rows (k = {k} draft rows in q, plus the "
                         f"bonus position); got {p.shape[0]}")
    if k > 0 and p.shape[1] != q.shape[1]:
        raise ValueError(f"p and q must share the vocabulary size; got {p.shape[1]} and "
                         f"{q.shape[1]}")
    t = np.asarray(draft_tokens)
    if t.ndim != 1 or t.shape[0] != k:
        raise ValueError(f"draft_tokens must have shape (k,) = ({k},); got shape {t.shape}")
    if k and not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"draft_tokens must be integers (token ids); got dtype {t.dtype}")
    V = p.shape[1]
    if k and ((t < 0) | (t >= V)).any():
        raise ValueError(f"draft_tokens must be in [0, V) = [0, {V}); got "
                         f"{t[(t < 0) | (t >= V)][0]}")
    return p, q, t.astype(np.int64), k


def speculative_step(p, q, draft_tokens, rng) -> np.ndarray:
    """One verification round of speculative sampling (ch. 2, algorithm speculative-step).

    Takes **one sequence's** rows (no batch axis: loop over sequences). Rows may come
    straight from an engine: float32, float16 or bfloat16-valued rows are accepted with
    a sum tolerance that scales with their precision and vocabulary size
    (:func:`specmath._validate.sum_tolerance`) and renormalised in
    float64. Cost: O(kV) vectorised numpy work (validation, one residual) plus O(k)
    scalar steps, no Python loop over the vocabulary.

    Parameters
    ----------
    p : array_like, shape (k+1, V)
        Target distributions at the k drafted positions and at the bonus position.
    q : array_like, shape (k, V)
        Draft distributions the draft tokens were sampled from.
    draft_tokens : array_like of int, shape (k,)
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int, length 1 … k+1
        The accepted prefix of ``draft_tokens`` followed by exactly one token: the
        correction drawn from the residual at the first rejection, or the bonus token from
        ``p[k]`` if every draft was accepted. With k = 0 this is plain sampling from p[0].

    Notes
    -----
    The test is ``u · q(x) < p(x)`` with u ~ U[0, 1), which is ``u < p(x)/q(x)`` when
    q(x) > 0 and needs no division. A draft token with **q(x) = 0** is therefore accepted
    when p(x) > 0 and rejected when p(x) = 0 (Hugging Face transformers accepts it, vLLM
    rejects it). Either choice is exact: such a token is drafted with probability 0, so
    what the rule does there never enters the output distribution (ch. 2, theorem
    exactness). It arrives when q was rounded (a tiny q(x) underflowed to 0; then the
    true ratio p(x)/q(x) is huge and min(1, p/q) = 1, the limit q(x) → 0⁺ that the
    multiplicative test computes) or misreported (ch. 2's pitfall, where no rule is
    exact); a token the target forbids is never emitted.
    """
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    out = []
    for i in range(k):
        x = t[i]
        # accept with probability min(1, p/q): u < p/q with u ~ U[0, 1)
        if rng.random() * q[i, x] < p[i, x]:
            out.append(int(x))
            continue
        out.append(_sample(_residual(p[i], q[i]), rng))
        return np.asarray(out, dtype=np.int64)
    out.append(_sample(p[k], rng))
    return np.asarray(out, dtype=np.int64)


#: Tempting but wrong verification rules, for chapter 2 and for tests that must catch them.
NAIVE_RULES = ("always-accept", "accept-if-top", "resample-from-p")


def naive_output_distribution(p, q, rule: str) -> np.ndarray:
    """Exact output distribution of one position under a *biased* rule (ch. 2, section tempting rules).

    ``"always-accept"``: emit the draft token → q.
    ``"accept-if-top"``: keep x ~ q if x is the target's most likely token, else sample p.
    ``"resample-from-p"``: accept with min(1, p/q) but on rejection resample from p instead
    of the residual.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    if rule == "always-accept":
        return q.copy()
    if rule == "accept-if-top":
        top = np.argmax(p, axis=-1)
        onehot = np.zeros_like(p)
        np.put_along_axis(onehot, top[..., None], 1.0, axis=-1)
        q_top = (q * onehot).sum(axis=-1, keepdims=True)
        return q_top * onehot + (1.0 - q_top) * p
    if rule == "resample-from-p":
        m = np.minimum(p, q)
        return m + (1.0 - m.sum(axis=-1, keepdims=True)) * p
    raise ValueError(f"rule must be one of {NAIVE_RULES}; got {rule!r}")


def naive_step(p, q, draft_tokens, rng, rule: str) -> np.ndarray:
    """Like :func:`speculative_step` but with one of the biased :data:`NAIVE_RULES`.

    Exists so the course (and the tests) can show that these rules change the output.
    """
    if rule not in NAIVE_RULES:
        raise ValueError(f"rule must be one of {NAIVE_RULES}; got {rule!r}")
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    out = []
    for i in range(k):
        x = t[i]
        if rule == "always-accept":
            keep = True
        elif rule == "accept-if-top":
            keep = x == np.argmax(p[i])
        else:
            keep = rng.random() * q[i, x] < p[i, x]
        if keep:
            out.append(int(x))
            continue
        out.append(_sample(p[i], rng))
        return np.asarray(out, dtype=np.int64)
    out.append(_sample(p[k], rng))
    return np.asarray(out, dtype=np.int64)
