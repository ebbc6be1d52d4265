"""Tokens per iteration, speedup and the best draft length (chapters 4 and 5).

Known values are published figures (the test oracles): Leviathan et al. (2023) Table 1,
the recomputed worked examples of the errata in the shared references, and the vLLM
"draft acceptance rate" for α = 0.8, k = 5.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import specmath as sm

alphas = st.floats(0.0, 1.0, allow_nan=False)
open_alphas = st.floats(0.01, 0.99, allow_nan=False)
ks = st.integers(0, 40)
cs = st.floats(0.05, 1e4, allow_nan=False)


def exact_expected_tokens(alpha: float, k: int) -> float:
    """Independent oracle: E[N] = Σ_{i=0}^{k} α^i (the number of leading acceptances + 1)."""
    return math.fsum(alpha**i for i in range(k + 1))


# ---- known values ----------------------------------------------------------------------

# Leviathan et al. (ICML 2023) Table 1, with their cost coefficient c_L = 0, i.e. our c = ∞.
LEVIATHAN_TABLE_1 = [((0.6, 2), 1.96), ((0.7, 3), 2.53), ((0.8, 2), 2.44),
                     ((0.8, 5), 3.69), ((0.9, 2), 2.71), ((0.9, 10), 6.86)]


@pytest.mark.parametrize(("alpha_gamma", "published"), LEVIATHAN_TABLE_1)
def test_speedup_with_free_draft_reproduces_leviathan_table_1(alpha_gamma, published):
    alpha, gamma = alpha_gamma
    assert round(sm.speedup(alpha, gamma, math.inf), 2) == published
    assert round(sm.expected_tokens(alpha, gamma), 2) == published
    assert round(sm.leviathan_walltime_improvement(alpha, gamma, 0.0), 2) == published


def test_errata_alpha_0_7_to_0_8_at_k5_c10():
    """References, errata: E[N] 2.94 → 3.69 and S 1.96× → 2.46× (a 25 % gain)."""
    assert round(sm.expected_tokens(0.7, 5), 2) == 2.94
    assert round(sm.expected_tokens(0.8, 5), 2) == 3.69
    s07, s08 = sm.speedup(0.7, 5, 10), sm.speedup(0.8, 5, 10)
    assert round(s07, 2) == 1.96
    assert round(s08, 2) == 2.46
    assert round(s08 / s07 - 1, 2) == 0.25


def test_errata_alpha_0_75_k5_c10_speedup_2_19():
    assert round(sm.speedup(0.75, 5, 10), 2) == 2.19


def test_errata_alpha_0_9_k5_c2_5_speedup_1_56_best_k_4():
    assert round(sm.speedup(0.9, 5, 2.5), 2) == 1.56
    assert sm.optimal_k(0.9, 2.5) == 4
    assert round(sm.speedup(0.9, 4, 2.5), 3) == 1.575


def test_vllm_draft_acceptance_rate_is_0_54_for_alpha_0_8_k5():
    assert round(sm.acceptance_rate_from_alpha(0.8, 5), 2) == 0.54
    assert sm.alpha_from_acceptance_rate(sm.acceptance_rate_from_alpha(0.8, 5), 5) == (
        pytest.approx(0.8, abs=1e-12))


def test_pmf_known_values_truncated_geometric():
    np.testing.assert_allclose(sm.tokens_per_iteration_pmf(0.5, 3),
                               [0.5, 0.25, 0.125, 0.125], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sm.tokens_per_iteration_pmf(0.5, 0), [1.0])


def test_speedup_with_verification_cost_one_is_speedup():
    a, k, c = np.linspace(0, 1, 11)[:, None], np.arange(8), 7.5
    np.testing.assert_allclose(sm.speedup_with_verification_cost(a, k, c, 1.0),
                               sm.speedup(a, k, c), rtol=1e-15)
    # a verification that costs twice a target step halves the k = 0 "speedup" to 1/2
    assert sm.speedup_with_verification_cost(0.8, 0, 10, 2.0) == pytest.approx(0.5)


def test_optimal_k_is_zero_when_speculation_does_not_pay():
    # Leviathan et al. Cor. 3.9: some k helps iff α > c_L = 1/c; with α < 1/c none does.
    assert sm.optimal_k(0.05, 10) == 0
    assert sm.optimal_k(0.0, math.inf) == 0  # all k tie at S = 1; ties go to the smaller k
    assert sm.optimal_k(0.2, 10) >= 1


# ---- properties ------------------------------------------------------------------------

@given(alphas, ks)
def test_expected_tokens_matches_geometric_sum_and_lies_in_1_to_k_plus_1(alpha, k):
    e = sm.expected_tokens(alpha, k)
    assert 1.0 <= e <= k + 1
    assert e == pytest.approx(exact_expected_tokens(alpha, k), rel=1e-12)


@given(alphas, alphas, ks)
def test_expected_tokens_increases_in_alpha(a1, a2, k):
    lo, hi = sorted((a1, a2))
    assert sm.expected_tokens(lo, k) <= sm.expected_tokens(hi, k) * (1 + 1e-14)


@given(alphas, st.integers(0, 60))
def test_expected_tokens_increases_in_k(alpha, k):
    e0, e1 = sm.expected_tokens(alpha, k), sm.expected_tokens(alpha, k + 1)
    assert e0 <= e1 * (1 + 1e-14)
    # the increment is exactly α^(k+1)
    assert e1 - e0 == pytest.approx(alpha ** (k + 1), abs=1e-12)


@given(alphas, ks)
def test_pmf_sums_to_one_and_its_mean_is_expected_tokens(alpha, k):
    pmf = sm.tokens_per_iteration_pmf(alpha, k)
    assert pmf.shape == (k + 1,)
    assert (pmf >= 0).all()
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.dot(np.arange(1, k + 2), pmf) == pytest.approx(sm.expected_tokens(alpha, k),
                                                             rel=1e-12)


@given(alphas, ks, cs)
def test_speedup_never_exceeds_expected_tokens(alpha, k, c):
    s = sm.speedup(alpha, k, c)
    assert 0 < s <= sm.expected_tokens(alpha, k)
    assert s == pytest.approx(exact_expected_tokens(alpha, k) / (1 + k / c), rel=1e-12)


@given(alphas, ks, cs)
def test_leviathan_walltime_improvement_with_inverse_cost_equals_speedup(alpha, gamma, c):
    assert sm.leviathan_walltime_improvement(alpha, gamma, 1 / c) == pytest.approx(
        sm.speedup(alpha, gamma, c), rel=1e-12)


@given(alphas, st.one_of(cs, st.just(math.inf)), st.integers(0, 80))
def test_optimal_k_equals_brute_force(alpha, c, k_max):
    best = sm.optimal_k(alpha, c, k_max=k_max)
    assert isinstance(best, int) and 0 <= best <= k_max
    # brute force with the independent geometric-sum oracle
    values = [exact_expected_tokens(alpha, k) / (1 + k / c) for k in range(k_max + 1)]
    top = max(values)
    assert values[best] == pytest.approx(top, rel=1e-12)
    # away from numerical ties the argmax itself must agree (ties go to the smaller k)
    runner_up = max((v for i, v in enumerate(values) if i != best), default=-math.inf)
    if top - runner_up > 1e-9 * top:
        assert best == int(np.argmax(values))


@given(open_alphas, st.floats(0.1, 200.0))
def test_optimal_k_continuous_is_stationary_and_within_one_of_optimal_k(alpha, c):
    kc = sm.optimal_k_continuous(alpha, c)
    assume(kc < 500)

    def s(k):
        return (1 - alpha ** (k + 1)) / ((1 - alpha) * (1 + k / c))

    if kc == 0:
        # boundary: S is non-increasing from k = 0, so the best integer k is 0 as well
        assert s(0.0) >= s(1e-6) - 1e-12
        assert sm.optimal_k(alpha, c, k_max=600) == 0
        return
    # interior: a stationary point of S (the derivative g(k) changes sign) and a maximum
    h = 1e-6 * max(1.0, kc)
    assert s(kc) >= max(s(kc - h), s(kc + h)) - 1e-12
    g = -math.log(alpha) * alpha ** (kc + 1) * (c + kc) - (1 - alpha ** (kc + 1))
    assert abs(g) <= 1e-8 * (1 + c + kc)
    assert abs(sm.optimal_k(alpha, c, k_max=600) - kc) <= 1.0


def test_optimal_k_continuous_edges_alpha_0_and_1():
    assert sm.optimal_k_continuous(0.0, 10) == 0.0
    assert sm.optimal_k_continuous(1.0, 10) == math.inf


@given(alphas, st.integers(1, 40))
def test_acceptance_rate_round_trips_through_alpha(alpha, k):
    rate = sm.acceptance_rate_from_alpha(alpha, k)
    assert 0 <= rate <= alpha + 1e-15  # later drafts are never checked: rate ≤ α
    back = sm.alpha_from_acceptance_rate(rate, k)
    assert sm.acceptance_rate_from_alpha(back, k) == pytest.approx(rate, abs=1e-12)
    # the map is strictly increasing, so α itself is recovered wherever it is well-conditioned
    if alpha > 1e-3:
        assert back == pytest.approx(alpha, abs=1e-9)


@given(alphas, ks)
def test_mean_tokens_round_trips_through_alpha(alpha, k):
    tau = sm.mean_tokens_from_alpha(alpha, k)
    assert tau == sm.expected_tokens(alpha, k)
    back = sm.alpha_from_mean_tokens(tau, k)
    assert sm.expected_tokens(back, k) == pytest.approx(tau, rel=1e-12)
    if k >= 1 and alpha > 1e-3:
        assert back == pytest.approx(alpha, abs=1e-9)


def test_alpha_from_mean_tokens_endpoints():
    assert sm.alpha_from_mean_tokens(1.0, 5) == 0.0
    assert sm.alpha_from_mean_tokens(6.0, 5) == 1.0
    assert sm.alpha_from_acceptance_rate(0.0, 5) == 0.0
    assert sm.alpha_from_acceptance_rate(1.0, 5) == 1.0


# ---- broadcasting: a grid gives the same numbers as elementwise calls -------------------

GRID_A = np.array([0.0, 0.3, 0.62, 0.9, 1.0])
GRID_K = np.array([0, 1, 3, 7])
GRID_C = np.array([0.5, 4.0, 25.0, np.inf])


def test_grid_broadcasting_equals_elementwise_calls():
    A, K, C = GRID_A[:, None, None], GRID_K[None, :, None], GRID_C[None, None, :]
    e = sm.expected_tokens(A, K)
    s = sm.speedup(A, K, C)
    v = sm.speedup_with_verification_cost(A, K, C, 1.3)
    lw = sm.leviathan_walltime_improvement(A, K, 0.25)
    assert e.shape == (5, 4, 1) and s.shape == (5, 4, 4)
    for i, a in enumerate(GRID_A):
        for j, k in enumerate(GRID_K):
            assert e[i, j, 0] == sm.expected_tokens(float(a), int(k))
            assert lw[i, j, 0] == sm.leviathan_walltime_improvement(float(a), int(k), 0.25)
            np.testing.assert_array_equal(sm.tokens_per_iteration_pmf(GRID_A, int(k))[i],
                                          sm.tokens_per_iteration_pmf(float(a), int(k)))
            if k >= 1:
                assert sm.acceptance_rate_from_alpha(A, K[:, 1:])[i, j - 1, 0] == (
                    sm.acceptance_rate_from_alpha(float(a), int(k)))
            for m, c in enumerate(GRID_C):
                assert s[i, j, m] == sm.speedup(float(a), int(k), float(c))
                assert v[i, j, m] == sm.speedup_with_verification_cost(
                    float(a), int(k), float(c), 1.3)
    best = sm.optimal_k(GRID_A[:, None], GRID_C[None, :], k_max=30)
    kc = sm.optimal_k_continuous(GRID_A[:, None], GRID_C[None, :3])
    assert best.shape == (5, 4) and best.dtype == np.int64
    for i, a in enumerate(GRID_A):
        for m, c in enumerate(GRID_C):
            assert best[i, m] == sm.optimal_k(float(a), float(c), k_max=30)
            if m < 3:
                assert kc[i, m] == sm.optimal_k_continuous(float(a), float(c))


def test_conversions_broadcast_over_grids():
    rates = np.linspace(0, 1, 7)[:, None]
    k = np.array([1, 5, 12])
    a = sm.alpha_from_acceptance_rate(rates, k)
    taus = sm.expected_tokens(np.linspace(0, 1, 7)[:, None], k)
    b = sm.alpha_from_mean_tokens(taus, k)
    assert a.shape == b.shape == (7, 3)
    for i in range(7):
        for j in range(3):
            assert a[i, j] == sm.alpha_from_acceptance_rate(float(rates[i, 0]), int(k[j]))
            assert b[i, j] == sm.alpha_from_mean_tokens(float(taus[i, j]), int(k[j]))


# ---- edges: α = 0, α = 1, k = 0, with every floating-point warning an error ------------

def test_alpha_edges_raise_no_warnings():
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert sm.expected_tokens(1.0, 5) == 6.0
        assert sm.expected_tokens(0.0, 5) == 1.0
        assert sm.expected_tokens(1.0, 0) == 1.0 and sm.expected_tokens(0.0, 0) == 1.0
        np.testing.assert_array_equal(sm.tokens_per_iteration_pmf(1.0, 4), [0, 0, 0, 0, 1])
        np.testing.assert_array_equal(sm.tokens_per_iteration_pmf(0.0, 4), [1, 0, 0, 0, 0])
        np.testing.assert_array_equal(sm.tokens_per_iteration_pmf(0.0, 0), [1.0])
        assert sm.speedup(1.0, 5, math.inf) == 6.0
        assert sm.speedup(0.0, 5, 10) == pytest.approx(1 / 1.5)
        assert sm.speedup(0.7, 0, 10) == 1.0  # k = 0 is plain decoding
        assert sm.optimal_k(1.0, math.inf, k_max=12) == 12  # still growing at k_max
        assert sm.optimal_k(1.0, 10.0) == 64
        assert sm.optimal_k(0.0, 10.0) == 0
        assert sm.acceptance_rate_from_alpha(1.0, 5) == 1.0
        assert sm.acceptance_rate_from_alpha(0.0, 5) == 0.0
        assert sm.alpha_from_mean_tokens(6.0, 5) == 1.0
        assert sm.optimal_k_continuous(np.array([0.0, 1.0]), 10.0).tolist() == [0.0, math.inf]
        e = sm.expected_tokens(np.array([0.0, 1 - 1e-12, 1.0]), 3)
        assert np.isfinite(e).all() and e[1] == pytest.approx(4.0, rel=1e-9)


def test_scalars_in_give_python_scalars_out():
    assert isinstance(sm.expected_tokens(0.5, 3), float)
    assert isinstance(sm.speedup(0.5, 3, 4), float)
    assert isinstance(sm.optimal_k(0.5, 4), int)
    assert isinstance(sm.expected_tokens([0.5], 3), np.ndarray)


# ---- operations factor (Leviathan et al.'s Theorem 3.11, chapter 5) ----------------------

def test_operations_factor_reproduces_leviathan_table_1_operations_column_from_data_file():
    from specmath import published

    rows = published.load("leviathan2023", quantity="operations_factor")
    assert len(rows) == 6
    for r in rows:
        assert round(sm.operations_factor(r["alpha"], r["gamma"], r["c_hat"]), 2) == r["value"]


def test_operations_factor_is_work_per_iteration_over_expected_tokens_and_at_least_one():
    a = np.linspace(0, 1, 41)[:, None, None]
    k = np.arange(0, 12)[None, :, None]
    c_hat = np.array([0.0, 0.05, 0.3])[None, None, :]
    ops = sm.operations_factor(a, k, c_hat)
    np.testing.assert_allclose(ops, (k + 1 + k * c_hat) / sm.expected_tokens(a, k),
                               rtol=1e-12)
    assert (ops >= 1 - 1e-12).all()                     # E[N] ≤ k + 1
    np.testing.assert_allclose(sm.operations_factor(1.0, k, 0.0), 1.0)   # perfect draft
    assert sm.operations_factor(0.8, 0) == 1.0           # plain decoding


def test_operations_factor_matches_counted_operations_of_simulated_iterations(rng):
    # Delta-method standard error; |z| < 4 has false-alarm rate ≈ 6e-5. With n = 200 000
    # the se is ≈ 0.0027, so a 2 % error in the formula (0.03) is caught with power ≈ 1.
    n, a, k, c_hat = 200_000, 0.8, 5, 0.05
    N = sm.simulate_tokens_per_iteration(a, k, n, rng)
    work = k + 1 + k * c_hat
    sim = n * work / N.sum()
    se = work * N.std() / (N.mean() ** 2 * np.sqrt(n))
    assert abs(sim - sm.operations_factor(a, k, c_hat)) < 4 * se
