"""Chapters 4-6, review R6b: the checks that replace asserts that could not fail, and the
claims the review found overstated or unproved (the finding number is in each comment).

Statistical tests use a fixed seed and state their false-alarm rate.
"""

from __future__ import annotations

import numpy as np

import specmath as sm

ALPHAS = np.linspace(0.0, 0.99, 100)
CS = np.logspace(0, 2, 41)
A, C = np.meshgrid(ALPHAS, CS)


def _leviathan_literal(a, gamma, c_l):
    """Leviathan et al.'s Theorem 3.8 typed out: (1 − α^(γ+1)) / ((1 − α)(γ c_L + 1))."""
    return (1 - a ** (gamma + 1)) / ((1 - a) * (gamma * c_l + 1))


# ---- chapter 5 -------------------------------------------------------------------------

def test_speedup_equals_leviathan_theorem_3_8_typed_out_literally_not_through_the_library():
    # R6b finding 13: the old check compared two library functions sharing E[N]
    for k in range(0, 16):
        np.testing.assert_allclose(sm.speedup(A, k, C), _leviathan_literal(A, k, 1 / C),
                                   rtol=1e-12, atol=1e-12)


def test_operations_factor_equals_leviathan_theorem_3_11_typed_out_literally():
    for k in range(0, 12):
        for c_hat in (0.0, 0.05, 0.5):
            lit = (1 - A) * (k * c_hat + k + 1) / (1 - A ** (k + 1))
            np.testing.assert_allclose(sm.operations_factor(A, k, c_hat), lit, rtol=1e-12)


def test_simulated_speedup_three_se_gap_at_seed_2026_is_one_draw_not_a_bias():
    # R6b finding 1: over 20 other seeds the mean z is N(0, 1/20) for an unbiased
    # simulator; |mean| < 4/sqrt(20) fails with probability about 6e-5
    a, k, n = 0.8, 5, 200_000
    z = []
    for seed in range(20):
        N = sm.simulate_tokens_per_iteration(a, k, n, np.random.default_rng(seed))
        z.append((N.mean() - sm.expected_tokens(a, k)) / (N.std() / np.sqrt(n)))
    assert abs(np.mean(z)) < 4 / np.sqrt(20)


def test_continuous_optimum_exists_exactly_where_g0_is_positive_because_g_tends_to_minus_1():
    # R6b finding 6: the proof of ch5-thm-unimodal needs g(κ) → −1 for the root to exist
    a, c = A[1:, 1:-1], C[1:, 1:-1]
    L = -np.log(a)

    def g(kap):
        return L * a ** (kap + 1) * (c + kap) - (1 - a ** (kap + 1))

    assert (g(5_000.0) < -0.99).all()
    x = sm.optimal_k_continuous(a, c)
    assert np.array_equal(g(0.0) > 0, x > 0)
    assert np.allclose(g(x)[x > 0], 0.0, atol=1e-7)


def test_floor_or_ceiling_split_counts_only_cells_with_positive_continuous_optimum():
    # R6b finding 4: the cells with κ* = 0 all counted as "floor" and reversed the lean
    a, c = A[1:, 1:-1], C[1:, 1:-1]
    x = sm.optimal_k_continuous(a, c)
    kb = sm.optimal_k(a, c, k_max=200)
    pos = x > 0
    floor_pos = np.mean(kb[pos] == np.floor(x[pos]))
    floor_all = np.mean(kb == np.floor(x))
    assert abs(floor_pos - 0.5) < 0.05 and floor_pos < 0.5 < floor_all


def test_best_k_never_falls_with_c_or_alpha_increasing_differences_of_log_speedup():
    # R6b finding 7 (chapter 5, exercise 6): ln S has increasing differences in (k, c) and
    # (k, α), so the smallest maximiser is monotone; checked on a fine grid, k ≤ 30
    a_g, c_g = np.meshgrid(np.linspace(0.01, 0.99, 99), np.logspace(0, 2.5, 90))

    def log_s(kk):
        return np.log(sm.speedup(a_g, kk, c_g))

    for kk in range(0, 30):
        for kp in (kk + 1, kk + 3):
            d = log_s(kp) - log_s(kk)
            assert (np.diff(d, axis=0) >= -1e-12).all() and (np.diff(d, axis=1) >= -1e-12).all()
    kb = sm.optimal_k(a_g, c_g, k_max=200)
    assert (np.diff(kb, axis=0) >= 0).all() and (np.diff(kb, axis=1) >= 0).all()


def test_chapter_5_exercise_6_answer_is_the_brute_force_best_k_and_never_falls():
    from specmath.exercises import _REGISTRY, ch5, exercise_keys

    exercise_keys()
    p = ch5.PARAMS["ch5-ex6"]
    ks = np.arange(0, 65)
    brute = [int(ks[np.argmax(_leviathan_literal(p["alpha"], ks, 1 / c))]) for c in p["cs"]]
    assert np.array_equal(_REGISTRY["ch5-ex6"].compute(), brute)
    assert (np.diff(brute) >= 0).all() and brute[0] < brute[-1]
