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
    ("speculative_step float32 row summing to 0.99",
     lambda: sm.speculative_step(P2, np.array([[0.49, 0.5, 0.0]], np.float32), [0],
                                 GOOD_RNG),
     r"q must sum to 1 along the last axis \(within .* for float32 rows of length 3\); "
     r"found a sum of 0\.99"),
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
    # ---- chapters 4-6 helpers (engineer B) ---------------------------------------------
    ("operations_factor alpha", lambda: sm.operations_factor(1.5, 3),
     r"alpha must be in \[0, 1\]"),
    ("operations_factor k", lambda: sm.operations_factor(0.8, -1), r"k must be an integer"),
    ("operations_factor c_hat negative", lambda: sm.operations_factor(0.8, 3, -0.1),
     r"c_hat must be a finite number ≥ 0"),
    ("operations_factor c_hat inf", lambda: sm.operations_factor(0.8, 3, INF),
     r"c_hat must be a finite number ≥ 0"),
    ("operations_factor c_hat text", lambda: sm.operations_factor(0.8, 3, "cheap"),
     r"c_hat must be a finite number ≥ 0"),
    ("adaptive_decode threshold",
     lambda: sm.simulation.adaptive_decode(TARGET, DRAFT, 5, 3, 1.5, GOOD_RNG),
     r"threshold must be in \[0, 1\]"),
    ("adaptive_decode rule",
     lambda: sm.simulation.adaptive_decode(TARGET, DRAFT, 5, 3, 0.2, GOOD_RNG, rule="peek"),
     r"rule must be 'stop' or 'drop'"),
    ("adaptive_decode k_max",
     lambda: sm.simulation.adaptive_decode(TARGET, DRAFT, 5, -2, 0.2, GOOD_RNG),
     r"k_max must be an integer ≥ 0"),
    ("adaptive_decode vocabulary mismatch",
     lambda: sm.simulation.adaptive_decode(TARGET, toy.toy_pair(4)[1], 5, 3, 0.2, GOOD_RNG),
     r"target and draft must share a vocabulary"),
    ("adaptive_decode models", lambda: sm.simulation.adaptive_decode(P, Q, 5, 3, 0.2, GOOD_RNG),
     r"target and draft must be specmath.toy.MarkovLM"),
    ("stationary_law not square",
     lambda: sm.markov_tokens.stationary_law(np.full((2, 3), 1 / 3)),
     r"transition must be a square matrix"),
    ("stationary_law rows", lambda: sm.markov_tokens.stationary_law([[0.5, 0.6], [0.5, 0.5]]),
     r"transition must sum to 1"),
    ("iteration_chain k", lambda: sm.markov_tokens.iteration_chain(TARGET, DRAFT, -1),
     r"k must be an integer ≥ 0"),
    # ---- chapter 7 statistics (engineer C) ----------------------------------------------
    ("median_ci empty", lambda: stats.median_ci([]), r"x must be a non-empty array"),
    ("median_ci level", lambda: stats.median_ci([1.0, 2.0], 1.5), r"level must be in \(0, 1\)"),
    ("stratified_trend_test shape",
     lambda: stats.stratified_trend_test([[1, 2]], [[3, 4, 5]]),
     r"successes and trials must have the same shape"),
    ("stratified_trend_test successes > trials",
     lambda: stats.stratified_trend_test([[4, 2]], [[3, 4]]), r"successes must be counts"),
    ("stratified_trend_test scores",
     lambda: stats.stratified_trend_test([[1, 2]], [[3, 4]], scores=[0, 1, 2]),
     r"scores must be 2 finite numbers"),
    ("stratified_trend_test no information",
     lambda: stats.stratified_trend_test([[3, 4]], [[3, 4]]), r"carry no information"),
    ("TrendResult slope_ci level",
     lambda: stats.TrendResult(0.0, 1.0, 0.0, 1.0, 1.0).slope_ci(2.0),
     r"level must be in \(0, 1\)"),
    # ---- chapter 9 block verification (engineer E) ---------------------------------------
    ("block_step p sum", lambda: sm.block_step(P2 * 0.9, Q1, [2], GOOD_RNG),
     r"p must sum to 1"),
    ("block_step p without k+1 rows", lambda: sm.block_step(P2[:1], Q1, [2], GOOD_RNG),
     r"p must have k\+1 = 2 rows"),
    ("block_step draft_tokens out of range", lambda: sm.block_step(P2, Q1, [3], GOOD_RNG),
     r"draft_tokens must be in \[0, V\)"),
    ("block_step draft_tokens float", lambda: sm.block_step(P2, Q1, [2.0], GOOD_RNG),
     r"draft_tokens must be integers"),
    ("block_step rng an int", lambda: sm.block_step(P2, Q1, [2], 0), r"rng"),
    ("broken_block_step q negative",
     lambda: sm.broken_block_step(P2, [[1.1, -0.1, 0.0]], [0], GOOD_RNG),
     r"q has negative entries"),
    ("block_weights draft_tokens wrong length", lambda: sm.block_weights(P2, Q1, [0, 1]),
     r"draft_tokens must have shape"),
    ("block_accepted_given_draft draft_tokens out of range",
     lambda: sm.block_accepted_given_draft(P2, Q1, [3]), r"draft_tokens must be in \[0, V\)"),
    ("block_output_distribution rule",
     lambda: sm.block_output_distribution(TARGET, DRAFT, 2, rule="lenient"),
     r"rule must be one of"),
    ("block_output_distribution k too large",
     lambda: sm.block_output_distribution(TARGET, DRAFT, 20), r"k is too large"),
    ("block_output_distribution vocabulary mismatch",
     lambda: sm.block_output_distribution(TARGET, toy.toy_pair(4)[1], 1),
     r"target and draft must share the vocabulary"),
    ("sequence_distribution n", lambda: sm.sequence_distribution(TARGET, -1),
     r"n must be an integer"),
    ("sequence_distribution model", lambda: sm.sequence_distribution(np.ones((2, 2)) / 2, 1),
     r"model as an array must be one probability vector"),
    ("accepted_length_pmf k", lambda: sm.accepted_length_pmf(TARGET, DRAFT, 1.5),
     r"k must be an integer"),
    ("accepted_length_pmf context", lambda: sm.accepted_length_pmf(TARGET, DRAFT, 1,
                                                                  context=[7]),
     r"context tokens must be in \[0, 3\)"),
    ("expected_accepted draft sum", lambda: sm.expected_accepted(P, [0.5, 0.6, 0.0], 2),
     r"draft must sum to 1"),
    ("expected_accepted target callable", lambda: sm.expected_accepted(len, Q, 2),
     r"target must be a model with next_distribution"),
    ("accepted_upper_bound k negative", lambda: sm.accepted_upper_bound(P, Q, -1),
     r"k must be an integer"),
    # ---- chapter 8 what engines verify (engineer D) --------------------------------------
    ("greedy_draft_step p sum", lambda: sm.greedy_draft_step(P2 * 0.9, Q1, [2], GOOD_RNG),
     r"p must sum to 1"),
    ("greedy_draft_step draft_tokens out of range",
     lambda: sm.greedy_draft_step(P2, Q1, [3], GOOD_RNG), r"draft_tokens must be in \[0, V\)"),
    ("greedy_draft_step rng an int", lambda: sm.greedy_draft_step(P2, Q1, [2], 0), r"rng"),
    ("greedy_draft_acceptance q NaN", lambda: sm.greedy_draft_acceptance(P, [NAN, 0.5, 0.5]),
     r"q contains NaN"),
    ("greedy_draft_output_distribution shape",
     lambda: sm.greedy_draft_output_distribution(P, [0.5, 0.5]), r"p and q must have the same"),
    ("mismatched_output_distribution q_ratio sum",
     lambda: sm.mismatched_output_distribution(P, Q, [0.5, 0.6, 0.0]),
     r"q_ratio must sum to 1"),
    ("two_token_joint p2_verify shape",
     lambda: sm.two_token_joint(P, Q, np.ones((2, 3)) / 3, np.ones((3, 3)) / 3),
     r"p2_verify must have shape \(V, V\)"),
    ("top_k_filter k zero", lambda: sm.top_k_filter(P, 0), r"k must be an integer ≥ 1"),
    ("top_p_filter top_p above one", lambda: sm.top_p_filter(P, 1.5),
     r"top_p must be in \[0, 1\]"),
    ("top_p_filter top_p zero", lambda: sm.top_p_filter(P, 0.0), r"top_p must be in \(0, 1\]"),
    ("repetition_penalty penalty negative",
     lambda: sm.repetition_penalty([1.0, 2.0], [0], -1.0), r"penalty must be a finite number"),
    ("repetition_penalty context out of range",
     lambda: sm.repetition_penalty([1.0, 2.0], [5], 1.2), r"context tokens must be in"),
    ("repetition_penalty logits NaN", lambda: sm.repetition_penalty([1.0, NAN], [0], 1.2),
     r"logits must be one finite vector"),
    ("best_residual_output accepted too large",
     lambda: sm.best_residual_output(P, [0.9, 0.9, 0.0]), r"accepted must have total mass"),
    ("best_residual_output accepted shape", lambda: sm.best_residual_output(P, [0.1]),
     r"accepted must be finite"),
    ("lenient_acceptance l zero", lambda: sm.lenient_acceptance(P, Q, 0.0),
     r"l must be in \(0, 1\]"),
    ("lenient_acceptance l above one", lambda: sm.lenient_acceptance(P, Q, 1.5),
     r"l must be in \[0, 1\]"),
    ("lenient_output_distribution p sum", lambda: sm.lenient_output_distribution(P * 2, Q, 0.5),
     r"p must sum to 1"),
    ("lenient_step l NaN", lambda: sm.lenient_step(P2, Q1, [2], GOOD_RNG, l=NAN),
     r"l must be in \[0, 1\]"),
    ("typical_threshold eps negative", lambda: sm.typical_threshold(P, -0.1, 0.3),
     r"eps must be a finite number ≥ 0"),
    ("typical_acceptance delta text", lambda: sm.typical_acceptance(P, Q, 0.1, "x"),
     r"eps and delta must be numbers"),
    ("typical_output_distribution q negative",
     lambda: sm.typical_output_distribution(P, [1.2, -0.2, 0.0], 0.1, 0.3),
     r"q has negative entries"),
    ("typical_step delta inf", lambda: sm.typical_step(P2, Q1, [2], GOOD_RNG, delta=INF),
     r"delta must be a finite number"),
    ("engine_metrics accepted above k", lambda: sm.engine_metrics([0, 4], 3),
     r"accepted counts must be ≤ k"),
    ("engine_metrics k zero", lambda: sm.engine_metrics([0, 1], 0), r"k must be an integer ≥ 1"),
    ("mean_tokens_from_metric metric", lambda: sm.mean_tokens_from_metric(2.0, "tau", 3),
     r"metric must be one of"),
    ("mean_tokens_from_metric value out of range",
     lambda: sm.mean_tokens_from_metric(1.5, "vllm_draft_acceptance_rate", 3),
     r"gives E\[N\] outside \[1, k\+1\]"),
    # chapter 10: several candidates and trees
    ("multidraft_step candidates out of range",
     lambda: sm.multidraft_step(P, Q, [0, 3], GOOD_RNG), r"candidates must be in \[0, V\)"),
    ("multidraft_step p two rows", lambda: sm.multidraft_step(P2, Q, [0], GOOD_RNG),
     r"p must be one probability vector"),
    ("multidraft_step candidates repeated without replacement",
     lambda: sm.multidraft_step(P, Q, [1, 1], GOOD_RNG, replacement=False),
     r"candidates must be distinct"),
    ("multidraft_step rng an int", lambda: sm.multidraft_step(P, Q, [1], 0), r"rng"),
    ("broken_multidraft_step candidates float",
     lambda: sm.broken_multidraft_step(P, Q, [1.0], GOOD_RNG), r"candidates must be integers"),
    ("multidraft_acceptance m zero", lambda: sm.multidraft_acceptance(P, Q, 0),
     r"m must be an integer ≥ 1"),
    ("multidraft_acceptance m above V without replacement",
     lambda: sm.multidraft_acceptance(P, Q, 4, replacement=False), r"m must be ≤ V"),
    ("multidraft_output_distribution rule",
     lambda: sm.multidraft_output_distribution(P, Q, 2, rule="x"), r"rule must be one of"),
    ("multidraft_ot_ceiling q sum", lambda: sm.multidraft_ot_ceiling(P, Q * 2, 2),
     r"q must sum to 1"),
    ("multidraft_ot_ceiling m too large", lambda: sm.multidraft_ot_ceiling(P, Q, 12),
     r"m is too large"),
    ("multidraft_ot_ceiling_cut m text", lambda: sm.multidraft_ot_ceiling_cut(P, Q, "2"),
     r"m must be an integer"),
    ("rank_acceptance shapes", lambda: sm.rank_acceptance(P, Q[:2] / Q[:2].sum(), 2),
     r"p and q must have the same shape"),
    ("tree_expected_accepted parents not earlier",
     lambda: sm.tree_expected_accepted([-1, 1], [0.5]), r"parents\[i\] must be −1"),
    ("tree_expected_accepted acceptance sum above one",
     lambda: sm.tree_expected_accepted([-1], [0.8, 0.5]), r"acceptance must sum to at most 1"),
    ("tree_expected_accepted_exact vocabularies",
     lambda: sm.tree_expected_accepted_exact(P, [0.5, 0.5], [-1]),
     r"target and draft must share the vocabulary"),
    ("best_tree n negative", lambda: sm.best_tree([0.5], -1), r"n must be an integer ≥ 0"),
    ("best_tree acceptance above one", lambda: sm.best_tree([1.5], 3),
     r"acceptance must be in \[0, 1\]"),
    ("tree_step p rows", lambda: sm.tree_step(P2, P2, [-1, 0], [0, 1], GOOD_RNG),
     r"p must have shape \(n\+1, V\)"),
    ("tree_step tokens out of range", lambda: sm.tree_step(P2, P2, [-1], [5], GOOD_RNG),
     r"tokens must be in \[0, V\)"),
    ("broken_tree_step parents float",
     lambda: sm.broken_tree_step(P2, P2, [-1.0], [0], GOOD_RNG), r"parents must be integers"),
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
    with pytest.raises(ValueError, match=rf"p must sum to 1 along the last axis \(within {tol:g} "
                                         r"for float64 rows of length 2\)"):
        sm.acceptance_probability(bad, ok)


def test_grid_input_error_reports_an_offending_value():
    with pytest.raises(ValueError, match=r"c must be > 0; got -1"):
        sm.speedup(np.linspace(0, 1, 5)[:, None], 3, np.array([10.0, -1.0]))


# ---- issue 16 (N6): rows as engines hand them over, in every format -----------------------
# The tolerance is derived in specmath._validate.sum_tolerance (storage rounding, float16
# underflow, running-sum losses); these tests hold it against rows made the ways engines make
# them: torch and numpy, float32, float16 and bfloat16, pairwise, eight-lane and left-to-right
# normalisers, several temperatures. Rows truly off (0.99, 0.999 in float32), NaN, inf and
# negative entries stay rejected.

V_REAL = 151_936


def _exp_rows(seed: int, scales) -> list[np.ndarray]:
    """float32 exp(z − max z) for Gaussian logits of each standard deviation (= 1/T)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in scales:
        z = (s * rng.standard_normal(V_REAL)).astype(np.float32)
        out.append(np.exp(z - z.max()).astype(np.float32))
    return out


def _normalise(e: np.ndarray, how: str) -> np.ndarray:
    """e / Σe in float32, Σ taken pairwise (numpy), in 8 lanes, or left to right."""
    if how == "pairwise":
        s = e.sum(dtype=np.float32)
    elif how == "lanes":
        s = np.cumsum(e.reshape(-1, 8), axis=0, dtype=np.float32)[-1].sum(dtype=np.float32)
    else:
        s = np.cumsum(e, dtype=np.float32)[-1]          # a plain running sum
    return (e / s).astype(np.float32)


SCALES = (1.0, 2.0, 3.0, 3.5, 4.0, 5.0, 8.0)   # logit std: temperature 1/scale


@pytest.mark.parametrize("how", ["pairwise", "lanes", "sequential"])
def test_float32_rows_normalised_any_way_are_accepted_at_every_temperature(how):
    from specmath._validate import sum_tolerance
    offs = []
    for e in _exp_rows(16, SCALES) + _exp_rows(17, SCALES):
        p = _normalise(e, how)
        offs.append(abs(p.astype(float).sum() - 1))
        assert 0 < sm.acceptance_probability(p, p[::-1].copy()) < 1
    if how == "sequential":
        # the old rule (one tolerance, 2.32e-4) refused some of these rows
        assert max(offs) > sum_tolerance(V_REAL, "float32")


@pytest.mark.parametrize("how", ["pairwise", "sequential"])
def test_float16_rows_with_tails_flushed_to_zero_are_accepted(how):
    """numpy: float32 softmax stored in float16; most tail entries become subnormal or 0."""
    from specmath._validate import sum_tolerance
    offs = []
    rows = _exp_rows(18, SCALES)
    for top in (17.0, 18.0, 19.0):    # confident rows: one logit far above an N(0, 1) tail
        z = np.random.default_rng(int(top)).standard_normal(V_REAL).astype(np.float32)
        z[3] += np.float32(top)
        rows.append(np.exp(z - z.max()).astype(np.float32))
    for e in rows:
        p = _normalise(e, how).astype(np.float16)
        assert (p < 2.0 ** -14).mean() > 0.8       # nearly the whole tail below 2⁻¹⁴
        offs.append(abs(p.astype(float).sum() - 1))
        assert 0 < sm.acceptance_probability(p, p[::-1].copy()) <= 1
    assert max(offs) > sum_tolerance(V_REAL, "float16")   # the old rule refused these


@pytest.mark.parametrize("temperature", [0.3, 0.7, 1.0, 1.5])
def test_torch_softmax_rows_in_float32_float16_and_bfloat16_are_accepted(temperature):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, V_REAL, generator=g)
    z[0, 7] += 18.0    # a confident row (the review's float16 case: p_top ≈ 0.997)
    z[1] *= 3.0
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        p = torch.softmax((z / temperature).to(dtype), -1)
        a = sm.acceptance_probability(p, p.flip(0))
        assert np.all((0 <= a) & (a <= 1)), dtype
        assert len(sm.speculative_step(p, p[:2], [7, 7], np.random.default_rng(0))) >= 1
        if dtype is torch.float32:
            # upcast before reading, and read through numpy: the same rows pass
            sm.acceptance_probability(p.numpy(), p.numpy())


def test_the_review_float16_row_off_by_8e_4_is_accepted():
    """N6: a confident float16 row at V = 151,936 with 148,940 tail entries flushed to 0."""
    torch = pytest.importorskip("torch")
    from specmath._validate import row_sum_tolerances, sum_tolerance
    g = torch.Generator().manual_seed(3)
    found = None
    for top in np.arange(14.0, 20.0, 0.25):
        z = torch.randn(V_REAL, generator=g)
        z[0] += float(top)
        p = torch.softmax(z.half(), -1)
        off = 1 - p.double().sum().item()
        if off > sum_tolerance(V_REAL, "float16"):
            found = p
            break
    assert found is not None, "no float16 row beyond the old tolerance: test is vacuous"
    below, _ = row_sum_tolerances(found.double().numpy(), "float16")
    assert off < below < 0.01
    assert sm.acceptance_probability(found, found) == pytest.approx(1.0)


@pytest.mark.parametrize("how", ["pairwise", "sequential"])
def test_rows_truly_off_are_still_rejected_in_every_format(how):
    torch = pytest.importorskip("torch")
    e = _exp_rows(19, (1.0, 3.0, 3.5, 5.0, 8.0))
    for row in e:
        p32 = _normalise(row, how)
        for fac in (0.99, 0.999, 1.001):   # float32: 0.999 and 1.001 stay out of reach
            with pytest.raises(ValueError, match=r"p must sum to 1 .*float32 rows"):
                sm.acceptance_probability(p32 * np.float32(fac), p32)
        with pytest.raises(ValueError, match=r"p must sum to 1 .*float16 rows"):
            sm.acceptance_probability((p32 * np.float32(0.99)).astype(np.float16), p32)
        with pytest.raises(ValueError, match=r"p must sum to 1 .*bfloat16 rows"):
            sm.acceptance_probability(torch.from_numpy(p32 * np.float32(0.99)).bfloat16(),
                                      p32)
    p16 = _normalise(e[0], how).astype(np.float16)
    for bad, msg in ((np.float16(np.nan), "contains NaN"), (np.float16(np.inf), "contains inf"),
                     (np.float16(-1e-3), "has negative entries")):
        q = p16.copy()
        q[5] = bad
        with pytest.raises(ValueError, match=rf"p {msg}"):
            sm.acceptance_probability(q, p16)
        with pytest.raises(ValueError, match=rf"q {msg}"):
            sm.acceptance_probability(torch.from_numpy(p16), torch.from_numpy(q).bfloat16())


def test_row_tolerances_add_exactly_the_underflow_and_lost_mass_terms():
    from specmath._validate import ROUNDING_LAMBDA, row_sum_tolerances, sum_tolerance
    V = 1000
    base16 = sum_tolerance(V, "float16")
    assert base16 == pytest.approx(2.0 ** -11 + ROUNDING_LAMBDA * np.sqrt(V) * 2.0 ** -24)
    row = np.full(V, 1e-6)                  # 999 entries below float16's smallest normal
    row[0] = 1 - row[1:].sum()
    below, above = row_sum_tolerances(row, "float16")
    assert below == pytest.approx(base16 + 999 * 2.0 ** -25)
    # a running sum loses a term below u_a times the mass before it: 1e-6 > 2⁻²⁴ · 1 here
    assert above == pytest.approx(below)
    row = np.full(V, 1e-8)                  # now every tail term is lost after the first
    row[0] = 1 - row[1:].sum()
    below, above = row_sum_tolerances(row, "float32")
    assert below == pytest.approx(sum_tolerance(V, "float32"))   # float32: no underflow
    assert above - below == pytest.approx(999 * 1e-8)
    # the tolerance above one never exceeds a derived worst case: V η/2 + γ_{V−1}-free mass
    assert above - below <= row[1:].sum() + 1e-18


def test_tolerances_per_format_at_vocab_151936_before_and_worst_case():
    """The numbers the report quotes: base tolerance per format and the float16 maximum."""
    from specmath._validate import sum_tolerance
    assert sum_tolerance(V_REAL, "float32") == pytest.approx(2.32e-4, rel=0.01)
    assert sum_tolerance(V_REAL, "float16") == pytest.approx(7.2e-4, rel=0.01)
    assert sum_tolerance(V_REAL, "bfloat16") == pytest.approx(4.14e-3, rel=0.01)
    # float16 worst case: every entry below 2⁻¹⁴, each off by ≤ 2⁻²⁵: still rejects 0.99
    worst16 = sum_tolerance(V_REAL, "float16") + V_REAL * 2.0 ** -25
    assert worst16 == pytest.approx(5.25e-3, rel=0.01) and worst16 < 0.01
