"""Input validation shared by every public function.

Every check raises :class:`ValueError` with a message that names the argument and the
rule it breaks, so a reader sweeping a grid never gets a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np

#: Tolerance used when checking that a distribution sums to one: |Σ p − 1| ≤ SUM_TOL.
SUM_TOL = 1e-6


def as_distribution(x, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """Return ``x`` as a float array of probability vectors (vocabulary on the last axis).

    Rules: finite, non-negative, at least ``min_ndim`` dimensions, a non-empty last axis,
    and each vector sums to 1 within :data:`SUM_TOL`.
    """
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of probabilities; got {x!r}") from err
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s) (vocabulary on "
                         f"the last axis); got shape {a.shape}")
    if a.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty vocabulary axis; got shape {a.shape}")
    if np.isnan(a).any():
        raise ValueError(f"{name} contains NaN; probabilities must be finite numbers")
    if np.isinf(a).any():
        raise ValueError(f"{name} contains inf; probabilities must be finite numbers")
    if (a < 0).any():
        raise ValueError(f"{name} has negative entries (min {a.min():.3g}); probabilities "
                         "must be ≥ 0")
    s = a.sum(axis=-1)
    bad = np.abs(s - 1.0) > SUM_TOL
    if bad.any():
        worst = s[bad].flat[0] if np.ndim(s) else float(s)
        raise ValueError(f"{name} must sum to 1 along the last axis (within {SUM_TOL:g}); "
                         f"found a sum of {worst:.6g}")
    return a


def same_shape(p: np.ndarray, q: np.ndarray, pname: str = "p", qname: str = "q") -> None:
    if p.shape != q.shape:
        raise ValueError(f"{pname} and {qname} must have the same shape; got {p.shape} and "
                         f"{q.shape}")


def as_probability(x, name: str) -> np.ndarray:
    """A real array with every entry in [0, 1] (for example an acceptance rate α)."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real number in [0, 1]; got {x!r}") from err
    if np.isnan(a).any():
        raise ValueError(f"{name} must be in [0, 1]; got NaN")
    if ((a < 0) | (a > 1)).any():
        bad = a[(a < 0) | (a > 1)].flat[0]
        raise ValueError(f"{name} must be in [0, 1]; got {bad:g}")
    return a


def as_count(x, name: str, *, minimum: int = 0) -> np.ndarray:
    """An integer-valued array ≥ ``minimum`` (for example the draft length k)."""
    if isinstance(x, bool | np.bool_):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got a bool")
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}") from err
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer)
                               or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}")
    if np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} must be a finite integer ≥ {minimum}; got {x!r}")
        if (a != np.round(a)).any():
            raise ValueError(f"{name} must be an integer ≥ {minimum}; got a non-integer "
                             f"value {a[a != np.round(a)].flat[0]:g}")
        a = a.astype(np.int64)
    if (a < minimum).any():
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {a[a < minimum].flat[0]}")
    return a.astype(np.int64)


def as_positive(x, name: str, *, allow_inf: bool = True) -> np.ndarray:
    """A real array > 0 (for example the draft speed ratio c). inf is allowed if asked."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a positive number; got {x!r}") from err
    if np.isnan(a).any():
        raise ValueError(f"{name} must be a positive number; got NaN")
    if (a <= 0).any():
        raise ValueError(f"{name} must be > 0; got {a[a <= 0].flat[0]:g}")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite; got inf")
    return a


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)); "
                         f"got {type(rng).__name__}")
    return rng


def as_int(x, name: str, *, minimum: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral | float | np.floating):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}")
    return int(as_count(x, name, minimum=minimum))


def scalar_or_array(a: np.ndarray):
    """Return a Python float/int for 0-d results, the array otherwise."""
    if np.ndim(a) == 0:
        # 0-d arrays *and* numpy scalars (np.int64 is not an int) become Python numbers
        return a.item() if isinstance(a, np.ndarray | np.generic) else a
    return a


def as_nonnegative_float(x, name: str) -> float:
    """A finite real number ≥ 0 (for example a noise scale or an exponent)."""
    try:
        v = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number ≥ 0; got {x!r}") from err
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}")
    return v
