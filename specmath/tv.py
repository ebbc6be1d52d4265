"""Total variation distance seen three ways, by exact enumeration (chapter 3, draft quality).

TV(p, q) = ½ Σₓ |p(x) − q(x)| = 1 − α is also

* the largest gap P(A) − Q(A) over events A ⊆ vocabulary, attained at A = {x : p(x) > q(x)};
* twice the edge over chance of the best guess of which model produced one sample (equal
  priors): that guess is right with probability (1 + TV)/2.

For a small vocabulary every event (and every deterministic guessing rule) can be listed,
so the chapter checks both statements exactly rather than by sampling. The module also
builds the family of draft distributions used by the chapter's figures and explorer.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_distribution, as_int, same_shape, scalar_or_array
from .distributions import softmax

__all__ = [
    "MAX_ENUM_VOCAB",
    "all_events",
    "event_gaps",
    "max_event_gap",
    "guess_accuracies",
    "best_guess_accuracy",
    "bump_logits",
    "overlap_pair",
]

#: Largest vocabulary whose 2**V events :func:`all_events` will list (2**16 = 65 536 rows).
MAX_ENUM_VOCAB = 16


def all_events(vocab_size: int) -> np.ndarray:
    """Every subset A of {0, …, V−1} as a boolean mask: shape (2**V, V) (ch. 3, eq. tv-events).

    Row ``i`` contains token ``x`` when bit ``x`` of ``i`` is set, so row 0 is the empty event
    and the last row the whole vocabulary. ``vocab_size`` must be in 1 … :data:`MAX_ENUM_VOCAB`.
    """
    V = as_int(vocab_size, "vocab_size", minimum=1)
    if V > MAX_ENUM_VOCAB:
        raise ValueError(f"vocab_size must be ≤ {MAX_ENUM_VOCAB} to list all 2**V events; got {V}")
    idx = np.arange(2**V)[:, None]
    return ((idx >> np.arange(V)) & 1).astype(bool)


def event_gaps(p, q) -> tuple[np.ndarray, np.ndarray]:
    """P(A) − Q(A) for every event A of a small vocabulary (ch. 3, eq. tv-events).

    Returns
    -------
    events : bool array, shape (2**V, V)
        As :func:`all_events`.
    gaps : float array, shape (2**V,)
        ``gaps[i] = Σ_{x ∈ A_i} (p(x) − q(x))``.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    if p.ndim != 1:
        raise ValueError(f"p and q must be single distributions (1-D); got shape {p.shape}")
    events = all_events(p.shape[-1])
    return events, events.astype(float) @ (p - q)


def max_event_gap(p, q) -> tuple[float, np.ndarray]:
    """max over events A of P(A) − Q(A), by listing all 2**V events (ch. 3, theorem tv-events).

    Returns the largest gap and the event attaining it (the first one in :func:`all_events`
    order if several tie). The theorem says the gap equals TV(p, q) and ``{p > q}`` attains it.
    """
    events, gaps = event_gaps(p, q)
    i = int(np.argmax(gaps))
    return float(gaps[i]), events[i]


def guess_accuracies(p, q) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy of every deterministic rule guessing which model drew one sample (ch. 3).

    A coin with equal priors picks the target p or the draft q, the chosen model draws one
    token x, and an observer who knows p and q guesses the model from x. A deterministic
    rule is a set A: say "target" when x ∈ A, "draft" otherwise. It is right with probability
    ½ P(A) + ½ (1 − Q(A)) = ½ (1 + P(A) − Q(A)).

    Returns
    -------
    events : bool array, shape (2**V, V)
    accuracy : float array, shape (2**V,)
    """
    events, gaps = event_gaps(p, q)
    return events, 0.5 * (1.0 + gaps)


def best_guess_accuracy(p, q):
    """Accuracy of the best guess of the model behind one sample: ½ Σₓ max(p(x), q(x)).

    Equals (1 + TV(p, q)) / 2 (ch. 3, theorem best-guess). Broadcasts over leading axes.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    return scalar_or_array(0.5 * np.maximum(p, q).sum(axis=-1))


def bump_logits(vocab_size: int, centers, heights, width: float) -> np.ndarray:
    """Logits of a smooth multi-bump shape over tokens 0 … V−1 (for readable toy figures).

    ``logit(x) = log Σ_j heights[j] · exp(−(x − centers[j])² / (2 width²))``: a mixture of
    Gaussian bumps, so ``softmax`` of it is a distribution with a few modes.
    """
    V = as_int(vocab_size, "vocab_size", minimum=1)
    c = np.atleast_1d(np.asarray(centers, dtype=float))
    h = np.atleast_1d(np.asarray(heights, dtype=float))
    if c.shape != h.shape:
        raise ValueError(f"centers and heights must have the same length; got {c.size} and {h.size}")
    if not np.isfinite(c).all():
        raise ValueError("centers must be finite numbers")
    if not (np.isfinite(h).all() and (h > 0).all()):
        raise ValueError("heights must be finite numbers > 0")
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"width must be a finite number > 0; got {width!r}")
    x = np.arange(V, dtype=float)[:, None]
    dens = (h * np.exp(-0.5 * ((x - c) / width) ** 2)).sum(axis=1)
    return np.log(dens + 1e-3 * dens.max())


#: The fixed target shape of chapter 3's figures: two bumps over 12 tokens.
_V, _CENTERS, _HEIGHTS, _WIDTH = 12, (3.0, 8.0), (1.0, 0.6), 1.4


def overlap_pair(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0):
    """The target and one member of chapter 3's draft family.

    The target p is a fixed two-bump distribution over 12 tokens. The draft q starts from
    the same shape with its bumps moved ``shift`` tokens to the right, sharpened or
    flattened by ``temperature`` (softmax(logits / T)), and is then mixed a fraction
    ``weight`` of the way toward p: q = (1 − w)·q₀ + w·p.

    Returns
    -------
    (p, q) : tuple of numpy arrays of shape (12,)
    """
    s = float(shift)
    if not np.isfinite(s):
        raise ValueError(f"shift must be a finite number; got {shift!r}")
    t = float(temperature)
    if not (np.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be a finite number > 0; got {temperature!r}")
    w = float(weight)
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"weight must be in [0, 1]; got {weight!r}")
    p = softmax(bump_logits(_V, _CENTERS, _HEIGHTS, _WIDTH))
    q0 = softmax(bump_logits(_V, np.asarray(_CENTERS) + s, _HEIGHTS, _WIDTH), t)
    return p, (1.0 - w) * q0 + w * p
