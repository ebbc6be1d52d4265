"""Bad input: every public function raises ValueError naming the argument and the rule.

One parametrized case per (function, rule). ``match`` is a regular expression that must
find the argument's name (and where useful the rule) in the message.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import specmath as sm
from specmath import stats, toy

P = np.array([0.5, 0.3, 0.2])
Q = np.array([0.2, 0.2, 0.6])
P2 = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])  # k = 1: target rows for position 0 + bonus
Q1 = np.array([[0.2, 0.2, 0.6]])                    # k = 1: one draft row
GOOD_RNG = np.random.default_rng(0)
TARGET, DRAFT = toy.toy_pair(3, 0.5, seed=0)

NAN = math.nan
INF = math.inf

# (id, callable, expected message regex). Each callable makes exactly one argument bad.
CASES = [
    # ---- distributions: sum, sign, NaN, inf, shape -------------------------------------
    ("tv_distance p sum", lambda: sm.tv_distance([0.5, 0.4, 0.2], Q), r"p must sum to 1"),
    ("tv_distance q negative", lambda: sm.tv_distance(P, [1.2, -0.2, 0.0]),
     r"q has negative entries"),
    ("tv_distance p NaN", lambda: sm.tv_distance([NAN, 0.5, 0.5], Q), r"p contains NaN"),
    ("tv_distance q inf", lambda: sm.tv_distance(P, [INF, 0.0, 0.0]), r"q contains inf"),
    ("tv_distance shape", lambda: sm.tv_distance(P, [0.5, 0.5]),
     r"p and q must have the same shape"),
    ("tv_distance scalar", lambda: sm.tv_distance(1.0, 1.0), r"p must have at least 1 dim"),
    ("tv_distance empty vocab", lambda: sm.tv_distance(np.zeros((2, 0)), np.zeros((2, 0))),
     r"p must have a non-empty vocabulary"),
    ("tv_distance not numbers", lambda: sm.tv_distance(["a", "b"], Q),
     r"p must be an array of probabilities"),
    ("acceptance_probability p sum", lambda: sm.acceptance_probability(P * 2, Q),
     r"p must sum to 1"),
    ("acceptance_probability q NaN", lambda: sm.acceptance_probability(P, [NAN, 0.4, 0.6]),
     r"q contains NaN"),
    ("acceptance_probability shape",
     lambda: sm.acceptance_probability(np.tile(P, (2, 1)), np.tile(Q, (3, 1))),
     r"p and q must have the same shape"),
    ("residual_distribution q negative",
     lambda: sm.residual_distribution(P, [-0.1, 0.5, 0.6]), r"q has negative entries"),
    ("residual_distribution p inf", lambda: sm.residual_distribution([INF, 0, 0], Q),
     r"p contains inf"),
    ("residual_distribution shape", lambda: sm.residual_distribution(P, [1.0]),
     r"p and q must have the same shape"),
    ("output_distribution p sum", lambda: sm.output_distribution([0.2, 0.2, 0.2], Q),
     r"p must sum to 1"),
    ("output_distribution shape", lambda: sm.output_distribution(P, [0.5, 0.5]),
     r"p and q must have the same shape"),
    ("mix p sum", lambda: sm.mix([0.9, 0.9, 0.2], Q, 0.5), r"p must sum to 1"),
    ("mix w outside", lambda: sm.mix(P, Q, 1.5), r"w must be in \[0, 1\]"),
    ("mix w NaN", lambda: sm.mix(P, Q, NAN), r"w must be in \[0, 1\]"),
    ("mix w text", lambda: sm.mix(P, Q, "half"), r"w must be in \[0, 1\]"),
    ("entropy p negative", lambda: sm.entropy([1.5, -0.5]), r"p has negative entries"),
    ("entropy base 1", lambda: sm.entropy(P, base=1), r"base must be .*> 0 and ≠ 1"),
    ("entropy base 0", lambda: sm.entropy(P, base=0), r"base must be"),
    ("top1_agreement shape", lambda: sm.top1_agreement(P, [0.5, 0.5]),
     r"p and q must have the same shape"),
    ("top1_agreement q NaN", lambda: sm.top1_agreement(P, [NAN, 0.5, 0.5]), r"q contains NaN"),
    ("naive_output_distribution rule",
     lambda: sm.naive_output_distribution(P, Q, "accept-sometimes"), r"rule must be one of"),
    ("naive_output_distribution q sum",
     lambda: sm.naive_output_distribution(P, [0.1, 0.1, 0.1], "always-accept"),
     r"q must sum to 1"),
    # ---- softmax ----------------------------------------------------------------------
    ("softmax temperature negative", lambda: sm.softmax([1.0, 2.0], -0.5),
     r"temperature must be ≥ 0"),
    ("softmax temperature NaN", lambda: sm.softmax([1.0, 2.0], NAN), r"temperature must be ≥ 0"),
    ("softmax temperature inf", lambda: sm.softmax([1.0, 2.0], INF),
     r"temperature must be finite"),
    ("softmax temperature not a number", lambda: sm.softmax([1.0, 2.0], "hot"),
     r"temperature must be a number"),
    ("softmax NaN logits", lambda: sm.softmax([1.0, NAN]), r"logits contain NaN"),
    ("softmax +inf logits", lambda: sm.softmax([1.0, INF]), r"logits contain \+inf"),
    ("softmax all -inf", lambda: sm.softmax([-INF, -INF]), r"logits: every vector needs"),
    ("softmax empty", lambda: sm.softmax([]), r"logits must have a non-empty"),
    ("softmax logits text", lambda: sm.softmax(["a", "b"]), r"logits must be an array of real"),
    # ---- speculative_step / naive_step --------------------------------------------------
    ("speculative_step p sum", lambda: sm.speculative_step(P2 * 0.9, Q1, [2], GOOD_RNG),
     r"p must sum to 1"),
    ("speculative_step q negative",
     lambda: sm.speculative_step(P2, [[1.1, -0.1, 0.0]], [0], GOOD_RNG),
     r"q has negative entries"),
    ("speculative_step p NaN",
     lambda: sm.speculative_step([[NAN, 0.5, 0.5], P], Q1, [2], GOOD_RNG), r"p contains NaN"),
    ("speculative_step p without k+1 rows",
     lambda: sm.speculative_step(P2[:1], Q1, [2], GOOD_RNG), r"p must have k\+1 = 2 rows"),
    ("speculative_step p 1-D", lambda: sm.speculative_step(P, Q1, [2], GOOD_RNG),
     r"p must have shape \(k\+1, V\)"),
    ("speculative_step q 1-D", lambda: sm.speculative_step(P2, Q, [2], GOOD_RNG),
     r"q must have shape \(k, V\)"),
    ("speculative_step vocabulary mismatch",
     lambda: sm.speculative_step(P2, [[0.5, 0.5]], [1], GOOD_RNG),
     r"p and q must share the vocabulary"),
    ("speculative_step draft_tokens float",
     lambda: sm.speculative_step(P2, Q1, [2.0], GOOD_RNG), r"draft_tokens must be integers"),
    ("speculative_step draft_tokens out of range",
     lambda: sm.speculative_step(P2, Q1, [3], GOOD_RNG), r"draft_tokens must be in \[0, V\)"),
    ("speculative_step draft_tokens negative",
     lambda: sm.speculative_step(P2, Q1, [-1], GOOD_RNG), r"draft_tokens must be in \[0, V\)"),
    ("speculative_step draft_tokens wrong length",
     lambda: sm.speculative_step(P2, Q1, [0, 1], GOOD_RNG), r"draft_tokens must have shape"),
    ("speculative_step draft token impossible under q",
     lambda: sm.speculative_step(P2, [[0.5, 0.5, 0.0]], [2], GOOD_RNG),
     r"draft_tokens\[0\] = 2 has probability 0 under q"),
    ("speculative_step rng not a Generator",
     lambda: sm.speculative_step(P2, Q1, [2], np.random.RandomState(0)),
     r"rng must be a numpy.random.Generator"),
    ("speculative_step rng an int", lambda: sm.speculative_step(P2, Q1, [2], 0),
     r"rng must be a numpy.random.Generator"),
    ("naive_step rule", lambda: sm.naive_step(P2, Q1, [2], GOOD_RNG, "accept-sometimes"),
     r"rule must be one of"),
    ("naive_step p without k+1 rows",
     lambda: sm.naive_step(P2, np.tile(Q1, (2, 1)), [2, 2], GOOD_RNG, "always-accept"),
     r"p must have k\+1 = 3 rows"),
    ("naive_step draft_tokens out of range",
     lambda: sm.naive_step(P2, Q1, [7], GOOD_RNG, "resample-from-p"),
     r"draft_tokens must be in \[0, V\)"),
    ("naive_step rng", lambda: sm.naive_step(P2, Q1, [2], None, "accept-if-top"),
     r"rng must be a numpy.random.Generator"),
    # ---- α, k, c ----------------------------------------------------------------------
    ("expected_tokens alpha > 1", lambda: sm.expected_tokens(1.2, 3), r"alpha must be in \[0, 1\]"),
    ("expected_tokens alpha < 0", lambda: sm.expected_tokens(-0.1, 3),
     r"alpha must be in \[0, 1\]"),
    ("expected_tokens alpha NaN", lambda: sm.expected_tokens(NAN, 3),
     r"alpha must be in \[0, 1\]; got NaN"),
    ("expected_tokens alpha in grid", lambda: sm.expected_tokens([0.2, 1.5], 3),
     r"alpha must be in \[0, 1\]; got 1.5"),
    ("expected_tokens alpha text", lambda: sm.expected_tokens("high", 3),
     r"alpha must be a real number"),
    ("expected_tokens k negative", lambda: sm.expected_tokens(0.5, -1), r"k must be an integer ≥ 0"),
    ("expected_tokens k non-integer", lambda: sm.expected_tokens(0.5, 2.5),
     r"k must be an integer ≥ 0; got a non-integer"),
    ("expected_tokens k NaN", lambda: sm.expected_tokens(0.5, NAN), r"k must be a finite integer"),
    ("expected_tokens k bool", lambda: sm.expected_tokens(0.5, True), r"k must be an integer"),
    ("expected_tokens k text", lambda: sm.expected_tokens(0.5, "five"), r"k must be an integer"),
    ("tokens_per_iteration_pmf alpha", lambda: sm.tokens_per_iteration_pmf(2.0, 3),
     r"alpha must be in \[0, 1\]"),
    ("tokens_per_iteration_pmf k array", lambda: sm.tokens_per_iteration_pmf(0.5, [2, 3]),
     r"k must be an integer"),
    ("tokens_per_iteration_pmf k negative", lambda: sm.tokens_per_iteration_pmf(0.5, -2),
     r"k must be an integer ≥ 0"),
    ("speedup alpha NaN", lambda: sm.speedup(NAN, 3, 10), r"alpha must be in \[0, 1\]"),
    ("speedup k non-integer", lambda: sm.speedup(0.8, 1.5, 10), r"k must be an integer"),
    ("speedup c zero", lambda: sm.speedup(0.8, 3, 0), r"c must be > 0"),
    ("speedup c negative", lambda: sm.speedup(0.8, 3, -2), r"c must be > 0"),
    ("speedup c NaN", lambda: sm.speedup(0.8, 3, NAN), r"c must be a positive number; got NaN"),
    ("speedup c text", lambda: sm.speedup(0.8, 3, "fast"), r"c must be a positive number"),
    ("speedup_with_verification_cost verify_cost zero",
     lambda: sm.speedup_with_verification_cost(0.8, 3, 10, 0.0), r"verify_cost must be > 0"),
    ("speedup_with_verification_cost verify_cost inf",
     lambda: sm.speedup_with_verification_cost(0.8, 3, 10, INF), r"verify_cost must be finite"),
    ("speedup_with_verification_cost c NaN",
     lambda: sm.speedup_with_verification_cost(0.8, 3, NAN, 1.0), r"c must be"),
    ("speedup_with_verification_cost alpha",
     lambda: sm.speedup_with_verification_cost(-1, 3, 10, 1.0), r"alpha must be in \[0, 1\]"),
    ("leviathan_walltime_improvement c_leviathan negative",
     lambda: sm.leviathan_walltime_improvement(0.8, 3, -0.1), r"c_leviathan must be"),
    ("leviathan_walltime_improvement c_leviathan NaN",
     lambda: sm.leviathan_walltime_improvement(0.8, 3, NAN), r"c_leviathan must be"),
    ("leviathan_walltime_improvement c_leviathan text",
     lambda: sm.leviathan_walltime_improvement(0.8, 3, "cheap"), r"c_leviathan must be"),
    ("leviathan_walltime_improvement gamma", lambda: sm.leviathan_walltime_improvement(0.8, -3, 0.1),
     r"gamma must be an integer ≥ 0"),
    ("leviathan_walltime_improvement alpha",
     lambda: sm.leviathan_walltime_improvement(1.01, 3, 0.1), r"alpha must be in \[0, 1\]"),
    ("optimal_k c zero", lambda: sm.optimal_k(0.8, 0.0), r"c must be > 0"),
    ("optimal_k c NaN", lambda: sm.optimal_k(0.8, NAN), r"c must be a positive number"),
    ("optimal_k alpha", lambda: sm.optimal_k(-0.5, 10), r"alpha must be in \[0, 1\]"),
    ("optimal_k k_max negative", lambda: sm.optimal_k(0.8, 10, k_max=-1),
     r"k_max must be an integer ≥ 0"),
    ("optimal_k k_max non-integer", lambda: sm.optimal_k(0.8, 10, k_max=6.5),
     r"k_max must be an integer"),
    ("optimal_k_continuous c inf", lambda: sm.optimal_k_continuous(0.8, INF), r"c must be finite"),
    ("optimal_k_continuous c zero", lambda: sm.optimal_k_continuous(0.8, 0), r"c must be > 0"),
    ("optimal_k_continuous alpha NaN", lambda: sm.optimal_k_continuous(NAN, 10),
     r"alpha must be in \[0, 1\]"),
    ("acceptance_rate_from_alpha k zero", lambda: sm.acceptance_rate_from_alpha(0.8, 0),
     r"k must be an integer ≥ 1"),
    ("acceptance_rate_from_alpha alpha", lambda: sm.acceptance_rate_from_alpha(1.5, 5),
     r"alpha must be in \[0, 1\]"),
    ("alpha_from_acceptance_rate rate", lambda: sm.alpha_from_acceptance_rate(1.2, 5),
     r"rate must be in \[0, 1\]"),
    ("alpha_from_acceptance_rate rate NaN", lambda: sm.alpha_from_acceptance_rate(NAN, 5),
     r"rate must be in \[0, 1\]"),
    ("alpha_from_acceptance_rate k", lambda: sm.alpha_from_acceptance_rate(0.5, 0),
     r"k must be an integer ≥ 1"),
    ("mean_tokens_from_alpha alpha", lambda: sm.mean_tokens_from_alpha(-0.2, 5),
     r"alpha must be in \[0, 1\]"),
    ("mean_tokens_from_alpha k", lambda: sm.mean_tokens_from_alpha(0.5, 0.5), r"k must be an integer"),
    ("alpha_from_mean_tokens tau too large", lambda: sm.alpha_from_mean_tokens(7.0, 5),
     r"tau must be in \[1, k\+1\]"),
    ("alpha_from_mean_tokens tau below 1", lambda: sm.alpha_from_mean_tokens(0.5, 5),
     r"tau must be in \[1, k\+1\]"),
    ("alpha_from_mean_tokens tau NaN", lambda: sm.alpha_from_mean_tokens(NAN, 5),
     r"tau must be a number"),
    ("alpha_from_mean_tokens tau text", lambda: sm.alpha_from_mean_tokens("two", 5),
     r"tau must be a number"),
    ("alpha_from_mean_tokens k", lambda: sm.alpha_from_mean_tokens(2.0, -5),
     r"k must be an integer ≥ 0"),
    ("simulate_tokens_per_iteration alpha",
     lambda: sm.simulate_tokens_per_iteration(1.5, 3, 10, GOOD_RNG), r"alpha must be in \[0, 1\]"),
    ("simulate_tokens_per_iteration k",
     lambda: sm.simulate_tokens_per_iteration(0.5, -3, 10, GOOD_RNG), r"k must be an integer ≥ 0"),
    ("simulate_tokens_per_iteration n_iterations negative",
     lambda: sm.simulate_tokens_per_iteration(0.5, 3, -10, GOOD_RNG),
     r"n_iterations must be an integer ≥ 0"),
    ("simulate_tokens_per_iteration n_iterations array",
     lambda: sm.simulate_tokens_per_iteration(0.5, 3, [10], GOOD_RNG),
     r"n_iterations must be an integer"),
    ("simulate_tokens_per_iteration rng",
     lambda: sm.simulate_tokens_per_iteration(0.5, 3, 10, np.random.RandomState(0)),
     r"rng must be a numpy.random.Generator"),
    ("simulate_tokens_per_iteration_loop alpha",
     lambda: sm.simulation.simulate_tokens_per_iteration_loop(NAN, 3, 10, GOOD_RNG),
     r"alpha must be in \[0, 1\]"),
    ("simulate_tokens_per_iteration_loop rng",
     lambda: sm.simulation.simulate_tokens_per_iteration_loop(0.5, 3, 10, 42),
     r"rng must be a numpy.random.Generator"),
    # ---- specmath.stats ---------------------------------------------------------------
    ("chi2_sf dof zero", lambda: stats.chi2_sf(1.0, 0), r"dof must be an integer ≥ 1"),
    ("chi2_sf dof non-integer", lambda: stats.chi2_sf(1.0, 2.5), r"dof must be an integer"),
    ("chi2_sf x NaN", lambda: stats.chi2_sf(NAN, 3), r"x must be a real number; got NaN"),
    ("chi2_isf level", lambda: stats.chi2_isf(1.5, 3), r"level must be in \(0, 1\)"),
    ("chi2_isf level NaN", lambda: stats.chi2_isf(NAN, 3), r"level must be in \(0, 1\)"),
    ("chi2_isf dof", lambda: stats.chi2_isf(0.01, -1), r"dof must be an integer ≥ 1"),
    ("g_test shape", lambda: stats.g_test([1, 2, 3], [0.5, 0.5]),
     r"observed and expected_probs must have the same shape"),
    ("g_test negative counts", lambda: stats.g_test([1, -2], [0.5, 0.5]),
     r"observed must be finite counts ≥ 0"),
    ("g_test negative probabilities", lambda: stats.g_test([1, 2], [1.5, -0.5]),
     r"expected_probs must be finite and ≥ 0"),
    ("g_test row without mass", lambda: stats.g_test([1, 2], [0.0, 0.0]),
     r"each row of expected_probs needs positive mass"),
    ("chi2_test NaN counts", lambda: stats.chi2_test([1, NAN], [0.5, 0.5]),
     r"observed must be finite counts ≥ 0"),
    ("chi2_test row without mass", lambda: stats.chi2_test([1, 2], [0.0, 0.0]),
     r"each row of expected_probs needs positive mass"),
    # ---- specmath.toy -----------------------------------------------------------------
    ("MarkovLM transition sum", lambda: toy.MarkovLM(np.full((2, 2), 0.4), [0.5, 0.5]),
     r"transition must sum to 1"),
    ("MarkovLM transition not square",
     lambda: toy.MarkovLM(np.full((2, 3), 1 / 3), [0.5, 0.5]),
     r"transition must be a square"),
    ("MarkovLM initial shape", lambda: toy.MarkovLM(np.full((2, 2), 0.5), [1.0]),
     r"initial must have shape \(2,\)"),
    ("MarkovLM initial negative", lambda: toy.MarkovLM(np.full((2, 2), 0.5), [1.5, -0.5]),
     r"initial has negative entries"),
    ("MarkovLM.next_distribution context token",
     lambda: TARGET.next_distribution([0, 5]), r"context tokens must be in \[0, 3\)"),
    ("MarkovLM.sample n_tokens", lambda: TARGET.sample(-1, GOOD_RNG),
     r"n_tokens must be an integer ≥ 0"),
    ("MarkovLM.sample rng", lambda: TARGET.sample(3, "seed"),
     r"rng must be a numpy.random.Generator"),
    ("MarkovLM.with_temperature negative", lambda: TARGET.with_temperature(-1.0),
     r"temperature must be ≥ 0"),
    ("toy_pair closeness", lambda: toy.toy_pair(4, 1.5), r"closeness must be in \[0, 1\]"),
    ("toy_pair closeness text", lambda: toy.toy_pair(4, "near"), r"closeness must be in"),
    ("toy_pair vocab_size", lambda: toy.toy_pair(0, 0.5), r"vocab_size must be an integer ≥ 1"),
    ("toy_pair concentration", lambda: toy.toy_pair(4, 0.5, concentration=0.0),
     r"concentration must be > 0"),
    ("toy_pair concentration inf", lambda: toy.toy_pair(4, 0.5, concentration=INF),
     r"concentration must be > 0 and finite"),
    ("speculative_decode vocabulary mismatch",
     lambda: toy.speculative_decode(TARGET, toy.toy_pair(4)[1], 10, 3, GOOD_RNG),
     r"target and draft must share a vocabulary"),
    ("speculative_decode k negative",
     lambda: toy.speculative_decode(TARGET, DRAFT, 10, -1, GOOD_RNG), r"k must be an integer ≥ 0"),
    ("speculative_decode k non-integer",
     lambda: toy.speculative_decode(TARGET, DRAFT, 10, 2.5, GOOD_RNG), r"k must be an integer"),
    ("speculative_decode n_tokens",
     lambda: toy.speculative_decode(TARGET, DRAFT, -10, 3, GOOD_RNG),
     r"n_tokens must be an integer ≥ 0"),
    ("speculative_decode rng",
     lambda: toy.speculative_decode(TARGET, DRAFT, 10, 3, np.random.RandomState(1)),
     r"rng must be a numpy.random.Generator"),
    ("speculative_decode rule",
     lambda: toy.speculative_decode(TARGET, DRAFT, 10, 3, GOOD_RNG, rule="lenient"),
     r"rule must be 'exact' or one of"),
    ("autoregressive_decode n_tokens",
     lambda: toy.autoregressive_decode(TARGET, 2.5, GOOD_RNG), r"n_tokens must be an integer"),
    ("transition_counts token out of range",
     lambda: toy.transition_counts([[0, 1, 3]], 3), r"sequences must hold tokens in \[0, 3\)"),
    ("transition_counts negative token",
     lambda: toy.transition_counts([0, -1, 1], 3), r"sequences must hold tokens in \[0, 3\)"),
    ("transition_counts float tokens",
     lambda: toy.transition_counts([[0.0, 1.0]], 3), r"sequences must hold integer token ids"),
    ("transition_counts context_last", lambda: toy.transition_counts([[0, 1]], 3, context_last=3),
     r"context_last must be a token in \[0, 3\)"),
    ("transition_counts vocab_size", lambda: toy.transition_counts([[0, 1]], 0),
     r"vocab_size must be an integer ≥ 1"),
]


@pytest.mark.parametrize(("func", "match"), [(f, m) for _, f, m in CASES],
                         ids=[name for name, _, _ in CASES])
def test_bad_input_raises_value_error_naming_argument(func, match):
    with pytest.raises(ValueError, match=match):
        func()


def _covered_names() -> set[str]:
    return {name.split(" ")[0].split(".")[0] for name, _, _ in CASES}


def test_every_public_function_has_a_bad_input_case():
    public = [n for n in sm.__all__ if callable(getattr(sm, n)) and not isinstance(
        getattr(sm, n), type(sm))]
    public += [n for n in stats.__all__ if callable(getattr(stats, n)) and n != "GofResult"]
    public += [n for n in toy.__all__ if n != "DecodeResult"]
    missing = sorted(set(public) - _covered_names())
    assert not missing, f"no bad-input test for {missing}"


def test_sum_tolerance_is_documented_and_applied():
    """Sums within SUM_TOL of 1 pass, sums just outside are rejected naming the tolerance."""
    tol = sm.SUM_TOL
    ok = np.array([0.5, 0.5 + 0.5 * tol])
    assert sm.acceptance_probability(ok, ok) == pytest.approx(1.0, abs=tol)
    bad = np.array([0.5, 0.5 + 2 * tol])
    with pytest.raises(ValueError, match=rf"p must sum to 1 along the last axis \(within {tol:g}\)"):
        sm.acceptance_probability(bad, ok)


def test_grid_input_error_reports_an_offending_value():
    with pytest.raises(ValueError, match=r"c must be > 0; got -1"):
        sm.speedup(np.linspace(0, 1, 5)[:, None], 3, np.array([10.0, -1.0]))
