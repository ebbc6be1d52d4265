"""Chapters 3 and 4: the formulas they derive, the helpers they add to specmath
(``specmath.tv``, ``specmath.markov_tokens``), their figures, explorers and exercise answers."""

from __future__ import annotations

from fractions import Fraction

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import specmath as sm  # noqa: E402
from specmath.exercises import _REGISTRY, check, exercise_keys  # noqa: E402
from specmath.markov_tokens import expected_tokens_markov, iteration_chain  # noqa: E402
from specmath.tv import (  # noqa: E402
    MAX_ENUM_VOCAB,
    all_events,
    best_guess_accuracy,
    bump_logits,
    event_gaps,
    guess_accuracies,
    max_event_gap,
    overlap_pair,
)


def _pair(seed: int, V: int, conc: float = 0.7):
    r = np.random.default_rng(seed)
    return r.dirichlet(np.full(V, conc)), r.dirichlet(np.full(V, conc))


# ---- chapter 3: α, TV and what TV means ----------------------------------------------

@given(st.integers(0, 10_000), st.integers(1, 10), st.sampled_from([0.05, 0.5, 5.0]))
def test_max_event_gap_equals_tv_and_is_attained_at_p_greater_than_q(seed, V, conc):
    p, q = _pair(seed, V, conc)
    gap, event = max_event_gap(p, q)
    tv = sm.tv_distance(p, q)
    assert gap == pytest.approx(tv, abs=1e-12)
    # {p > q} attains it (argmax may pick another event only on exact ties)
    assert sum(p[p > q]) - sum(q[p > q]) == pytest.approx(tv, abs=1e-12)
    _, gaps = event_gaps(p, q)
    assert gaps.min() == pytest.approx(-tv, abs=1e-12)


@given(st.integers(0, 10_000), st.integers(1, 10))
def test_best_guess_accuracy_is_one_plus_tv_over_two_and_beats_every_rule(seed, V):
    p, q = _pair(seed, V)
    best = best_guess_accuracy(p, q)
    _, acc = guess_accuracies(p, q)
    assert best == pytest.approx((1 + sm.tv_distance(p, q)) / 2, abs=1e-12)
    assert acc.max() == pytest.approx(best, abs=1e-12)
    assert (acc <= best + 1e-12).all()


@given(st.integers(0, 10_000), st.integers(1, 60), st.floats(0.0, 1.0))
def test_alpha_is_linear_in_the_mixing_weight(seed, V, w):
    p, q = _pair(seed, V)
    a0 = sm.acceptance_probability(p, q)
    assert sm.acceptance_probability(p, sm.mix(p, q, w)) == pytest.approx(w + (1 - w) * a0,
                                                                          abs=1e-12)
    assert sm.tv_distance(p, sm.mix(p, q, w)) == pytest.approx((1 - w) * (1 - a0), abs=1e-12)


@given(st.integers(0, 10_000), st.integers(2, 40), st.floats(0.0, 0.95))
def test_mixing_closes_a_constant_amount_and_a_growing_fraction_of_the_gap(seed, V, w):
    """Issue 9 item 4: dα/dw = 1 − α₀ (same amount); fraction of remaining gap = 1/(1 − w)."""
    p, q = _pair(seed, V)
    a0 = sm.acceptance_probability(p, q)
    h = 1e-3
    a = sm.acceptance_probability(p, sm.mix(p, q, w))
    a_h = sm.acceptance_probability(p, sm.mix(p, q, w + h))
    assert (a_h - a) / h == pytest.approx(1 - a0, abs=1e-8)
    if a0 < 1 - 1e-6:
        assert ((a_h - a) / h) / (1 - a) == pytest.approx(1 / (1 - w), rel=1e-6)


def test_sharpened_copy_over_proposes_only_tokens_above_the_threshold_not_every_mode():
    """Issue 9 item 9: at T = 0.5 the second mode (token 8) is under-proposed."""
    T = 0.5
    p, q = overlap_pair(0.0, T)
    Z = (p ** (1 / T)).sum()
    tau = Z ** (T / (1 - T))
    np.testing.assert_array_equal(q > p, p > tau)
    assert sm.acceptance_probability(p, q) == pytest.approx(q[p <= tau].sum() + p[p > tau].sum(),
                                                            abs=1e-15)
    peaks = [i for i in range(1, p.size - 1) if p[i - 1] < p[i] > p[i + 1]]
    assert len(peaks) == 2
    main, second = max(peaks, key=lambda i: p[i]), min(peaks, key=lambda i: p[i])
    assert q[main] > p[main] and q[second] < p[second] and second == 8
    assert round(p[8], 3) == 0.108 and round(q[8], 3) == 0.104


def _sinkhorn_coupling(q, p, rng, sweeps=200):
    J = rng.gamma(0.3, size=(q.size, p.size)) + 1e-12
    for _ in range(sweeps):
        J *= (q / J.sum(axis=1))[:, None]
        J *= (p / J.sum(axis=0))[None, :]
    return J


@pytest.mark.parametrize("seed", range(5))
def test_coupling_inequality_holds_for_random_couplings_and_is_attained_by_the_rule(seed):
    rng = np.random.default_rng(seed)
    p, q = _pair(seed, 8)
    tv = sm.tv_distance(p, q)
    for _ in range(40):
        J = _sinkhorn_coupling(q, p, rng)
        assert np.allclose(J.sum(axis=0), p) and np.allclose(J.sum(axis=1), q, atol=1e-8)
        assert 1 - np.trace(J) >= tv - 1e-8
    keep = np.minimum(1.0, np.divide(p, q, out=np.ones_like(p), where=q > 0))
    J = np.diag(q * keep) + np.outer(q * (1 - keep), sm.residual_distribution(p, q))
    assert 1 - np.trace(J) == pytest.approx(tv, abs=1e-12)


def test_geometric_mixing_is_not_linear_in_alpha():
    p, q = overlap_pair(1.0)
    ws = np.linspace(0, 1, 21)
    a0 = sm.acceptance_probability(p, q)
    geo = [sm.acceptance_probability(p, sm.softmax((1 - w) * np.log(q) + w * np.log(p)))
           for w in ws]
    assert np.max(np.abs(np.array(geo) - (ws + (1 - ws) * a0))) > 1e-3


def test_flattened_draft_beats_sharpened_at_every_shift_and_unchanged_only_when_far():
    """Chapter 3's shift sweep: no 'order flip' between sharp and flat drafts."""
    shifts = np.linspace(-4, 4, 33)
    a = np.array([[sm.acceptance_probability(*overlap_pair(s, t)) for s in shifts]
                  for t in (0.5, 1.0, 2.0)])
    assert (a[2] > a[0]).all()
    far = np.abs(shifts) >= 1
    assert (a[2, far] > a[1, far]).all() and (a[2, ~far] < a[1, ~far]).any()


def test_block_verification_accepts_more_than_tokenwise_on_the_running_example():
    """Maximal coupling is optimal per position only: at k = 2 block verification accepts
    more drafts on average than α + α² (chapter 3's remark, chapter 9's theorem)."""
    p, q = overlap_pair(1.0)
    a = sm.acceptance_probability(p, q)
    tw = sm.expected_accepted(p, q, 2, rule="tokenwise")
    blk = sm.expected_accepted(p, q, 2)
    assert tw == pytest.approx(a + a * a, abs=1e-12)
    assert blk > tw + 1e-3
    assert blk <= sm.accepted_upper_bound(p, q, 2) + 1e-12


def test_acceptance_probability_matches_monte_carlo_of_the_rule(rng):
    # G-test at level 1e-3: false-alarm rate 0.1% over seeds (fixed seed here, so
    # deterministic). With n = 200 000 draws an error of 0.005 in α is about 6 standard
    # errors, detected with power > 0.99.
    p, q = overlap_pair(2.0, 1.5, 0.0)
    n = 200_000
    x = rng.choice(p.size, size=n, p=q)
    acc = int((rng.random(n) * q[x] < p[x]).sum())
    a = sm.acceptance_probability(p, q)
    assert sm.stats.g_test([acc, n - acc], [a, 1 - a]).pvalue > 1e-3
    assert sm.stats.g_test([acc, n - acc], [a - 0.005, 1 - a + 0.005]).pvalue < 1e-3


def test_all_events_lists_every_subset_once():
    ev = all_events(5)
    assert ev.shape == (32, 5)
    assert len({tuple(r) for r in ev}) == 32
    assert not ev[0].any() and ev[-1].all()


def test_bad_inputs_are_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="vocab_size"):
        all_events(MAX_ENUM_VOCAB + 1)
    with pytest.raises(ValueError, match="same shape"):
        event_gaps([0.5, 0.5], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="1-D"):
        event_gaps(np.full((2, 2), 0.5), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="temperature"):
        overlap_pair(1.0, 0.0)
    with pytest.raises(ValueError, match="weight"):
        overlap_pair(1.0, 1.0, 1.5)
    with pytest.raises(ValueError, match="shift"):
        overlap_pair(np.nan)
    with pytest.raises(ValueError, match="width"):
        bump_logits(5, [1.0], [1.0], 0.0)
    with pytest.raises(ValueError, match="heights"):
        bump_logits(5, [1.0], [-1.0], 1.0)


def test_overlap_pair_is_the_target_at_zero_shift_and_unit_temperature():
    p, q = overlap_pair(0.0, 1.0, 0.0)
    assert np.allclose(p, q)
    p, q = overlap_pair(3.0, 0.7, 1.0)
    assert np.allclose(p, q)


# ---- chapter 4: N, E[N], metrics ------------------------------------------------------

def test_pmf_tail_and_mean_agree_in_exact_arithmetic():
    for a in (Fraction(0), Fraction(1, 7), Fraction(4, 5), Fraction(1)):
        for k in range(0, 9):
            pmf = [a ** (n - 1) * (1 - a) for n in range(1, k + 1)] + [a ** k]
            assert sum(pmf) == 1
            mean_pmf = sum(n * pmf[n - 1] for n in range(1, k + 2))
            mean_tail = sum(a ** (n - 1) for n in range(1, k + 2))
            assert mean_pmf == mean_tail
            assert float(mean_tail) == pytest.approx(sm.expected_tokens(float(a), k), rel=1e-12)
            assert np.allclose(sm.tokens_per_iteration_pmf(float(a), k), [float(v) for v in pmf])


def test_simulated_tokens_per_iteration_follow_the_truncated_geometric(rng):
    # G-test at level 1e-3 (false-alarm rate 0.1 %). Power against the α − 0.01 law at
    # n = 200 000, from the noncentral chi-square with the smaller of the two usual
    # noncentralities, is computed and required to exceed 0.99; then the test must reject
    # the α − 0.01 law on the same counts.
    from scipy import stats as sps

    n = 200_000
    for alpha, k in [(0.8, 5), (0.3, 2), (0.95, 10)]:
        p0 = sm.tokens_per_iteration_pmf(alpha, k)
        p1 = sm.tokens_per_iteration_pmf(alpha - 0.01, k)
        lam = min(2 * n * (p0 * np.log(p0 / p1)).sum(), n * ((p0 - p1) ** 2 / p1).sum())
        assert sps.ncx2.sf(sps.chi2.isf(1e-3, k), k, lam) > 0.99
        s = sm.simulate_tokens_per_iteration(alpha, k, n, rng)
        counts = np.bincount(s, minlength=k + 2)[1:]
        assert sm.stats.g_test(counts, p0).pvalue > 1e-3
        assert sm.stats.g_test(counts, p1).pvalue < 1e-3


def test_limits_of_expected_tokens():
    assert sm.expected_tokens(1e-12, 7) == pytest.approx(1.0)
    assert sm.expected_tokens(1 - 1e-10, 7) == pytest.approx(8.0, rel=1e-6)
    assert sm.expected_tokens(0.9, 5000) == pytest.approx(10.0)
    # chapter 4's figure caption: for α ≤ 1/2 no draft length gives more than two tokens
    assert np.all(sm.expected_tokens(np.linspace(0, 0.5, 51)[:, None], np.arange(60)) <= 2)
    # and its explorer text: the last bar of the pmf is the tallest iff α^k > 1 − α
    for a in np.linspace(0.05, 0.95, 19):
        for k in range(1, 12):
            pm = sm.tokens_per_iteration_pmf(a, k)
            assert (pm[-1] > pm[:-1].max()) == (a ** k > 1 - a)


def test_reported_metrics_relations_and_the_vllm_example():
    assert sm.acceptance_rate_from_alpha(0.8, 5) == pytest.approx(0.537856, rel=1e-9)
    for a in (0.5, 0.7, 0.9):
        for k in (1, 3, 8):
            r = sm.acceptance_rate_from_alpha(a, k)
            tau = sm.mean_tokens_from_alpha(a, k)
            assert tau == pytest.approx(1 + k * r)
            assert sm.alpha_from_acceptance_rate(r, k) == pytest.approx(a, abs=1e-9)
            assert sm.alpha_from_mean_tokens(tau, k) == pytest.approx(a, abs=1e-9)
            if k > 1:
                assert r < a


# ---- specmath.markov_tokens -----------------------------------------------------------

def test_iteration_kernel_is_stochastic_and_trivial_cases_are_exact():
    t, d = sm.toy.toy_pair(5, 0.5, seed=3)
    ch = iteration_chain(t, d, 3)
    assert np.allclose(ch.kernel.sum(axis=1), 1.0)
    assert ch.stationary @ ch.kernel == pytest.approx(ch.stationary, abs=1e-10)
    assert expected_tokens_markov(t, d, 0) == pytest.approx(1.0)
    same = sm.toy.toy_pair(5, 1.0, seed=3)
    assert expected_tokens_markov(*same, 4) == pytest.approx(5.0)


def test_markov_prediction_reduces_to_iid_formula_when_rows_are_identical():
    r = np.random.default_rng(0)
    p, q = r.dirichlet(np.ones(4)), r.dirichlet(np.ones(4))
    t = sm.toy.MarkovLM(np.tile(p, (4, 1)), p)
    d = sm.toy.MarkovLM(np.tile(q, (4, 1)), q)
    for k in (1, 3, 6):
        assert expected_tokens_markov(t, d, k) == pytest.approx(
            sm.expected_tokens(sm.acceptance_probability(p, q), k), rel=1e-12)


def test_markov_prediction_matches_a_long_speculative_decode(rng):
    # t-test on 20 independent decodes (their means are independent even though iterations
    # within a decode are not): |t| < 4 on 19 degrees of freedom has a false-alarm rate
    # 2 P(t_19 > 4) ≈ 8e-4 (asserted below); power against an error of 0.1 tokens in the
    # prediction, from the noncentral t at the observed standard error, must exceed 0.99.
    from scipy import stats as sps

    t, d = sm.toy.toy_pair(6, 0.6, seed=0)
    k = 4
    means = [sm.toy.speculative_decode(t, d, 2_000, k, rng, context=(0,)).mean_tokens_per_iteration
             for _ in range(20)]
    se = np.std(means, ddof=1) / np.sqrt(len(means))
    df = len(means) - 1
    assert 2 * sps.t.sf(4, df) < 1e-3
    assert sps.nct.sf(4, df, 0.1 / se) > 0.99
    assert abs(np.mean(means) - expected_tokens_markov(t, d, k)) < 4 * se


def test_iteration_kernel_equals_sum_of_m_power_r_plus_m_power_k_p_and_matches_decodes(rng):
    # Kernel T = Σ_{n<k} MⁿR + MᵏP (ch. 4, eq. ch4-kernel) by hand; then a row-wise G-test of
    # observed start-state transitions in 6 decodes at level 1e-3 (false-alarm rate 0.1 %).
    # Power: against the kernel that draws corrections from p (λ computed below) ≥ 0.99.
    from scipy import stats as sps

    t, d = sm.toy.toy_pair(6, 0.6, seed=0)
    k = 4
    P, Q = t.transition, d.transition
    M, R = np.minimum(P, Q), np.maximum(P - Q, 0)
    mp = np.linalg.matrix_power
    T = sum(mp(M, n) @ R for n in range(k)) + mp(M, k) @ P
    chain = iteration_chain(t, d, k)
    np.testing.assert_allclose(chain.kernel, T, atol=1e-14)
    np.testing.assert_allclose(T.sum(axis=1), 1, atol=1e-12)
    trans = np.zeros((6, 6))
    for _ in range(6):
        r = sm.toy.speculative_decode(t, d, 3_000, k, rng, context=(0,))
        ends = np.cumsum(r.tokens_per_iteration)
        ends = ends[ends <= len(r.tokens)] - 1
        starts = np.concatenate([[0], r.tokens[ends[:-1]]])
        np.add.at(trans, (starts, r.tokens[ends]), 1)
    assert sm.stats.g_test(trans, T).pvalue > 1e-3
    alpha = M.sum(axis=1)
    wrong = sum(mp(M, n) @ ((1 - alpha)[:, None] * P) for n in range(k)) + mp(M, k) @ P
    n_row = trans.sum(axis=1)
    lam = min(2 * n_row @ (wrong * np.log(wrong / T)).sum(axis=1),
              n_row @ ((wrong - T) ** 2 / T).sum(axis=1))
    assert sps.ncx2.sf(sps.chi2.isf(1e-3, 30), 30, lam) > 0.99
    assert sm.stats.g_test(trans, wrong).pvalue < 1e-3


def test_stationary_law_is_invariant_and_renewal_reward_gives_the_long_run_mean():
    from specmath.markov_tokens import stationary_law

    t, d = sm.toy.toy_pair(6, 0.6, seed=0)
    chain = iteration_chain(t, d, 4)
    pi = stationary_law(chain.kernel)
    np.testing.assert_allclose(pi @ chain.kernel, pi, atol=1e-12)
    assert pi.sum() == pytest.approx(1.0) and (pi >= 0).all()
    assert chain.mean_tokens == pytest.approx(pi @ chain.expected_tokens, rel=1e-12)


def test_heterogeneity_raises_and_position_correlation_lowers_en_for_the_chapter_4_pair():
    # The decomposition chapter 4 reports, exactly: Jensen across iterations (start states
    # with their own α kept at every position) against correlation between positions.
    t, d = sm.toy.toy_pair(6, 0.6, seed=0)
    k = 4
    chain = iteration_chain(t, d, k)
    pi, a = chain.stationary, chain.alpha_by_state
    het = pi @ sm.expected_tokens(a, k)
    iid_first = sm.expected_tokens(pi @ a, k)
    assert het > iid_first + 0.02
    assert chain.mean_tokens < het - 0.03
    # why the correlation term is negative here: later positions forget the start token.
    # P(N ≥ n+1 | N ≥ n, s), n ≥ 2, lies below α(s) for the easiest start and above it
    # for the hardest, and pooled over π it is below the first-position rate.
    M = np.minimum(t.transition, d.transition)
    reach = np.array([np.linalg.matrix_power(M, n) @ np.ones(6) for n in range(k + 1)])
    later = reach[2:] / reach[1:-1]
    assert np.all(later[:, np.argmax(a)] < a.max())
    assert np.all(later[:, np.argmin(a)] > a.min())
    assert np.all((pi @ reach[2:].T) / (pi @ reach[1:-1].T) < pi @ a)
    # the correlation term has no fixed sign: positive for another pair (chapter 4 quotes
    # it), while the heterogeneity term stays non-negative (Jensen)
    cp = iteration_chain(*sm.toy.toy_pair(4, 0.3, seed=1), k)
    het_p = cp.stationary @ sm.expected_tokens(cp.alpha_by_state, k)
    assert het_p >= sm.expected_tokens(cp.stationary @ cp.alpha_by_state, k)
    assert cp.mean_tokens - het_p > 0.01
    # with one context (identical rows) neither effect exists
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
    t1, d1 = sm.toy.MarkovLM(np.tile(p, (3, 1)), p), sm.toy.MarkovLM(np.tile(q, (3, 1)), q)
    c1 = iteration_chain(t1, d1, k)
    assert c1.mean_tokens == pytest.approx(
        c1.stationary @ sm.expected_tokens(c1.alpha_by_state, k), rel=1e-12)


def test_variance_of_n_closed_form_equals_pmf_variance_exactly():
    def var_closed(a, k):
        return (a - (2 * k + 1) * (1 - a) * a ** (k + 1) - a ** (2 * k + 2)) / (1 - a) ** 2

    for a in (Fraction(1, 3), Fraction(4, 5), Fraction(97, 100)):
        for k in range(0, 9):
            pmf = [a ** (n - 1) * (1 - a) for n in range(1, k + 1)] + [a ** k]
            mean = sum(n * w for n, w in enumerate(pmf, start=1))
            second = sum(n * n * w for n, w in enumerate(pmf, start=1))
            assert var_closed(a, k) == second - mean ** 2
    assert check("ch4-ex2", var_closed(0.8, 5), quiet=True)


def test_iteration_chain_rejects_bad_input():
    t, d = sm.toy.toy_pair(4, 0.5)
    t5, _ = sm.toy.toy_pair(5, 0.5)
    with pytest.raises(ValueError, match="vocabulary"):
        iteration_chain(t5, d, 2)
    with pytest.raises(ValueError, match="k"):
        iteration_chain(t, d, -1)
    with pytest.raises(ValueError, match="MarkovLM"):
        iteration_chain(np.eye(4), d, 2)


# ---- figures, explorers, exercises ----------------------------------------------------

def test_chapter_3_and_4_figures_are_returned_without_error():
    from specmath.plots.overlap import (
        plot_alpha_vs_shift,
        plot_alpha_vs_weight,
        plot_event_gaps,
        plot_overlap,
    )
    from specmath.plots.tokens import plot_acceptance_rate, plot_expected_tokens, plot_pmf
    from specmath.widgets.overlap import overlap_figure
    from specmath.widgets.tokens import tokens_figure

    p, q = overlap_pair(1.0)
    figs = [plot_overlap(p, q), plot_event_gaps(p, q), plot_alpha_vs_weight(p, q, mark=0.3),
            plot_alpha_vs_shift(np.linspace(-2, 2, 5), (0.5, 1.0)),
            plot_pmf(0.8, 5, samples=np.array([1, 2, 6, 6])), plot_pmf(0.0, 0),
            plot_expected_tokens(), plot_acceptance_rate(),
            overlap_figure(-2.0, 2.0, 0.5), tokens_figure(1.0, 16, 100, 1)]
    for f in figs:
        assert isinstance(f, matplotlib.figure.Figure)
        plt.close(f)


def test_explorers_return_their_controls():
    from specmath.widgets.overlap import overlap_explorer
    from specmath.widgets.tokens import tokens_explorer

    box = overlap_explorer()
    assert [c.description for c in box.children] == ["shift", "temperature", "mix weight w"]
    box = tokens_explorer()
    assert [c.description for c in box.children] == ["α", "k", "iterations", "seed"]
    assert tokens_explorer(show_controls=False) is None
    plt.close("all")


def _markov_long_run_by_power_iteration():
    """ch4-ex6 computed independently: T by its definition, π by power iteration."""
    t, d = sm.toy.toy_pair(5, 0.5, seed=2)
    P, Q = t.transition, d.transition
    M, R = np.minimum(P, Q), np.maximum(P - Q, 0)       # k = 3 drafted tokens
    T = R + M @ R + M @ M @ R + M @ M @ M @ P
    EN = np.ones(5) + M.sum(axis=1) + (M @ M).sum(axis=1) + (M @ M @ M).sum(axis=1)
    pi = np.full(5, 0.2)
    for _ in range(2_000):
        pi = pi @ T
    return pi @ EN


@pytest.mark.parametrize("key", [k for k in ("ch3-ex1", "ch3-ex2", "ch3-ex3", "ch3-ex4",
                                             "ch3-ex5", "ch4-ex1", "ch4-ex2", "ch4-ex3",
                                             "ch4-ex4", "ch4-ex5", "ch4-ex6")])
def test_exercise_answers_are_registered_and_accept_an_independent_computation(key):
    import math

    p1, q1 = overlap_pair(2.0)
    p, q = overlap_pair(1.0)
    independent = {
        "ch3-ex1": np.minimum(p1, q1).sum(),
        "ch3-ex2": (0.9 - np.minimum(p1, q1).sum()) / (1 - np.minimum(p1, q1).sum()),
        "ch3-ex3": np.minimum(*overlap_pair(0.0, 0.5)).sum(),
        "ch3-ex4": np.maximum(0.75 * p, 0.25 * q).sum(),
        "ch3-ex5": 0.5 * np.abs(p - q).sum(),
        "ch4-ex1": [sum(0.7 ** i for i in range(7)), sum(0.8 ** i for i in range(7))],
        "ch4-ex2": sum((2 * n - 1) * 0.8 ** (n - 1) for n in range(1, 7))
                   - sum(0.8 ** i for i in range(6)) ** 2,
        # issue 16, S31: two readings, k = 2 (a quadratic) and k = 4 (a bisection)
        "ch4-ex3": [(math.sqrt(1 + 8 * 0.7) - 1) / 2, sm.alpha_from_acceptance_rate(0.6, 4),
                    1 + 4 * 0.6],
        "ch4-ex4": math.ceil(math.log(0.05) / math.log(0.9) - 1),
        # share of tokens from full iterations: (k + 1) α^k / E[N] (issue 16: retuned)
        "ch4-ex5": 4 * 0.6 ** 3 / sum(0.6 ** i for i in range(4)),
        "ch4-ex6": _markov_long_run_by_power_iteration(),
    }
    assert key in exercise_keys() and key in _REGISTRY
    assert check(key, independent[key], quiet=True)


def test_ch4_ex5_token_share_of_full_iterations_matches_a_long_simulation_and_exceeds_alpha_k():
    rng = np.random.default_rng(11)
    a, k, n = 0.6, 3, 200_000
    N = sm.simulate_tokens_per_iteration(a, k, n, rng)
    share = N[N == k + 1].sum() / N.sum()
    exact = (k + 1) * a ** k / sum(a ** i for i in range(k + 1))
    # 5 delta-method standard errors: a false alarm below 1e-6
    resid = np.where(N == k + 1, N, 0) - share * N
    se = np.sqrt(np.var(resid, ddof=1) / n) / N.mean()
    assert abs(share - exact) < 5 * se
    assert exact > a ** k
    # the iteration share α^k would be rejected: it is far outside the band
    assert abs(share - a ** k) > 20 * se


def test_ch4_perfect_draft_decode_emits_k_plus_1_and_start_states_follow_p_to_the_k_plus_1():
    # R3 finding 6: run speculative decoding with q = p instead of writing out M = P,
    # R = 0. Every iteration must emit k + 1 tokens, and the start states' transitions
    # must match P^{k+1} row by row (Hoeffding + union bound: false alarm < 1e-5); the
    # kernel one step short, P^k, must be rejected at this sample size
    target, _ = sm.toy.toy_pair(vocab_size=5, closeness=0.5, seed=2)
    P = target.transition
    for k in (1, 3):
        res = sm.toy.speculative_decode(target, target, 30_000 * (k + 1), k,
                                        np.random.default_rng(k), context=[0])
        assert (np.asarray(res.tokens_per_iteration) == k + 1).all()
        starts = np.concatenate([[0], np.asarray(res.tokens)[k::k + 1]])
        cnt = np.zeros((5, 5))
        np.add.at(cnt, (starts[:-1], starts[1:]), 1)
        n_s = cnt.sum(axis=1)
        t_s = np.sqrt(np.log((2 ** 5 - 2) * 5 / 1e-5) / (2 * n_s))

        def tv_rows(K, cnt=cnt, n_s=n_s):
            return 0.5 * np.abs(cnt / n_s[:, None] - K).sum(axis=1)

        assert (tv_rows(np.linalg.matrix_power(P, k + 1)) < t_s).all()
        assert (tv_rows(np.linalg.matrix_power(P, k)) > t_s).any()


def test_ch4_ex4_draft_length_for_a_share_of_the_ceiling_grows_like_inverse_one_minus_alpha():
    import math

    f = 0.95
    for a in (0.9, 0.99, 0.999, 0.9999):
        k = math.ceil(math.log(1 - f) / math.log(a) - 1)
        assert sm.expected_tokens(a, k) >= f / (1 - a) > sm.expected_tokens(a, k - 1)
        if a >= 0.99:
            assert abs(k * (1 - a) / math.log(1 / (1 - f)) - 1) < 20 * (1 - a) + 1e-3


def test_ch4_ex3_needs_a_by_hand_inversion_and_heterogeneity_never_lowers_the_implied_alpha():
    # issue 16, S31: exercise 4.3 is no longer one library call. Its first reading is at
    # k = 2, where the rate is the quadratic (α + α²)/2; its second at k = 4; and part (d)
    # claims that when α varies across iterations (fixed within one) the α implied by a
    # reading never falls as k grows, which the two readings show (strictly).
    from specmath.exercises import ch4 as ex4

    (r1, r2), (k1, k2) = ex4.EX3_RATES, ex4.EX3_KS
    assert k1 == 2 < k2
    a1 = (np.sqrt(1 + 8 * r1) - 1) / 2
    assert (a1 + a1 ** 2) / 2 == pytest.approx(r1)
    a1_, a2_, tau = _REGISTRY["ch4-ex3"].compute()
    assert a1_ == pytest.approx(a1) and a2_ > a1_ and tau == pytest.approx(1 + k2 * r2)
    assert sm.acceptance_rate_from_alpha(a2_, k2) == pytest.approx(r2)
    gen = np.random.default_rng(5)
    for _ in range(500):
        vals, w = gen.uniform(0.01, 0.999, 4), gen.dirichlet(np.ones(4) * 0.5)
        implied = [sm.alpha_from_acceptance_rate(
            sum(w @ vals ** j for j in range(1, k + 1)) / k, k) for k in range(1, 9)]
        assert (np.diff(implied) >= -1e-9).all()
    # a constant α gives the same implied α at every k (the i.i.d. case: no gap)
    assert sm.alpha_from_acceptance_rate(sm.acceptance_rate_from_alpha(0.8, 4), 4) == (
        pytest.approx(sm.alpha_from_acceptance_rate(sm.acceptance_rate_from_alpha(0.8, 2),
                                                    2)))


def test_smallest_disagreement_over_all_couplings_is_tv_by_linear_programming():
    """Coupling inequality (ch3-ex6), tight: min Pr(X ≠ Y) over every joint matrix with
    row sums q and column sums p, solved as a linear program, equals TV(p, q)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(6)
    for V in (2, 5, 9):
        A_eq = np.vstack([np.kron(np.eye(V), np.ones(V)), np.kron(np.ones(V), np.eye(V))])
        for _ in range(10):
            p, q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
            lp = linprog(-np.eye(V).ravel(), A_eq=A_eq, b_eq=np.concatenate([q, p]),
                         bounds=(0, None), method="highs")
            assert lp.status == 0
            assert 1 + lp.fun == pytest.approx(sm.tv_distance(p, q), abs=1e-9)


def test_mixing_shrinks_tv_by_a_constant_amount_and_at_relative_rate_one_over_1_minus_w():
    """Chapter 3's two readings of eq. ch3-alpha-mix, on TV computed directly:
    TV(p, q_w) = (1 − w) TV(p, q), so −dTV/dw = TV₀ and −d log TV/dw = 1/(1 − w)."""
    rng = np.random.default_rng(7)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    ws = np.linspace(0, 0.9, 91)
    tv_w = np.array([sm.tv_distance(p, sm.mix(p, q, w)) for w in ws])
    np.testing.assert_allclose(-np.diff(tv_w) / np.diff(ws), sm.tv_distance(p, q),
                               rtol=1e-9)
    rate = -np.gradient(np.log(tv_w), ws)[1:-1]
    np.testing.assert_allclose(rate, 1 / (1 - ws[1:-1]), rtol=1e-2)


def _kl(p, q):
    m = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[m] * np.log(p[m] / q[m])))


def test_pinsker_floor_on_alpha_holds_on_random_pairs_is_tight_nearby_and_fails_conversely():
    """Exercise ch3-ex7: α ≥ 1 − sqrt(KL(p‖q)/2) on random pairs; TV²/(KL/2) → 1 for
    nearby two-point pairs at one half; α = 1 − ε with KL = ∞ for q = (1, 0)."""
    rng = np.random.default_rng(8)
    for V in (2, 5, 30):
        for _ in range(200):
            p, q = rng.dirichlet(np.full(V, 0.3)), rng.dirichlet(np.full(V, 0.3))
            assert sm.acceptance_probability(p, q) >= 1 - np.sqrt(_kl(p, q) / 2) - 1e-12
    half, near = np.array([0.5, 0.5]), np.array([0.5 + 1e-3, 0.5 - 1e-3])
    assert sm.tv_distance(half, near) ** 2 / (_kl(half, near) / 2) > 0.99
    p_c, q_c = np.array([1 - 1e-3, 1e-3]), np.array([1.0, 0.0])
    assert np.isinf(_kl(p_c, q_c))
    assert sm.acceptance_probability(p_c, q_c) == pytest.approx(1 - 1e-3)


def test_pinsker_two_point_bound_holds_at_u_zero_and_one_by_the_limit_argument():
    """ch3-ex7 (a) (review R14a finding 5): for u ∈ {0, 1}, g(v) = KL((u, 1 − u) ‖
    (v, 1 − v)) − 2(u − v)² is monotone on 0 < v < 1, rising away from v = u, with
    limit 0 at v → u; so g ≥ 0 there too. Checked on a grid reaching 1e-9 of the ends,
    against a control that is negative (the same with 3(u − v)² at u = 0, v = 0.5)."""
    v = np.concatenate([np.geomspace(1e-9, 0.5, 400), 1 - np.geomspace(1e-9, 0.5, 400)])
    v = np.sort(v)
    for u in (0.0, 1.0):
        g = np.array([_kl(np.array([u, 1 - u]), np.array([x, 1 - x])) - 2 * (u - x) ** 2
                      for x in v])
        assert g.min() >= -1e-15
        rising = np.diff(g) if u == 0.0 else -np.diff(g)
        assert np.all(rising >= -1e-15)
        near = v[0] if u == 0.0 else v[-1]
        assert _kl(np.array([u, 1 - u]), np.array([near, 1 - near])) < 1e-8
    assert _kl(np.array([0.0, 1.0]), np.array([0.5, 0.5])) - 3 * 0.5 ** 2 < 0
