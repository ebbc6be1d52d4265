"""Chapters 5 and 6: the formulas the chapters derive hold, and their helpers, figures,
explorers and exercise parameters work.

Statistical tests use a fixed seed and a 4-standard-error band (two-sided false-alarm rate
about 6e-5 per test if the code is right and the standard error rests on many draws; with
few independent runs the t distribution applies and the rate is computed in the test);
each comment states the error it would catch.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import specmath as sm  # noqa: E402
from specmath.positional import (  # noqa: E402
    expected_tokens_positional,
    markov_acceptance_by_position,
    simulate_tokens_positional,
    tokens_per_iteration_pmf_positional,
)
from specmath.temperature import (  # noqa: E402
    alpha_at_temperature,
    perturbed_logits,
    zipf_logits,
)

ALPHAS = np.linspace(0.0, 0.99, 100)
CS = np.logspace(0, 2, 41)
A, C = np.meshgrid(ALPHAS, CS)


# ---- chapter 5 -------------------------------------------------------------------------

def test_speedup_equals_leviathan_theorem_3_8_with_their_cost_coefficient_one_over_c():
    for k in range(0, 12):
        ours = sm.speedup(A, k, C)
        theirs = sm.leviathan_walltime_improvement(A, k, 1.0 / C)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_one_drafted_token_beats_plain_decoding_exactly_when_alpha_exceeds_one_over_c():
    # exclude the boundary α = 1/c itself, where S(1) = 1 up to rounding
    off = np.abs(A - 1.0 / C) > 1e-9
    s1 = sm.speedup(A, 1, C)
    assert np.array_equal((s1 > 1)[off], (A > 1.0 / C)[off])
    np.testing.assert_allclose(s1, (1 + A) / (1 + 1 / C), rtol=1e-12)


def test_some_k_helps_iff_alpha_above_one_over_c_and_by_at_least_corollary_3_9():
    kbest = sm.optimal_k(A, C, k_max=64)
    off = np.abs(A - 1.0 / C) > 1e-9
    assert np.array_equal((kbest > 0)[off], (A > 1.0 / C)[off])
    best = sm.speedup(A, kbest, C)
    bound = (1 + A) / (1 + 1 / C)
    helps = A > 1.0 / C
    assert (best[helps] >= bound[helps] - 1e-12).all()


def test_integer_best_k_is_the_floor_or_ceiling_of_the_continuous_optimum():
    a, c = A[:, 1:-1], C[:, 1:-1]  # α in (0, 1)
    kc = sm.optimal_k_continuous(a, c)
    kb = sm.optimal_k(a, c, k_max=200)
    ok = (kb == np.floor(kc)) | (kb == np.ceil(kc)) | ((kc == 0) & (kb <= 1))
    assert ok.all()


def test_continuous_optimum_matches_the_lambert_w_closed_form():
    from scipy.special import lambertw

    a, c = A[1:, 1:-1], C[1:, 1:-1]  # c > 1: at c = 1 the argument is −1/e, the branch point
    L = -np.log(a)
    y = -lambertw(-np.exp(-1.0 - L * (c - 1.0)), k=-1).real
    closed = np.maximum((y - 1.0) / L - c, 0.0)
    np.testing.assert_allclose(sm.optimal_k_continuous(a, c), closed, rtol=1e-6, atol=1e-6)


def test_lambert_w_root_needs_max_zero_where_no_draft_length_helps():
    from scipy.special import lambertw

    a, c = A[1:, 1:-1], C[1:, 1:-1]
    L = -np.log(a)
    y = -lambertw(-np.exp(-1.0 - L * (c - 1.0)), k=-1).real
    root = (y - 1.0) / L - c
    neg = root < -1e-6
    assert neg.any()                                        # the raw root goes negative
    assert (sm.optimal_k_continuous(a, c)[neg] == 0).all()  # and the optimum is x = 0
    # there g(0) ≤ 0: S decreases from k = 0
    g0 = L * a * c - (1 - a)
    assert (g0[neg] <= 1e-9).all()


def test_chapter_5_exercise_2_closed_form_speedup_at_the_continuous_optimum():
    from scipy.special import lambertw

    from specmath.exercises import ch5, check

    a, c = ch5.PARAMS["ch5-ex2"]["alpha"], ch5.PARAMS["ch5-ex2"]["c"]
    L = np.log(1 / a)
    y = -lambertw(-np.exp(-1 - L * (c - 1)), k=-1).real
    x = (y - 1) / L - c
    s_star = c * L / ((1 - a) * y)                          # the identity of part (a)
    s_direct = (1 - a ** (x + 1)) / ((1 - a) * (1 + x / c))
    assert s_star == pytest.approx(s_direct, rel=1e-10)
    k = max((int(np.floor(x)), int(np.ceil(x))), key=lambda kk: sm.speedup(a, kk, c))
    assert check("ch5-ex2", [x, s_star, k, sm.speedup(a, k, c)], quiet=True)


def test_markov_dependent_iterations_follow_the_renewal_reward_speedup(rng):
    # 8 independent decodes, standard error estimated from them: |t| < 4 on 7 degrees of
    # freedom, false-alarm rate 2 P(t_7 > 4) ≈ 0.005 (computed and bounded below); an
    # error of 10 standard errors in the prediction is caught with power > 0.99.
    from scipy import stats as sps

    from specmath.markov_tokens import iteration_chain

    assert 2 * sps.t.sf(4, 7) < 0.01 and sps.nct.sf(4, 7, 10) > 0.99

    t, d = sm.toy.toy_pair(6, 0.6, seed=0)
    k, c = 4, 10.0
    s_runs = [r.tokens_per_iteration.sum() / (len(r.tokens_per_iteration) * (1 + k / c))
              for r in (sm.toy.speculative_decode(t, d, 2_000, k, rng, context=(0,))
                        for _ in range(8))]
    pred = iteration_chain(t, d, k).mean_tokens / (1 + k / c)
    assert abs(np.mean(s_runs) - pred) < 4 * np.std(s_runs, ddof=1) / np.sqrt(8)


# ---- published figures (specmath/data/published) ----------------------------------------

def test_published_records_carry_provenance_and_load_by_field():
    from specmath import published

    for topic in ("specbench", "leviathan2023", "chen2023"):
        recs = published.load(topic)
        assert recs
        for r in recs:
            assert all(r[f] not in ("", None) for f in published.REQUIRED_FIELDS)
    sb = published.load("specbench")
    for r in sb:
        assert r["model"] == "Vicuna-7B-v1.3" and r["board"] in r["hardware"].replace(
            "GeForce RTX ", "")
        assert "leaderboard" in r["source"].lower() and r["commit"] and r["url"]
    keys = [(r["leaderboard_version"], r["board"], r["method"]) for r in sb]
    assert len(keys) == len(set(keys))          # one figure per method, board and version


def test_specbench_figures_quoted_by_issue_9_are_the_october_2024_boards():
    from specmath import published

    def value(board, method):
        (r,) = published.load("specbench", leaderboard_version="2024-10-25", board=board,
                              method=method)
        return r["value"]

    assert value("3090", "SpS") == 1.83 and value("3090", "EAGLE-2") == 2.25
    assert value("3090", "PLD") == 1.55
    assert value("A100", "SpS") == 1.49 and value("A100", "PLD") == 1.59


def test_specbench_same_models_on_two_gpus_same_tau_different_speedup_and_ranking():
    from specmath import published

    def rec(board, method):
        (r,) = published.load("specbench", leaderboard_version="2024-10-25", board=board,
                              method=method)
        return r

    s3, sa = rec("3090", "SpS"), rec("A100", "SpS")
    assert abs(s3["tau"] - sa["tau"]) < 0.05 and s3["value"] - sa["value"] > 0.2
    assert s3["value"] > rec("3090", "PLD")["value"]
    assert sa["value"] < rec("A100", "PLD")["value"]
    # what chapter 5 says differs between the boards: GPU, CPU and CUDA, not PyTorch or
    # the settings
    assert s3["hardware"] != sa["hardware"] and s3["settings"] == sa["settings"]
    (torch3, cuda3), (torcha, cudaa) = (r["software"].split(", ") for r in (s3, sa))
    assert torch3 == torcha and cuda3 != cudaa


def test_leviathan_records_equal_the_paper_table_1_as_read_and_say_so():
    # R1 finding 17: Table 1 of arXiv:2211.17192 (columns Operations, Speed; c = ĉ = 0),
    # read on 2026-12-01 from a public copy of the paper's text
    from specmath import published

    paper = {(0.6, 2): (1.53, 1.96), (0.7, 3): (1.58, 2.53), (0.8, 2): (1.23, 2.44),
             (0.8, 5): (1.63, 3.69), (0.9, 2): (1.11, 2.71), (0.9, 10): (1.60, 6.86)}
    rows = published.load("leviathan2023")
    assert len(rows) == 2 * len(paper)
    for r in rows:
        ops, speed = paper[r["alpha"], r["gamma"]]
        want = ops if r["quantity"] == "operations_factor" else speed
        assert r["value"] == want and "VERIFIED on" in r["note"]
        assert "NOT VERIFIED" not in r["note"]


def test_chen_figures_give_c_and_implied_alphas_inside_zero_one():
    from specmath import published

    d = {r["quantity"]: r["value"] for r in published.load("chen2023")
         if r["quantity"] != "speedup"}
    c = d["target_ms_per_token"] / d["draft_ms_per_token"]
    assert c == pytest.approx(14.1 / 1.8)
    for r in published.load("chen2023", quantity="speedup"):
        a = sm.alpha_from_mean_tokens(r["value"] * (1 + 4 / c), 4)
        assert 0 < a < 1
        assert sm.speedup(a, 4, c) == pytest.approx(r["value"], rel=1e-6)


def test_leviathan_table_1_recorded_speeds_equal_theorem_3_8_to_two_decimals():
    # The paper's Table 1 speeds (checked against the data file above): the formula.
    published = {(0.6, 2): 1.96, (0.7, 3): 2.53, (0.8, 2): 2.44, (0.8, 5): 3.69,
                 (0.9, 2): 2.71, (0.9, 10): 6.86}
    for (a, g), v in published.items():
        assert round(sm.speedup(a, g, np.inf), 2) == v


def test_errata_numbers_for_the_source_scenarios():
    assert round(sm.expected_tokens(0.7, 5), 2) == 2.94
    assert round(sm.expected_tokens(0.8, 5), 2) == 3.69
    assert round(sm.speedup(0.7, 5, 10), 2) == 1.96
    assert round(sm.speedup(0.8, 5, 10), 2) == 2.46
    assert round(sm.speedup(0.75, 5, 10), 2) == 2.19
    assert round(sm.speedup(0.9, 5, 2.5), 2) == 1.56
    assert sm.optimal_k(0.9, 2.5) == 4


# ---- chapter 6: temperature ------------------------------------------------------------

def test_alpha_at_temperature_matches_softmax_by_hand():
    rng = np.random.default_rng(0)
    zp, zq = rng.normal(size=(2, 7))
    for t in (0.3, 1.0, 4.0):
        want = np.minimum(sm.softmax(zp, t), sm.softmax(zq, t)).sum()
        assert alpha_at_temperature(zp, zq, t) == pytest.approx(want, rel=1e-12)


def test_greedy_limit_of_alpha_is_top1_agreement_not_one():
    rng = np.random.default_rng(1)
    zp = rng.normal(size=(300, 20))
    zq = zp + rng.normal(scale=1.0, size=zp.shape)
    agree = sm.top1_agreement(sm.softmax(zp), sm.softmax(zq))
    np.testing.assert_array_equal(alpha_at_temperature(zp, zq, 0.0), agree)
    # a small positive temperature is already close (argmax gaps are > 1e-3 here)
    np.testing.assert_allclose(alpha_at_temperature(zp, zq, 1e-4), agree, atol=1e-4)
    assert 0 < agree.mean() < 1
    # and the example of the chapter: top tokens differ, so α → 0
    assert alpha_at_temperature([3.0, 2.0, 0.0], [2.0, 3.0, 0.0], 0.0) == 0.0


def test_alpha_tends_to_one_at_high_temperature_for_finite_logits():
    rng = np.random.default_rng(2)
    zp, zq = rng.normal(size=(2, 50))
    assert alpha_at_temperature(zp, zq, 1e4) > 0.999


def test_alpha_at_temperature_broadcasts_over_temperatures_and_contexts():
    z = np.zeros((3, 5))
    out = alpha_at_temperature(z, z, np.array([0.5, 1.0]))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out, 1.0)


@pytest.mark.parametrize("kw,match", [
    ({"temperature": -1.0}, "temperature"),
    ({"temperature": np.nan}, "temperature"),
    ({"temperature": 1.0, "draft_temperature": np.inf}, "draft_temperature"),
])
def test_alpha_at_temperature_rejects_bad_temperatures(kw, match):
    with pytest.raises(ValueError, match=match):
        alpha_at_temperature([0.0, 1.0], [1.0, 0.0], **kw)


def test_alpha_at_temperature_rejects_mismatched_or_nonfinite_logits():
    with pytest.raises(ValueError, match="same shape"):
        alpha_at_temperature([0.0, 1.0], [0.0, 1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="target_logits"):
        alpha_at_temperature([np.nan, 1.0], [0.0, 1.0], 1.0)


def test_zipf_logits_give_a_zipf_law_and_lower_entropy_for_larger_exponents():
    p = sm.softmax(zipf_logits(100, 1.0))
    r = np.arange(1, 101)
    np.testing.assert_allclose(p, (1 / r) / (1 / r).sum(), rtol=1e-12)
    hs = [sm.entropy(sm.softmax(zipf_logits(100, s))) for s in (0.0, 0.5, 1.0, 2.0)]
    assert hs[0] == pytest.approx(np.log2(100))
    assert all(a > b for a, b in zip(hs, hs[1:], strict=False))
    with pytest.raises(ValueError, match="exponent"):
        zipf_logits(10, -1.0)
    with pytest.raises(ValueError, match="vocab_size"):
        zipf_logits(0)


def test_perturbed_logits_zero_noise_is_a_perfect_draft_and_bad_noise_is_rejected():
    z = zipf_logits(20)
    np.testing.assert_array_equal(perturbed_logits(z, 0.0, np.random.default_rng(0)), z)
    with pytest.raises(ValueError, match="noise"):
        perturbed_logits(z, -0.1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        perturbed_logits(z, 0.1, 42)


# ---- chapter 6: per-position acceptance ------------------------------------------------

@pytest.mark.parametrize("a", [0.0, 0.3, 0.8, 1.0])
@pytest.mark.parametrize("k", [0, 1, 5])
def test_positional_formula_with_constant_alpha_is_chapter_4s_formula(a, k):
    assert expected_tokens_positional(np.full(k, a)) == pytest.approx(sm.expected_tokens(a, k))
    np.testing.assert_allclose(tokens_per_iteration_pmf_positional(np.full(k, a)),
                               sm.tokens_per_iteration_pmf(a, k), atol=1e-15)


def test_positional_pmf_sums_to_one_and_its_mean_is_the_positional_expectation():
    a = np.array([0.95, 0.8, 0.6, 0.3, 0.9])
    pmf = tokens_per_iteration_pmf_positional(a)
    assert pmf.sum() == pytest.approx(1.0)
    assert (pmf * np.arange(1, 7)).sum() == pytest.approx(expected_tokens_positional(a))


def test_positional_monte_carlo_agrees_with_exact_formula():
    # 200 000 draws of N ∈ {1..6}: standard error ≈ 0.003 tokens, so the 4-SE band
    # (false-alarm ≈ 6e-5) catches any bias ≥ 0.02 tokens (e.g. an off-by-one position).
    a = np.array([0.95, 0.85, 0.7, 0.55, 0.4])
    n = simulate_tokens_positional(a, 200_000, np.random.default_rng(3))
    se = n.std() / np.sqrt(n.size)
    assert abs(n.mean() - expected_tokens_positional(a)) < 4 * se


def test_markov_toy_exact_positional_rates_agree_with_speculative_decoding():
    # 6 000 one-iteration decodes: SE ≈ 0.02 tokens; 4-SE band (false alarm ≈ 6e-5) catches
    # the i.i.d. formula's error for this pair (checked to exceed 6 SE below).
    target, draft = sm.toy.toy_pair(6, 0.6, seed=1)
    k, ctx = 4, 0
    a = markov_acceptance_by_position(target.transition, draft.transition, ctx, k)
    exact = expected_tokens_positional(a)
    rng = np.random.default_rng(4)
    ns = np.array([sm.toy.speculative_decode(target, draft, 1, k, rng, context=[ctx])
                   .tokens_per_iteration[0] for _ in range(6000)])
    se = ns.std() / np.sqrt(ns.size)
    assert abs(ns.mean() - exact) < 4 * se
    assert abs(sm.expected_tokens(a[0], k) - exact) > 6 * se     # the error it would catch
    # the first-position α is exact for position 1 only
    assert a[0] == pytest.approx(sm.acceptance_probability(target.transition[ctx],
                                                            draft.transition[ctx]))


def test_random_alpha_per_context_gives_more_tokens_than_the_mean_alpha_jensen():
    a = np.random.default_rng(5).beta(2, 1, size=1000)
    for k in (2, 5, 10):
        assert np.mean(sm.expected_tokens(a, k)) > sm.expected_tokens(a.mean(), k)


def test_jensen_gap_needs_k_at_least_two_k_one_is_linear():
    a = np.random.default_rng(5).beta(2, 1, size=1000)
    for k in (0, 1):
        assert np.mean(sm.expected_tokens(a, k)) == pytest.approx(
            sm.expected_tokens(a.mean(), k), rel=1e-12)
    for k in (2, 3, 8):
        assert np.mean(sm.expected_tokens(a, k)) > sm.expected_tokens(a.mean(), k) + 1e-3


def test_lowering_temperature_part_way_can_lower_alpha_though_greedy_raises_it():
    from specmath.temperature import alpha_at_temperature

    zp, zq = np.array([2.0, 1.0, 0.0]), np.array([1.6, 1.2, 0.0])   # chapter 6's example
    a1 = alpha_at_temperature(zp, zq, 1.0)
    assert alpha_at_temperature(zp, zq, 0.0) == 1.0 > a1           # the T → 0 rule: helps
    ts = np.logspace(-2, 0, 81)
    curve = alpha_at_temperature(zp, zq, ts)
    assert curve.min() < a1 - 0.05 and ts[np.argmin(curve)] < 1     # part of the way: hurts


def test_chapter_6_code_and_open_text_move_in_opposite_directions_below_t_one():
    # chapter 6's simulated contexts (same seed and sizes): for the code-like ones α(T) > α(1)
    # at every T < 1 on the grid, for open text α(T) < α(1); open text has closer top two
    # tokens and lower top-1 agreement.
    rng = np.random.default_rng(6)
    V, n_ctx = 1000, 300

    def contexts(s):
        zp = zipf_logits(V, s) + 0.5 * rng.standard_normal((n_ctx, V))
        return zp, perturbed_logits(zp, 0.5, rng)

    (zc, qc), (zo, qo) = contexts(2.5), contexts(1.0)
    ts = np.logspace(-2, 0, 41)
    ac = alpha_at_temperature(zc, qc, ts).mean(axis=1)
    ao = alpha_at_temperature(zo, qo, ts).mean(axis=1)
    assert np.all(ac[:-1] > ac[-1]) and np.all(ao[:-1] < ao[-1])

    def ratio(z):
        top2 = np.sort(sm.softmax(z), axis=1)[:, -2:]
        return (top2[:, 0] / top2[:, 1]).mean()

    agree = [sm.top1_agreement(sm.softmax(z), sm.softmax(q)).mean()
             for z, q in ((zc, qc), (zo, qo))]
    assert ratio(zo) > ratio(zc) and agree[1] < agree[0]


def test_decreasing_profile_average_rate_underestimates_en_and_explorer_default_disagrees():
    from specmath.widgets.temperature import default_logits

    profile = np.array([0.92, 0.85, 0.78, 0.7, 0.62, 0.55])
    assert sm.expected_tokens(profile.mean(), 6) < expected_tokens_positional(profile)
    zp, zq = default_logits()
    assert sm.top1_agreement(sm.softmax(zp), sm.softmax(zq)) == 0


def test_chen_humaneval_speedup_exceeds_both_xsum_speedups():
    from specmath import published

    recs = published.load("chen2023", quantity="speedup")
    he = [r["value"] for r in recs if r["task"] == "HumanEval"]
    xs = [r["value"] for r in recs if r["task"] == "XSum"]
    assert min(he) > max(xs)


def test_chapter_5_map_claims_best_k_monotone_speedup_ceiling_and_rounding_loss():
    grid_a, grid_c = np.linspace(0, 0.95, 96), np.logspace(0, 2, 81)
    ga, gc = np.meshgrid(grid_a, grid_c)
    k = sm.optimal_k(ga, gc, k_max=64)
    assert np.all(np.diff(k, axis=1) >= 0) and np.all(np.diff(k, axis=0) >= 0)
    s = sm.speedup(ga, k, gc)
    assert np.all(s[:, 1:] < 1 / (1 - grid_a[1:]))
    best = lambda a, c: sm.speedup(a, sm.optimal_k(a, c, k_max=200), c)  # noqa: E731
    assert best(0.85, 50.0) > best(0.8, 100.0) > best(0.8, 50.0)
    a, c = A[1:, 1:-1], C[1:, 1:-1]
    x = sm.optimal_k_continuous(a, c)
    kb = sm.optimal_k(a, c, k_max=200)
    loss = 1 - sm.speedup(a, np.round(x).astype(int), c) / sm.speedup(a, kb, c)
    assert loss.max() < 0.03 and np.mean(np.round(x) == kb) > 0.9


def test_temperature_changes_the_contexts_a_decode_visits_not_only_the_distributions():
    from specmath.markov_tokens import stationary_law

    t, d = sm.toy.toy_pair(vocab_size=6, closeness=0.6, seed=0)
    pi1 = stationary_law(t.transition)
    tT, dT = t.with_temperature(0.1), d.with_temperature(0.1)
    a_ctx = sm.acceptance_probability(tT.transition, dT.transition)
    assert abs(stationary_law(tT.transition) @ a_ctx - pi1 @ a_ctx) > 0.05


def test_alpha_is_at_least_p_plus_q_of_any_token_minus_one_and_flat_targets_can_have_alpha_1():
    from specmath.temperature import perturbed_logits, zipf_logits

    rng = np.random.default_rng(3)
    zp = zipf_logits(200, 1.5) + 0.5 * rng.standard_normal((50, 200))
    p, q = sm.softmax(zp), sm.softmax(perturbed_logits(zp, 0.7, rng))
    a = sm.acceptance_probability(p, q)
    assert (a[:, None] >= p + q - 1 - 1e-12).all()
    flat = np.full(200, 1 / 200)
    assert sm.acceptance_probability(flat, flat) == pytest.approx(1.0)


def test_positional_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="alphas"):
        expected_tokens_positional(0.5)
    with pytest.raises(ValueError, match="alphas"):
        expected_tokens_positional([0.5, 1.2])
    with pytest.raises(ValueError, match="one-dimensional"):
        simulate_tokens_positional(np.full((2, 2), 0.5), 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="context_token"):
        markov_acceptance_by_position(np.eye(3), np.eye(3), 5, 2)


# ---- figures, explorers, exercises -----------------------------------------------------

def test_chapter_5_figures_and_explorer_draw():
    from specmath.plots.speedup import best_k_heatmap, scenario_curves, speedup_heatmap
    from specmath.widgets.speedup import speedup_explorer, speedup_figure

    fig, S = speedup_heatmap(np.linspace(0, 0.9, 10), np.logspace(0, 2, 8))
    assert S.shape == (8, 10) and (S >= 1 - 1e-12).all()
    fig2, K = best_k_heatmap(np.linspace(0, 0.9, 10), np.logspace(0, 2, 8))
    assert K.dtype.kind == "i"
    scenario_curves([("a", 0.5, 5.0), ("b", 0.9, 2.5)])
    speedup_figure(0.8, 5, 10.0)
    assert speedup_explorer(show_controls=False) is None
    plt.close("all")


def test_chapter_6_figures_and_explorer_draw():
    from specmath.plots.temperature import alpha_entropy_plot, positional_plot
    from specmath.widgets.temperature import (
        default_logits,
        temperature_explorer,
        temperature_figure,
    )

    alpha_entropy_plot({"a": [1, 2]}, {"a": [0.5, 0.6]})
    positional_plot({"x": [0.9, 0.8], "y": [0.85, 0.85]})
    zp, zq = default_logits()
    temperature_figure(zp, zq, 0.0)
    assert temperature_explorer(zp, zq, show_controls=False) is None
    plt.close("all")


def test_exercise_parameters_feed_the_checkers():
    from specmath.exercises import ch5, ch6, check

    assert set(ch5.PARAMS) <= set(check.__globals__["_REGISTRY"])
    assert set(ch6.PARAMS) <= set(check.__globals__["_REGISTRY"])
    c1 = ch5.PARAMS["ch5-ex1"]["c"]
    assert check("ch5-ex1", (np.sqrt(1 + 8 / c1) - 1) / 2, quiet=True)
    assert not check("ch5-ex1", 1.0 / c1, quiet=True)      # the one-token threshold
    s4 = sm.speedup(ch5.indifference_alpha(10.0, 4), 4, 10.0)
    assert s4 == pytest.approx(sm.speedup(ch5.indifference_alpha(10.0, 4), 5, 10.0))


def test_ch5_ex4_difference_of_speedups_is_not_monotone_but_changes_sign_once():
    # issue 16 (student walk-through): the old hint "S(k+1) − S(k) is increasing in α" is
    # false; at c = 10, k = 4 the difference falls until α ≈ 0.45, then rises, and its sign
    # changes exactly once
    a = np.linspace(1e-4, 1 - 1e-4, 4001)
    d = sm.speedup(a, 5, 10.0) - sm.speedup(a, 4, 10.0)
    i = int(np.argmin(d))
    assert 0.40 < a[i] < 0.50
    assert (np.diff(d[:i]) < 0).all() and (np.diff(d[i:]) > 0).all()
    for c in (2.0, 5.0, 10.0, 50.0):
        for k in (1, 2, 4, 8):
            sgn = np.sign(sm.speedup(a, k + 1, c) - sm.speedup(a, k, c))
            sgn = sgn[sgn != 0]
            assert np.count_nonzero(np.diff(sgn)) <= 1


def test_ch5_ex1_two_token_breakeven_is_above_one_over_c_for_every_c_above_one():
    cs = np.linspace(1.01, 200, 2000)
    a2 = (np.sqrt(1 + 8 / cs) - 1) / 2
    assert (a2 > 1 / cs).all()
    assert np.allclose(sm.speedup(a2, 2, cs), 1.0)
    mid = (a2 + 1 / cs) / 2
    assert (sm.speedup(mid, 2, cs) < 1).all() and (sm.speedup(mid, 1, cs) > 1).all()


def test_ch5_lambert_substitution_and_branch_choice():
    from scipy.special import lambertw
    a, c = np.meshgrid(np.linspace(0.05, 0.95, 19), np.linspace(1.1, 60, 25))
    L = np.log(1 / a)
    z = -np.exp(-1 - L * (c - 1))
    assert ((z > -np.exp(-1)) & (z < 0)).all()          # two real branches exist for c > 1
    y_low, y_up = -lambertw(z, k=-1).real, -lambertw(z, k=0).real
    kappa, kappa_up = (y_low - 1) / L - c, (y_up - 1) / L - c
    # the lower branch solves g(κ) = 0 of (ch5-derivative), i.e. α^{κ+1}(1 + L(c+κ)) = 1
    assert np.allclose(a ** (kappa + 1) * (1 + L * (c + kappa)), 1.0, rtol=1e-8)
    # the upper branch solves it too (in logarithms, where y > 1e-3 keeps the digits),
    # but with κ < -c: the derivation's reason to take W₋₁ (not a property of lambertw
    # alone: a sign slip in κ = (y - 1)/L - c fails these lines)
    ok = y_up > 1e-3
    ku, Lo, co = kappa_up[ok], L[ok], c[ok]
    assert ok.any() and np.allclose(-(ku + 1) * Lo + np.log(1 + Lo * (co + ku)), 0.0,
                                    atol=1e-8)
    inner = kappa > 0
    k_bis = sm.optimal_k_continuous(a, c)
    assert np.allclose(np.maximum(kappa, 0)[inner], k_bis[inner], rtol=1e-6, atol=1e-6)
    # the branch choice matters: the upper branch's κ, clipped at 0, misses the
    # bisection's optimum wherever that optimum is positive (R3 finding 4)
    assert inner.any() and (np.abs(np.maximum(kappa_up, 0) - k_bis)[inner] > 1e-3).all()


def test_ch6_ex5_hint_does_not_send_the_student_to_the_forbidden_helper():
    # R1 finding 13: the exercise says "not with the helper"; the hint must not name it
    from specmath import exercises
    exercises.exercise_keys()                      # loads every chapter's registrations
    hint = exercises._REGISTRY["ch6-ex5"].hint
    assert "positional" not in hint and "expected_tokens_markov" not in hint
    assert "M" in hint and "loop" in hint


def test_ch5_ex3_range_of_c_where_k_is_best_matches_the_best_k_found_by_evaluating_s():
    # issue 16, S43/S40: exercise 5.3 asks for the range of c over which k is the best
    # draft length (the calculator gives the best k for one c only). The ratio argument's
    # thresholds c_k = E_k/α^{k+1} − k must bound exactly the c where optimal_k returns k,
    # and consecutive thresholds must differ by 1/α^{k+1} − 1 > 0 (so S is unimodal in k)
    from specmath.exercises import ch5
    for a in (0.5, 0.7, 0.85, 0.95):
        for k in range(1, 8):
            lo, hi = ch5.optimal_c_range(a, k)
            assert hi - lo == pytest.approx(1 / a ** (k + 1) - 1) and hi > lo
            for c in np.linspace(lo, hi, 7)[1:-1]:
                assert sm.optimal_k(a, c) == k
            assert sm.optimal_k(a, lo * (1 - 1e-6)) == k - 1
            assert sm.optimal_k(a, hi * (1 + 1e-6)) == k + 1
            assert sm.speedup(a, k + 1, hi) == pytest.approx(sm.speedup(a, k, hi))
    assert ch5.longer_draft_threshold(0.7, 0) == pytest.approx(1 / 0.7)   # break-even
    p3 = ch5.PARAMS["ch5-ex3"]
    assert np.allclose(_REG()["ch5-ex3"].compute(),
                       ch5.optimal_c_range(p3["alpha"], p3["k"]))


def _REG():
    from specmath import exercises
    exercises.exercise_keys()
    return exercises._REGISTRY
