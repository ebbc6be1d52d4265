"""specmath.stats (numpy-only chi-square tail, G-test, Pearson test) against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from specmath import stats

DOFS = [1, 2, 3, 5, 8, 17, 30, 64, 150, 500]
XS = [1e-6, 0.01, 0.3, 1.0, 2.5, 7.0, 15.0, 40.0, 100.0, 300.0, 800.0]


@pytest.mark.parametrize("dof", DOFS)
def test_chi2_sf_agrees_with_scipy_to_1e_8(dof):
    for x in XS + [dof * 0.5, dof - 1e-3, dof + 1.0, dof * 2.0]:
        ours, ref = stats.chi2_sf(x, dof), sps.chi2.sf(x, dof)
        assert ours == pytest.approx(ref, rel=1e-8, abs=1e-300), (x, dof)
        assert abs(ours - ref) <= 1e-8


def test_chi2_sf_limits():
    assert stats.chi2_sf(0.0, 3) == 1.0
    assert stats.chi2_sf(-5.0, 3) == 1.0
    assert stats.chi2_sf(math.inf, 3) == 0.0
    # deep tail keeps relative accuracy (regression: 1 − (1 − Q) lost it)
    assert stats.chi2_sf(100.0, 3) == pytest.approx(sps.chi2.sf(100.0, 3), rel=1e-10)


@pytest.mark.parametrize("dof", DOFS[:8])
def test_chi2_isf_agrees_with_scipy_to_1e_8(dof):
    for level in (0.5, 0.1, 0.05, 0.01, 1e-3, 1e-6, 1e-12):
        assert stats.chi2_isf(level, dof) == pytest.approx(sps.chi2.isf(level, dof), rel=1e-8)


def test_g_test_and_chi2_test_agree_with_scipy_power_divergence(rng):
    for v in (2, 3, 6, 11):
        for _ in range(20):
            probs = rng.dirichlet(np.ones(v))
            n = int(rng.integers(20, 3000))
            obs = rng.multinomial(n, rng.dirichlet(np.ones(v)) if rng.random() < 0.5 else probs)
            g = stats.g_test(obs, probs)
            ref = sps.power_divergence(obs, n * probs, lambda_="log-likelihood")
            assert g.dof == v - 1
            assert g.statistic == pytest.approx(ref.statistic, rel=1e-10, abs=1e-12)
            assert g.pvalue == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)
            c = stats.chi2_test(obs, probs)
            ref = sps.power_divergence(obs, n * probs, lambda_="pearson")
            assert c.statistic == pytest.approx(ref.statistic, rel=1e-10, abs=1e-12)
            assert c.pvalue == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)


def test_rows_of_a_2d_table_add_statistics_and_degrees_of_freedom():
    obs = np.array([[10, 20, 30], [5, 5, 0], [0, 0, 0]])
    probs = np.array([[0.2, 0.3, 0.5], [0.4, 0.6, 0.0], [0.3, 0.3, 0.4]])
    g = stats.g_test(obs, probs)
    r0 = sps.power_divergence(obs[0], 60 * probs[0], lambda_="log-likelihood")
    r1 = sps.power_divergence(obs[1, :2], 10 * probs[1, :2], lambda_="log-likelihood")
    # the empty third row contributes nothing; a zero-probability category no dof
    assert g.dof == 2 + 1
    assert g.statistic == pytest.approx(r0.statistic + r1.statistic, rel=1e-12)
    assert g.pvalue == pytest.approx(sps.chi2.sf(g.statistic, 3), rel=1e-8)
    c = stats.chi2_test(obs, probs)
    assert c.dof == 3


def test_counts_in_a_zero_probability_category_give_pvalue_zero():
    for test in (stats.g_test, stats.chi2_test):
        r = test([3, 1], [1.0, 0.0])
        assert r.pvalue == 0.0 and r.statistic == math.inf


def test_unnormalised_expected_probabilities_are_normalised_per_row():
    a = stats.g_test([30, 70], [0.3, 0.7])
    b = stats.g_test([30, 70], [3.0, 7.0])
    assert a == b


def test_g_test_false_alarm_rate_is_its_level(rng):
    """Calibration under H0: 4000 multinomial tables, rejection rate at level 0.05.

    The rate is Binomial(4000, 0.05)/4000 (sd 0.0034); the band 0.05 ± 0.015 is ±4.4 sd,
    so this check itself false-alarms with probability below 1e-4 (fixed seed).
    """
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    obs = rng.multinomial(400, probs, size=4000)
    rejections = np.mean([stats.g_test(o, probs).pvalue < 0.05 for o in obs])
    assert abs(rejections - 0.05) < 0.015
