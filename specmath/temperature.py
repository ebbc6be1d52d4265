"""Acceptance against temperature, and "real-looking" logits to study it (chapter 6).

Conventions: ``p`` (target) and ``q`` (draft) come from logits through
:func:`specmath.softmax` at a temperature T; α(T) = Σ min(p_T, q_T). By default both models
run at the same temperature, as in every speculative-decoding implementation that tempers
the target and the draft together.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_generator, as_int, as_nonnegative_float
from .acceptance import acceptance_probability
from .distributions import softmax

__all__ = ["zipf_logits", "perturbed_logits", "alpha_at_temperature"]


def _as_logits(z, name: str) -> np.ndarray:
    a = np.asarray(z, dtype=float)
    if a.ndim < 1 or a.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty last (vocabulary) axis; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite real numbers (no NaN or inf)")
    return a


def zipf_logits(vocab_size: int, exponent: float = 1.0) -> np.ndarray:
    """Logits −s·ln(rank) for ranks 1 … V: softmax at T = 1 is a Zipf law p(r) ∝ r^(−s) (ch. 6).

    Word frequencies in natural text follow such a law roughly with s ≈ 1; a larger
    exponent makes the distribution more peaked (lower entropy), a smaller one flatter.
    Token 0 is the most likely.

    Parameters
    ----------
    vocab_size : int
        V ≥ 1.
    exponent : float
        s ≥ 0 (s = 0 is the uniform distribution).
    """
    V = as_int(vocab_size, "vocab_size", minimum=1)
    s = as_nonnegative_float(exponent, "exponent")
    return -s * np.log(np.arange(1, V + 1, dtype=float))


def perturbed_logits(logits, noise: float, rng) -> np.ndarray:
    """A stand-in draft: the target's logits plus independent N(0, noise²) errors (ch. 6).

    ``noise = 0`` returns a copy of the logits (a perfect draft). Broadcasts: pass logits of
    shape (contexts, V) to perturb each context independently.
    """
    z = _as_logits(logits, "logits")
    s = as_nonnegative_float(noise, "noise")
    rng = as_generator(rng)
    return z + s * rng.standard_normal(z.shape)


def alpha_at_temperature(target_logits, draft_logits, temperature, draft_temperature=None):
    """α(T) = Σₓ min(softmax(z_p/T), softmax(z_q/T')) (ch. 6, eq. alpha-T).

    Parameters
    ----------
    target_logits, draft_logits : array_like, shape (..., V)
        Finite logits of the target (p) and the draft (q); same shape.
    temperature : float or array_like
        T ≥ 0 for the target; T = 0 is greedy (one-hot at the argmax, lowest index on ties).
        An array of temperatures gives a result of shape ``temperature.shape + leading``.
    draft_temperature : float or array_like, optional
        T' for the draft; defaults to ``temperature`` (both models tempered together).

    Returns
    -------
    float or numpy.ndarray
        As T → 0 this tends to :func:`specmath.top1_agreement` (when the argmaxes are
        unique), not to 1.
    """
    zp = _as_logits(target_logits, "target_logits")
    zq = _as_logits(draft_logits, "draft_logits")
    if zp.shape != zq.shape:
        raise ValueError(f"target_logits and draft_logits must have the same shape; got "
                         f"{zp.shape} and {zq.shape}")
    t = np.asarray(temperature, dtype=float)
    tq = t if draft_temperature is None else np.asarray(draft_temperature, dtype=float)
    for name, arr in (("temperature", t), ("draft_temperature", tq)):
        if np.isnan(arr).any() or (arr < 0).any() or np.isinf(arr).any():
            raise ValueError(f"{name} must be a finite number ≥ 0 (0 = greedy)")
    t, tq = np.broadcast_arrays(t, tq)
    out = np.empty(t.shape + zp.shape[:-1])
    for idx in np.ndindex(t.shape):
        p = softmax(zp, t[idx])
        q = softmax(zq, tq[idx])
        out[idx] = acceptance_probability(p, q)
    if out.ndim == 0:
        return float(out)
    return out
