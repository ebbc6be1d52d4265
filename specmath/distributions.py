"""Probability distributions over a vocabulary: softmax with temperature, total variation.

Chapter 3 (draft quality) and chapter 6 (temperature) of the course.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_distribution, same_shape, scalar_or_array

__all__ = ["softmax", "tv_distance", "mix", "entropy", "top1_agreement"]


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Turn logits into a distribution: softmax(z / T) along the last axis (chapter 6, eq. temperature).

    Parameters
    ----------
    logits : array_like, shape (..., V)
        Real scores. ``-inf`` masks a token out; NaN and ``+inf`` are rejected, and every
        vector needs at least one finite entry.
    temperature : float
        T ≥ 0. ``T = 0`` is the limit T → 0⁺: a one-hot vector at the argmax. Ties are
        broken towards the **lowest token index** (``numpy.argmax``), so greedy decoding is
        deterministic.

    Returns
    -------
    numpy.ndarray, same shape as ``logits``.
    """
    try:
        z = np.asarray(logits, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"logits must be an array of real numbers; got {logits!r}") from err
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError(f"logits must have a non-empty last (vocabulary) axis; got shape {z.shape}")
    if np.isnan(z).any():
        raise ValueError("logits contain NaN; every logit must be a real number or -inf")
    if np.isposinf(z).any():
        raise ValueError("logits contain +inf; every logit must be a real number or -inf")
    if not np.isfinite(z).any(axis=-1).all():
        raise ValueError("logits: every vector needs at least one finite entry (all were -inf)")
    try:
        t = float(temperature)
    except (TypeError, ValueError) as err:
        raise ValueError(f"temperature must be a number ≥ 0; got {temperature!r}") from err
    if np.isnan(t) or t < 0:
        raise ValueError(f"temperature must be ≥ 0; got {temperature!r}")
    if np.isinf(t):
        raise ValueError("temperature must be finite (T = inf would ignore the logits)")
    if t == 0.0:
        idx = np.argmax(z, axis=-1)
        out = np.zeros_like(z)
        np.put_along_axis(out, idx[..., None], 1.0, axis=-1)
        return out
    # Subtract the max *before* dividing by T: z − max ≤ 0 is finite (or −inf for a masked
    # token), so a tiny T cannot overflow z/T into inf − inf = NaN; the max entry stays 0.
    with np.errstate(over="ignore", under="ignore"):
        s = (z - np.max(z, axis=-1, keepdims=True)) / t
        e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def tv_distance(p, q):
    """Total variation distance TV(p, q) = ½ Σₓ |p(x) − q(x)| (chapter 3, eq. tv).

    Broadcasts over leading axes; returns a float for a single pair.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    return scalar_or_array(0.5 * np.abs(p - q).sum(axis=-1))


def mix(p, q, w):
    """The mixture (1 − w)·q + w·p: a draft q moved a fraction ``w`` of the way to the target p.

    Used in chapter 3 to show α growing as a draft is mixed toward the target.
    ``w`` broadcasts against the leading axes (append an axis for the vocabulary yourself
    if you sweep it: ``mix(p, q, w[:, None])``).
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    try:
        w = np.asarray(w, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"w must be in [0, 1]; got {w!r}") from err
    if np.isnan(w).any() or ((w < 0) | (w > 1)).any():
        raise ValueError("w must be in [0, 1]")
    return (1.0 - w) * q + w * p


def entropy(p, base: float = 2.0):
    """Shannon entropy H(p) = −Σ p log p (bits by default); 0 log 0 = 0 (chapter 6).

    ``base`` must be a finite number > 0 and ≠ 1 (2 gives bits, e gives nats).
    """
    p = as_distribution(p, "p")
    try:
        b = float(base)
    except (TypeError, ValueError) as err:
        raise ValueError(f"base must be a number > 0 and ≠ 1; got {base!r}") from err
    if not (np.isfinite(b) and b > 0 and b != 1):
        raise ValueError(f"base must be a finite number > 0 and ≠ 1; got {base!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return scalar_or_array(-terms.sum(axis=-1) / np.log(b))


def top1_agreement(p, q):
    """1 if the argmax tokens of p and q agree, else 0 (ties: lowest index), broadcasting.

    The limit of the acceptance probability α as temperature → 0 for both models (chapter 6).
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    return scalar_or_array((np.argmax(p, axis=-1) == np.argmax(q, axis=-1)).astype(float))
