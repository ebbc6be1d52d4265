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


# ---- a draft that decides when to stop (chapter 4, remark stopping-time) ---------------

def _stop_pair():
    target, draft = sm.toy.toy_pair(vocab_size=4, closeness=0.4, seed=3)
    return target, draft, 0.3, 4, 0          # threshold, k_max, context token


def _drop_first_token_law(p, q, threshold):
    """Exact law of the first emitted token when unsure drafts are dropped (biased)."""
    H = q >= threshold
    return (np.where(H, np.minimum(p, q), 0)
            + np.maximum(q - p, 0)[H].sum() * sm.residual_distribution(p, q)
            + q[~H].sum() * p)


def test_stopping_time_draft_length_keeps_the_first_two_tokens_exact(rng):
    # G-test over the 16 pairs at LEVEL (false-alarm rate 0.1 %). Power: against the
    # dropping rule the first-token law alone gives λ ≈ 1700 at this n (power ≈ 1).
    target, draft, th, k_max, ctx = _stop_pair()
    n = 10_000
    pairs = np.array([sm.simulation.adaptive_decode(target, draft, 2, k_max, th, rng,
                                                    context=(ctx,))[0] for _ in range(n)])
    P = target.transition
    law = (P[ctx][:, None] * P).ravel()
    res = stats.g_test(np.bincount(pairs[:, 0] * 4 + pairs[:, 1], minlength=16), law)
    assert res.pvalue > LEVEL, res
    drop = _drop_first_token_law(P[ctx], draft.transition[ctx], th)
    assert gtest_power(P[ctx], drop, n) > 0.99


def test_dropping_an_unsure_draft_token_biases_the_output_and_is_caught(rng):
    target, draft, th, k_max, ctx = _stop_pair()
    p, q = target.transition[ctx], draft.transition[ctx]
    drop = _drop_first_token_law(p, q, th)
    n = 3_000
    assert gtest_power(p, drop, n) > 0.99            # the test below has teeth
    firsts = [sm.simulation.adaptive_decode(target, draft, 1, k_max, th, rng, context=(ctx,),
                                            rule="drop")[0][0] for _ in range(n)]
    cnt = np.bincount(firsts, minlength=4)
    assert stats.g_test(cnt, p).pvalue < LEVEL        # biased: rejected
    assert stats.g_test(cnt, drop).pvalue > LEVEL     # and it follows the predicted law


def test_adaptive_decode_with_threshold_zero_is_fixed_k_and_threshold_one_is_k_one(rng):
    target, draft = sm.toy.toy_pair(vocab_size=4, closeness=0.6, seed=1)
    _, ns = sm.simulation.adaptive_decode(target, draft, 400, 3, 0.0, rng, context=(0,))
    assert ns.min() >= 1 and ns.max() <= 4 and (ns == 4).any()
    _, ns1 = sm.simulation.adaptive_decode(target, draft, 400, 3, 1.0, rng, context=(0,))
    assert ns1.max() <= 2                              # stops after every first draft
