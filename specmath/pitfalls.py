"""What goes wrong when the acceptance rule is fed the wrong draft distribution (chapter 2).

The rule min(1, p/q) is exact only if q is the distribution the draft token was *actually*
sampled from. A common bug samples the draft token one way (greedily, or after top-k or a
temperature) and passes another q (the plain softmax) to the verifier.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_distribution, same_shape
from .acceptance import residual_distribution

__all__ = ["mismatched_output_distribution", "greedy"]


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
