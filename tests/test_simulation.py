"""Monte Carlo of N, the tokens per iteration (ch. 4), against the exact pmf.

Statistical design of the goodness-of-fit checks below: a G-test at level 0.001, i.e. a
false-alarm rate of 0.1 % for a correct simulator (the seed is fixed, so the outcome is
reproducible). The power is computed in the test from the noncentral chi-square
approximation ncx2(dof, λ) with λ = min(2n·KL(p′‖p), n·χ²(p′‖p)), where p′ is the pmf of a
slightly wrong α (the smaller of the two usual approximations, so the estimate is
conservative), and asserted to be ≥ 0.99; a companion test shows the wrong α is rejected.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats as sps

import specmath as sm
from specmath import stats
from specmath.simulation import simulate_tokens_per_iteration_loop

LEVEL = 1e-3  # false-alarm rate of every G-test in this file


def gtest_power(p0: np.ndarray, p1: np.ndarray, n: int, level: float = LEVEL) -> float:
    """Approximate power of the G-test of H0: p0 on n draws when they really follow p1."""
    m = p0 > 0
    lam = min(2 * n * np.sum(p1[m] * np.log(np.where(p1[m] > 0, p1[m], 1) / p0[m])),
              n * np.sum((p1[m] - p0[m]) ** 2 / p0[m]))
    dof = int(m.sum()) - 1
    return float(sps.ncx2.sf(sps.chi2.isf(level, dof), dof, lam))


def counts(draws: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(draws, minlength=k + 2)[1:]


ALPHA, K, N_VEC, SHIFT_VEC = 0.8, 5, 400_000, 0.005
N_LOOP, SHIFT_LOOP = 30_000, 0.02


def test_vectorized_monte_carlo_of_n_matches_the_pmf(rng):
    pmf = sm.tokens_per_iteration_pmf(ALPHA, K)
    # power against α off by 0.005 (pmf of 0.805) at n = 400 000 draws
    assert gtest_power(pmf, sm.tokens_per_iteration_pmf(ALPHA + SHIFT_VEC, K), N_VEC) >= 0.99
    draws = sm.simulate_tokens_per_iteration(ALPHA, K, N_VEC, rng)
    assert draws.shape == (N_VEC,) and draws.dtype == np.int64
    assert draws.min() >= 1 and draws.max() <= K + 1
    assert stats.g_test(counts(draws, K), pmf).pvalue > LEVEL


def test_monte_carlo_goodness_of_fit_rejects_a_slightly_wrong_alpha(rng):
    draws = sm.simulate_tokens_per_iteration(ALPHA + SHIFT_VEC, K, N_VEC, rng)
    assert stats.g_test(counts(draws, K), sm.tokens_per_iteration_pmf(ALPHA, K)).pvalue < LEVEL


def test_loop_baseline_matches_the_pmf(rng):
    pmf = sm.tokens_per_iteration_pmf(0.6, 3)
    assert gtest_power(pmf, sm.tokens_per_iteration_pmf(0.6 + SHIFT_LOOP, 3), N_LOOP) >= 0.99
    draws = simulate_tokens_per_iteration_loop(0.6, 3, N_LOOP, rng)
    assert stats.g_test(counts(draws, 3), pmf).pvalue > LEVEL


def test_every_cell_of_a_broadcast_grid_matches_its_pmf(rng):
    """α × k grid; each of the 6 cells is G-tested at level 0.001/6 (Bonferroni: the grid
    as a whole false-alarms with probability ≤ 0.001)."""
    alphas = np.array([0.3, 0.75, 0.95])[:, None]
    ks = np.array([1, 6])
    n = 50_000
    draws = sm.simulate_tokens_per_iteration(alphas, ks, n, rng)
    assert draws.shape == (3, 2, n)
    for i, a in enumerate(alphas[:, 0]):
        for j, k in enumerate(ks):
            pmf = sm.tokens_per_iteration_pmf(a, k)
            assert stats.g_test(counts(draws[i, j], k), pmf).pvalue > LEVEL / 6
            assert draws[i, j].mean() == pytest.approx(sm.expected_tokens(a, k), rel=0.02)


def test_simulation_edges_alpha_0_alpha_1_k_0_and_no_iterations(rng):
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        _simulation_edges(rng)


def _simulation_edges(rng):
    np.testing.assert_array_equal(sm.simulate_tokens_per_iteration(1.0, 4, 50, rng), 5)
    np.testing.assert_array_equal(sm.simulate_tokens_per_iteration(0.0, 4, 50, rng), 1)
    np.testing.assert_array_equal(sm.simulate_tokens_per_iteration(0.7, 0, 50, rng), 1)
    assert sm.simulate_tokens_per_iteration(0.7, 3, 0, rng).shape == (0,)
    grid = sm.simulate_tokens_per_iteration([0.0, 1.0], [[2], [3]], 10, rng)
    np.testing.assert_array_equal(grid[:, 0], 1)
    np.testing.assert_array_equal(grid[:, 1], [[3] * 10, [4] * 10])
    np.testing.assert_array_equal(simulate_tokens_per_iteration_loop(1.0, 4, 5, rng), 5)
    np.testing.assert_array_equal(simulate_tokens_per_iteration_loop(0.0, 4, 5, rng), 1)


def test_simulation_is_reproducible_with_a_seed():
    a = sm.simulate_tokens_per_iteration(0.7, 4, 1000, np.random.default_rng(3))
    b = sm.simulate_tokens_per_iteration(0.7, 4, 1000, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
