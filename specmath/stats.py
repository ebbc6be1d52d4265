"""Goodness-of-fit tests used to check exactness statistically (chapters 2 and 7, tests/).

numpy only: the chi-square survival function is computed from the regularized incomplete
gamma function (series / continued fraction, Numerical Recipes §6.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import as_int

__all__ = ["chi2_sf", "chi2_isf", "GofResult", "g_test", "chi2_test", "median_ci",
           "TrendResult", "stratified_trend_test"]


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


def median_ci(x, level: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free confidence interval for a median from order statistics (ch. 7).

    For n independent draws, [x₍ⱼ₎, x₍ₙ₋ⱼ₊₁₎] covers the median with probability
    1 − 2 P(Binomial(n, ½) ≤ j − 1); j is the largest index whose coverage is ≥ ``level``
    (j = 1, the range, when n is too small to reach it: the returned coverage says so).

    Returns
    -------
    (lo, hi, coverage)
    """
    a = np.sort(np.asarray(x, dtype=float).ravel())
    if a.size == 0 or not np.isfinite(a).all():
        raise ValueError("x must be a non-empty array of finite numbers")
    try:
        level = float(level)
    except (TypeError, ValueError) as err:
        raise ValueError(f"level must be in (0, 1); got {level!r}") from err
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    n = a.size

    def coverage(j: int) -> float:
        tail = sum(math.comb(n, i) for i in range(j)) / 2.0 ** n
        return 1.0 - 2.0 * tail

    j = 1
    while j + 1 <= (n + 1) // 2 and coverage(j + 1) >= level:
        j += 1
    return float(a[j - 1]), float(a[n - j]), coverage(j)


@dataclass
class TrendResult:
    """Stratified score test for a trend of a success rate with a score (chapter 7).

    ``statistic`` is the standardised score z (≈ N(0, 1) under no trend), ``pvalue`` its
    two-sided p-value, ``slope`` the one-step estimate U/I of the change in log-odds per
    unit of score (common to all strata) and ``se`` = 1/√I its standard error.
    """

    statistic: float
    pvalue: float
    slope: float
    se: float
    information: float

    def slope_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Score-based interval slope ± z·se for the log-odds slope (ch. 7).

        ``slope`` = U/I and ``se`` = 1/√I use the information I under no trend, so this
        is a one-step interval from slope 0, not Wald's interval about the MLE; it
        leaves 0 out exactly when the two-sided test rejects at 1 − ``level``."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level}")
        z = math.sqrt(chi2_isf(1.0 - level, 1))
        return self.slope - z * self.se, self.slope + z * self.se

    def power(self, slope: float, level: float = 0.05) -> float:
        """Approximate power of this two-sided test against a true log-odds ``slope``
        with the same information: Φ(|slope|√I − z) + Φ(−|slope|√I − z)."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level}")
        z = math.sqrt(chi2_isf(level, 1))
        d = abs(float(slope)) * math.sqrt(self.information)
        return 0.5 * math.erfc((z - d) / math.sqrt(2)) + 0.5 * math.erfc((z + d) / math.sqrt(2))


def stratified_trend_test(successes, trials, scores=None) -> TrendResult:
    """Mantel's stratified test for trend (the Cochran–Mantel–Haenszel score test, ch. 7).

    ``successes`` and ``trials`` have shape (strata, levels): in stratum s, ``trials[s, i]``
    Bernoulli trials at level i (score ``scores[i]``, default 0, 1, 2, …), of which
    ``successes[s, i]`` succeeded. Null hypothesis: within each stratum the success
    probability is the same at every level (it may differ between strata). Conditioning on
    each stratum's totals, T_s = Σᵢ xᵢ a_si is a sum of A_s draws without replacement from
    the stratum's N_s scores, so E T_s = A_s x̄_s and
    Var T_s = A_s (N_s − A_s)/(N_s − 1) · Σᵢ n_si (xᵢ − x̄_s)²/N_s; the statistic is
    z = Σ_s (T_s − E T_s) / √(Σ_s Var T_s). For one stratum z² = (N − 1) r², r the
    correlation of score and outcome over the N trials. Strata with one trial, or with all
    successes or none, carry no information and drop out.
    """
    a = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if a.ndim == 1:
        a = a[None]
    if n.ndim == 1:
        n = n[None]
    if a.shape != n.shape or a.ndim != 2:
        raise ValueError(f"successes and trials must have the same shape (strata, levels); "
                         f"got {np.shape(successes)} and {np.shape(trials)}")
    if not (np.isfinite(a).all() and np.isfinite(n).all()) or (a < 0).any() or (a > n).any():
        raise ValueError("successes must be counts with 0 ≤ successes ≤ trials")
    if (a != np.round(a)).any() or (n != np.round(n)).any():
        raise ValueError("successes and trials must be integer counts")
    x = np.arange(a.shape[1], dtype=float) if scores is None else np.asarray(scores, float)
    if x.shape != (a.shape[1],) or not np.isfinite(x).all():
        raise ValueError(f"scores must be {a.shape[1]} finite numbers, one per level")
    U = I = 0.0
    for a_s, n_s in zip(a, n, strict=True):
        N, A = n_s.sum(), a_s.sum()
        if N < 2 or A == 0 or A == N:
            continue
        xbar = (n_s * x).sum() / N
        U += (x * a_s).sum() - A * xbar
        I += A * (N - A) / (N - 1) * (n_s * (x - xbar) ** 2).sum() / N
    if I <= 0:
        raise ValueError("successes and trials carry no information on a trend (every "
                         "stratum has one level, or all successes or none)")
    z = U / math.sqrt(I)
    return TrendResult(z, chi2_sf(z * z, 1), U / I, 1.0 / math.sqrt(I), I)
