"""Goodness-of-fit tests used to check exactness statistically (chapters 2 and 7, tests/).

numpy only: the chi-square survival function is computed from the regularized incomplete
gamma function (series / continued fraction, Numerical Recipes §6.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import as_int

__all__ = ["chi2_sf", "chi2_isf", "GofResult", "g_test", "chi2_test"]


def _gammainc_reg(a: float, x: float) -> tuple[float, float]:
    """(P(a, x), Q(a, x)), the regularized lower and upper incomplete gamma functions.

    Whichever of the two is small is computed directly (series for P when x < a + 1,
    continued fraction for Q otherwise) and the other as its complement, so a tiny tail
    probability keeps its relative accuracy instead of being lost in 1 − (1 − Q).
    """
    if x <= 0:
        return 0.0, 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:  # series for P
        term = 1.0 / a
        total = term
        ap = a
        for _ in range(10_000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        p = total * math.exp(log_front)
        return p, 1.0 - p
    # continued fraction for Q, Lentz's method
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    q = math.exp(log_front) * h
    return 1.0 - q, q


def _check_dof(dof) -> int:
    return as_int(dof, "dof", minimum=1)


def chi2_sf(x: float, dof: int) -> float:
    """P(X ≥ x) for X ~ χ²(dof)."""
    dof = _check_dof(dof)
    try:
        x = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"x must be a real number; got {x!r}") from err
    if math.isnan(x):
        raise ValueError("x must be a real number; got NaN")
    if x <= 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    return float(min(1.0, max(0.0, _gammainc_reg(dof / 2.0, x / 2.0)[1])))


def chi2_isf(level: float, dof: int) -> float:
    """The critical value x with P(χ²(dof) ≥ x) = level (bisection)."""
    dof = _check_dof(dof)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    lo, hi = 0.0, float(dof) + 10.0
    while chi2_sf(hi, dof) > level:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if chi2_sf(mid, dof) > level:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass
class GofResult:
    """Result of a goodness-of-fit test: statistic, degrees of freedom, p-value."""

    statistic: float
    dof: int
    pvalue: float


def _prepare(observed, expected_probs):
    obs = np.asarray(observed, dtype=float)
    probs = np.asarray(expected_probs, dtype=float)
    if obs.shape != probs.shape:
        raise ValueError(f"observed and expected_probs must have the same shape; got {obs.shape} "
                         f"and {probs.shape}")
    if (obs < 0).any() or not np.isfinite(obs).all():
        raise ValueError("observed must be finite counts ≥ 0")
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise ValueError("expected_probs must be finite and ≥ 0")
    obs2 = obs.reshape(-1, obs.shape[-1]) if obs.ndim > 1 else obs[None]
    pr2 = probs.reshape(-1, probs.shape[-1]) if probs.ndim > 1 else probs[None]
    return obs2, pr2


def _row_g(o: np.ndarray, e: np.ndarray) -> float:
    m = o > 0
    return 2.0 * float((o[m] * np.log(o[m] / e[m])).sum())


def _row_pearson(o: np.ndarray, e: np.ndarray) -> float:
    m = e > 0
    return float(((o[m] - e[m]) ** 2 / e[m]).sum())


def _gof(observed, expected_probs, row_statistic) -> GofResult:
    """Sum a per-row statistic over independent rows of counts (shared by both tests)."""
    obs, pr = _prepare(observed, expected_probs)
    stat, dof = 0.0, 0
    for o, p in zip(obs, pr, strict=True):
        n = o.sum()
        if n == 0:
            continue
        if p.sum() <= 0:
            raise ValueError("each row of expected_probs needs positive mass")
        p = p / p.sum()
        if (o[p == 0] > 0).any():
            return GofResult(math.inf, max(int((p > 0).sum()) - 1, 1), 0.0)
        stat += row_statistic(o, n * p)
        dof += int((p > 0).sum()) - 1
    dof = max(dof, 1)
    return GofResult(stat, dof, chi2_sf(stat, dof))


def g_test(observed, expected_probs) -> GofResult:
    """G-test (likelihood ratio) of counts against probabilities.

    A 2-D input is a set of independent rows (for example transition counts out of each
    state of a Markov chain): the statistics and degrees of freedom add up. Categories with
    zero expected probability must have zero counts (otherwise the p-value is 0); they do
    not count toward the degrees of freedom.
    """
    return _gof(observed, expected_probs, _row_g)


def chi2_test(observed, expected_probs) -> GofResult:
    """Pearson's chi-square test; same conventions as :func:`g_test`."""
    return _gof(observed, expected_probs, _row_pearson)
