"""specmath.toy: the Markov-chain target/draft pair and whole decodes with statistics."""

from __future__ import annotations

import numpy as np
import pytest

import specmath as sm
from specmath import toy


def test_toy_pair_is_reproducible_and_closeness_moves_alpha_to_one():
    t1, d1 = toy.toy_pair(5, 0.4, seed=11)
    t2, d2 = toy.toy_pair(5, 0.4, seed=11)
    np.testing.assert_array_equal(t1.transition, t2.transition)
    np.testing.assert_array_equal(d1.transition, d2.transition)
    alphas = [sm.acceptance_probability(*(m.transition for m in toy.toy_pair(5, w, seed=11)))
              for w in (0.0, 0.3, 0.7, 1.0)]
    assert np.all(np.diff(np.mean(alphas, axis=1)) > 0)
    np.testing.assert_allclose(alphas[-1], 1.0)
    t, d = toy.toy_pair(5, 1.0, seed=2)
    np.testing.assert_array_equal(t.transition, d.transition)


def test_markov_lm_renormalises_rows_within_the_sum_tolerance(rng):
    """Regression: rows off by < SUM_TOL passed validation, then Generator.choice refused them."""
    t = np.array([[0.5, 0.5 + 5e-7], [0.3, 0.7]])
    m = toy.MarkovLM(t, np.array([0.5, 0.5 - 5e-7]))
    np.testing.assert_allclose(m.transition.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert m.initial.sum() == pytest.approx(1.0, abs=1e-15)
    assert len(m.sample(20, rng)) == 20
    assert len(toy.speculative_decode(m, m, 20, 2, rng).tokens) == 20


def test_markov_lm_next_distribution_and_sampling(rng):
    target, _ = toy.toy_pair(4, 0.5, seed=1)
    np.testing.assert_array_equal(target.next_distribution([]), target.initial)
    np.testing.assert_array_equal(target.next_distribution([3, 2]), target.transition[2])
    out = target.sample(50, rng, context=[1])
    assert out.shape == (50,) and out.dtype == np.int64 and ((out >= 0) & (out < 4)).all()
    assert target.sample(0, rng).shape == (0,)


def test_with_temperature_one_is_identity_and_zero_is_greedy():
    target, _ = toy.toy_pair(4, 0.5, seed=1)
    np.testing.assert_allclose(target.with_temperature(1.0).transition, target.transition,
                               atol=1e-12)
    greedy = target.with_temperature(0.0)
    np.testing.assert_array_equal(greedy.transition.argmax(axis=1),
                                  target.transition.argmax(axis=1))
    assert set(np.unique(greedy.transition)) <= {0.0, 1.0}


@pytest.mark.parametrize("k", [0, 1, 4])
def test_speculative_decode_statistics_are_consistent(k, rng):
    target, draft = toy.toy_pair(5, 0.5, seed=4)
    n = 300
    res = toy.speculative_decode(target, draft, n, k, rng, context=[2])
    iters = len(res.tokens_per_iteration)
    assert res.tokens.shape == (n,) and res.tokens.dtype == np.int64
    assert ((res.tokens >= 0) & (res.tokens < 5)).all()
    n_it = res.tokens_per_iteration
    assert ((n_it >= 1) & (n_it <= k + 1)).all()
    assert n_it[:-1].sum() < n <= n_it.sum()  # only the last iteration may be cut
    np.testing.assert_array_equal(res.accepted_per_iteration, n_it - 1)
    assert res.target_calls == iters and res.draft_calls == k * iters
    assert res.alpha_per_position.shape == (iters, k)
    assert ((res.alpha_per_position >= 0) & (res.alpha_per_position <= 1 + 1e-12)).all()
    assert res.k == k
    assert res.mean_tokens_per_iteration == pytest.approx(n_it.mean())
    if k == 0:
        assert (n_it == 1).all() and res.acceptance_rate == 0.0
    else:
        assert res.acceptance_rate == pytest.approx(res.accepted_per_iteration.sum() / (k * iters))


def test_identical_draft_accepts_everything(rng):
    target, draft = toy.toy_pair(4, 1.0, seed=5)
    res = toy.speculative_decode(target, draft, 100, 4, rng)
    assert (res.tokens_per_iteration == 5).all()
    assert res.acceptance_rate == 1.0
    np.testing.assert_allclose(res.alpha_per_position, 1.0)


def test_decode_mean_tokens_matches_expected_tokens_when_alpha_is_constant(rng):
    """A draft whose α is the same in every context: the decode's N follows the i.i.d. model.

    Target rows are permutations of one vector, draft rows the same permutations of another,
    so α(context) is constant. 4000 tokens; the mean of N is compared with E[N] within
    4 standard errors (false-alarm rate ≈ 6e-5; the seed is fixed).
    """
    base_p, base_q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    perms = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    target = toy.MarkovLM(np.array([base_p[pr] for pr in perms]), base_p)
    draft = toy.MarkovLM(np.array([base_q[pr] for pr in perms]), base_q)
    alpha = sm.acceptance_probability(base_p, base_q)
    k = 3
    res = toy.speculative_decode(target, draft, 4000, k, rng, context=[0])
    np.testing.assert_allclose(res.alpha_per_position, alpha)
    n_it = res.tokens_per_iteration
    se = np.sqrt(np.dot((np.arange(1, k + 2) - sm.expected_tokens(alpha, k)) ** 2,
                        sm.tokens_per_iteration_pmf(alpha, k)) / len(n_it))
    assert abs(n_it.mean() - sm.expected_tokens(alpha, k)) < 4 * se
    assert res.acceptance_rate == pytest.approx(sm.acceptance_rate_from_alpha(alpha, k), abs=0.05)


def test_autoregressive_decode_has_one_token_per_iteration(rng):
    target, _ = toy.toy_pair(3, 0.5)
    res = toy.autoregressive_decode(target, 40, rng)
    assert res.tokens.shape == (40,)
    assert (res.tokens_per_iteration == 1).all() and res.target_calls == 40
    assert res.draft_calls == 0 and res.acceptance_rate == 0.0


def test_decoding_is_reproducible_with_a_seed():
    target, draft = toy.toy_pair(4, 0.3, seed=9)
    a = toy.speculative_decode(target, draft, 60, 3, np.random.default_rng(1)).tokens
    b = toy.speculative_decode(target, draft, 60, 3, np.random.default_rng(1)).tokens
    np.testing.assert_array_equal(a, b)


def test_transition_counts():
    c = toy.transition_counts([0, 1, 1, 2], 3)
    np.testing.assert_array_equal(c, [[0, 1, 0], [0, 1, 1], [0, 0, 0]])
    c = toy.transition_counts([[0, 1], [2, 2]], 3, context_last=1)
    np.testing.assert_array_equal(c, [[0, 1, 0], [1, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(toy.transition_counts([], 2), np.zeros((2, 2)))
