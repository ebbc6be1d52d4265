"""specmath.engines (chapter 8): one-hot drafts, processors, lossy rules, metrics.

Statistical tests are G-tests (:func:`specmath.stats.g_test`) at level ``LEVEL = 0.001``
(false-alarm rate 0.1 %) with fixed seeds; each computes its power against a named biased
variant from the exact distributions (noncentral chi-square with λ = 2n·KL) and asserts it
is ≥ ``MIN_POWER``, then runs the biased variant through the same test and asserts that it
fails.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

import specmath as sm
from specmath import engines
from specmath.acceptance import _sample
from specmath.stats import g_test

LEVEL = 1e-3
MIN_POWER = 0.99

P0 = np.array([0.35, 0.25, 0.2, 0.15, 0.05])   # target
Q0 = np.array([0.1, 0.5, 0.2, 0.1, 0.1])       # draft; argmax q = 1


def _power(p0: np.ndarray, p1: np.ndarray, n: int) -> float:
    """Power of the G-test of H0 = p0 with n draws from p1 (λ = 2n·KL(p1‖p0))."""
    m = p1 > 0
    lam = 2 * n * float((p1[m] * np.log(p1[m] / p0[m])).sum())
    dof = int((p0 > 0).sum() - 1)
    return float(sps.ncx2.sf(sps.chi2.isf(LEVEL, dof), dof, lam))


def _first_tokens(step, n, seed, p=P0, q=Q0, draft=None, **kw):
    rng = np.random.default_rng(seed)
    P = np.stack([p, p])
    x = int(np.argmax(q)) if draft is None else draft
    counts = np.zeros(p.size)
    for _ in range(n):
        counts[step(P, q[None], [x], rng, **kw)[0]] += 1
    return counts


def _greedy_resample_from_p(p, q, draft_tokens, rng):
    """Biased variant: a one-hot draft whose rejection resamples from p (x not removed)."""
    x = int(draft_tokens[0])
    if rng.random() < p[0, x]:
        return np.array([x, _sample(p[1], rng)])
    return np.array([_sample(p[0], rng)])


# ---- greedy drafts ----------------------------------------------------------------------


def test_greedy_draft_acceptance_is_target_mass_of_draft_argmax_and_example_values():
    assert sm.greedy_draft_acceptance([0.9, 0.1], [0.6, 0.4]) == pytest.approx(0.9)
    assert sm.acceptance_probability([0.9, 0.1], [0.6, 0.4]) == pytest.approx(0.7)
    # the other way round: p(argmax q) = 0.4 < Σ min(p, q) = 0.8
    assert sm.greedy_draft_acceptance([0.4, 0.6], [0.6, 0.4]) == pytest.approx(0.4)
    rng = np.random.default_rng(1)
    P, Q = rng.dirichlet(np.ones(6), 50), rng.dirichlet(np.ones(6), 50)
    want = P[np.arange(50), Q.argmax(axis=1)]
    assert np.allclose(sm.greedy_draft_acceptance(P, Q), want)


def test_greedy_draft_output_distribution_equals_target_exactly():
    rng = np.random.default_rng(2)
    P, Q = rng.dirichlet(np.ones(7) * 0.5, 200), rng.dirichlet(np.ones(7) * 0.5, 200)
    assert np.allclose(sm.greedy_draft_output_distribution(P, Q), P, atol=1e-12)
    # a point-mass target: rejection has probability 0 and the output is still p
    e = np.eye(4)[2]
    assert np.allclose(sm.greedy_draft_output_distribution(e, [0.1, 0.2, 0.6, 0.1]), e)


def test_one_hot_verification_of_sampled_drafts_accepts_sum_pq_which_is_at_most_alpha():
    rng = np.random.default_rng(3)
    P, Q = rng.dirichlet(np.ones(5), 300), rng.dirichlet(np.ones(5), 300)
    pq = (P * Q).sum(axis=1)
    assert (pq <= sm.acceptance_probability(P, Q) + 1e-15).all()


def test_greedy_draft_step_emits_target_g_test_with_power_and_biased_variant_fails():
    n = 8_000
    x = int(np.argmax(Q0))
    biased = P0[x] * np.eye(5)[x] + (1 - P0[x]) * P0                # resample-from-p variant
    power = _power(P0, biased, n)
    assert power >= MIN_POWER, power
    ok = _first_tokens(sm.greedy_draft_step, n, seed=10)
    assert g_test(ok, P0).pvalue > LEVEL
    bad = _first_tokens(_greedy_resample_from_p, n, seed=10)
    assert g_test(bad, P0).pvalue < LEVEL


def test_greedy_draft_step_is_exact_whatever_token_was_drafted():
    # the rule never reads q: drafting the *least* likely draft token is still exact
    n, x = 6_000, 4
    biased = P0[x] * np.eye(5)[x] + (1 - P0[x]) * P0                # resample-from-p variant
    assert _power(P0, biased, n) >= MIN_POWER
    counts = _first_tokens(sm.greedy_draft_step, n, seed=11, draft=x)
    assert g_test(counts, P0).pvalue > LEVEL
    bad = _first_tokens(_greedy_resample_from_p, n, seed=11, draft=x)
    assert g_test(bad, P0).pvalue < LEVEL


def test_greedy_draft_step_second_token_after_acceptance_follows_next_target_row():
    """k = 2: given the first draft accepted, the second emitted token must follow p[1]
    (the target after the drafted prefix). Biased variant: verifies position two against
    p[0] (a stale row), which the same G-test must reject."""
    p1 = np.array([0.05, 0.15, 0.2, 0.25, 0.35])
    P = np.stack([P0, p1, P0])
    x1 = 0                                   # accepted with probability P0[0] = 0.35

    def stale_row(p, q, d, rng):
        return sm.greedy_draft_step(np.stack([p[0], p[0], p[2]]), q, d, rng)

    n = 8_000
    # the conditioning keeps about n·P0[x1] draws; require the power at 90 % of that
    n_min = int(0.9 * n * P0[x1])
    assert _power(p1, P0, n_min) >= MIN_POWER
    for step, seed, exact in ((sm.greedy_draft_step, 13, True), (stale_row, 13, False)):
        rng = np.random.default_rng(seed)
        counts = np.zeros(5)
        for _ in range(n):
            out = step(P, np.stack([Q0, Q0]), [x1, int(np.argmax(Q0))], rng)
            if out.size >= 2:
                counts[out[1]] += 1
        assert counts.sum() >= n_min
        assert (g_test(counts, p1).pvalue > LEVEL) == exact


def test_greedy_draft_step_accepts_everything_when_target_is_a_point_mass():
    rng = np.random.default_rng(0)
    P = np.array([[0, 1.0, 0], [0.2, 0.3, 0.5], [1 / 3] * 3])
    out = sm.greedy_draft_step(P[:2], np.array([[0.1, 0.8, 0.1]]), [1], rng)
    assert out[0] == 1 and out.size == 2
    assert sm.greedy_draft_step(P[:1], np.zeros((0, 3)), np.zeros(0, int), rng).size == 1


# ---- mismatched draft distributions -----------------------------------------------------


def test_mismatched_output_is_target_iff_ratio_uses_the_sampled_draft():
    rng = np.random.default_rng(4)
    P, Q = rng.dirichlet(np.ones(6), 100), rng.dirichlet(np.ones(6), 100)
    assert np.allclose(sm.mismatched_output_distribution(P, Q, Q), P, atol=1e-12)
    onehot = np.eye(6)[Q.argmax(axis=1)]
    tv = sm.tv_distance(sm.mismatched_output_distribution(P, onehot, Q), P)
    assert (tv > 1e-3).mean() > 0.9              # issue #32867: greedy draft, soft ratio


def test_mismatched_output_is_the_sampled_draft_when_ratio_draft_equals_target():
    # q_r = p with supp q_s ⊆ supp q_r: every drafted token passes (β = 1), output = q_s
    rng = np.random.default_rng(8)
    P, Qs = rng.dirichlet(np.ones(5), 50), rng.dirichlet(np.ones(5), 50)
    assert np.allclose(sm.mismatched_output_distribution(P, Qs, P), Qs, atol=1e-12)


def test_top_k_and_top_p_on_both_sides_exact_for_processed_target_raw_ratio_not():
    p, q = P0, Q0
    pk, qk = sm.top_k_filter(p, 3), sm.top_k_filter(q, 2)
    assert np.allclose(sm.output_distribution(pk, qk), pk)
    bad = sm.mismatched_output_distribution(pk, qk, q)
    assert sm.tv_distance(bad, pk) > 0.01
    pp, qp = sm.top_p_filter(p, 0.8), sm.top_p_filter(q, 0.6)   # the same with top-p
    assert np.allclose(sm.output_distribution(pp, qp), pp)
    assert sm.tv_distance(sm.mismatched_output_distribution(pp, qp, q), pp) > 0.01


def test_top_k_and_top_p_known_values():
    d = np.array([0.1, 0.4, 0.3, 0.2])
    assert np.allclose(sm.top_k_filter(d, 2), [0, 4 / 7, 3 / 7, 0])
    assert np.allclose(sm.top_p_filter(d, 0.5), [0, 4 / 7, 3 / 7, 0])
    assert np.allclose(sm.top_p_filter(d, 0.4), [0, 1, 0, 0])
    assert np.allclose(sm.top_p_filter(d, 1.0), d)
    assert np.allclose(sm.top_k_filter(np.stack([d, d[::-1]]), 1), [[0, 1, 0, 0], [0, 0, 1, 0]])


def test_repetition_penalty_divides_positive_and_multiplies_negative_logits():
    z = sm.repetition_penalty([2.0, -1.0, 0.5], [0, 1, 0], 2.0)
    assert np.allclose(z, [1.0, -2.0, 0.5])
    assert np.allclose(sm.repetition_penalty([2.0, -1.0], [], 3.0), [2.0, -1.0])


def test_two_token_joint_is_exact_with_prefix_processing_and_biased_without():
    logits_p, logits_q = np.log(P0), np.log(Q0)
    theta, ctx = 3.0, [0]
    p1 = sm.softmax(sm.repetition_penalty(logits_p, ctx, theta))
    q1 = sm.softmax(sm.repetition_penalty(logits_q, ctx, theta))
    p2 = np.stack([sm.softmax(sm.repetition_penalty(logits_p, ctx + [y], theta))
                   for y in range(5)])
    stale = np.tile(p1, (5, 1))             # penalty not applied along the drafted prefix
    good = sm.two_token_joint(p1, q1, p2, p2)
    assert np.allclose(good, p1[:, None] * p2)
    bad = sm.two_token_joint(p1, q1, stale, p2)
    assert sm.tv_distance(bad.ravel(), good.ravel()) > 0.01


# ---- lossy rules ------------------------------------------------------------------------


def test_lenient_with_l_one_is_exact_and_acceptance_grows_as_l_falls():
    rng = np.random.default_rng(5)
    P, Q = rng.dirichlet(np.ones(5), 100), rng.dirichlet(np.ones(5), 100)
    assert np.allclose(sm.lenient_output_distribution(P, Q, 1.0), P, atol=1e-12)
    ls = np.array([1.0, 0.8, 0.5, 0.2, 0.05])
    betas = np.stack([sm.lenient_acceptance(P, Q, l) for l in ls])
    assert (np.diff(betas, axis=0) >= -1e-15).all()
    assert np.allclose(sm.lenient_acceptance(P, Q, 1.0), sm.acceptance_probability(P, Q))


def test_lossy_frontier_tv_at_least_acceptance_gain_and_lenient_attains_it():
    rng = np.random.default_rng(6)
    P, Q = rng.dirichlet(np.ones(6) * 0.7, 200), rng.dirichlet(np.ones(6) * 0.7, 200)
    alpha = sm.acceptance_probability(P, Q)
    for l in (0.9, 0.6, 0.3):
        tv = sm.tv_distance(sm.lenient_output_distribution(P, Q, l), P)
        assert np.allclose(tv, sm.lenient_acceptance(P, Q, l) - alpha, atol=1e-12)
    for eps in (0.02, 0.09, 0.3):
        out = sm.typical_output_distribution(P, Q, eps, 0.3)
        beta = sm.typical_acceptance(P, Q, eps, 0.3)
        assert (sm.tv_distance(out, P) >= beta - alpha - 1e-12).all()
    # any residual is at least as far from p as the best one
    a = Q * rng.random(Q.shape)
    best = sm.tv_distance(sm.best_residual_output(P, a), P)
    other = a + (1 - a.sum(axis=1, keepdims=True)) * P
    assert (sm.tv_distance(other, P) >= best - 1e-12).all()


def test_tv_of_independent_positions_lies_between_one_and_n_times_per_position():
    """Chapter 8, eq. compound: TV(o, p) ≤ TV(o^⊗n, p^⊗n) ≤ n·TV(o, p), by enumeration."""
    rng = np.random.default_rng(9)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        o = sm.lenient_output_distribution(p, q, 0.4)
        tv1 = sm.tv_distance(o, p)
        jo, jp = np.ones(1), np.ones(1)
        prev = 0.0
        for n in range(1, 5):
            jo, jp = np.outer(jo, o).ravel(), np.outer(jp, p).ravel()
            tv = sm.tv_distance(jo, jp)
            assert prev - 1e-12 <= tv <= n * tv1 + 1e-12
            prev = tv


def test_lenient_never_accepts_less_than_exact_but_typical_can():
    # lenience: min(q, p/l) ≥ min(q, p) token by token
    rng = np.random.default_rng(10)
    P, Q = rng.dirichlet(np.ones(6), 100), rng.dirichlet(np.ones(6), 100)
    for l in (0.9, 0.5, 0.1):
        assert (sm.lenient_acceptance(P, Q, l) >= sm.acceptance_probability(P, Q) - 1e-15).all()
    # typical, Medusa's defaults ε = 0.09, δ = 0.3: θ = 0.09 on both pairs below
    p, q = [0.9, 0.05, 0.05], [0.5, 0.25, 0.25]      # the two p = 0.05 tokens never pass
    assert sm.typical_acceptance(p, q, 0.09, 0.3) == pytest.approx(0.5)
    assert sm.acceptance_probability(p, q) == pytest.approx(0.6)
    p, q = [0.4, 0.3, 0.3], [0.1, 0.45, 0.45]        # every token passes
    assert sm.typical_acceptance(p, q, 0.09, 0.3) == pytest.approx(1.0)
    assert sm.acceptance_probability(p, q) == pytest.approx(0.7)


def test_typical_threshold_known_values():
    u = np.ones(4) / 4                              # H = ln 4, e^{−H} = 1/4
    assert sm.typical_threshold(u, 0.09, 0.3) == pytest.approx(0.075)
    assert sm.typical_threshold(u, 0.05, 0.3) == pytest.approx(0.05)
    assert sm.typical_acceptance(u, [0.5, 0.5, 0, 0], 0.09, 0.3) == pytest.approx(1.0)


@pytest.mark.parametrize(("step", "kw", "exact"), [
    # l = 0.9: β(l) < 1 on this pair, so rejections and the residual branch are exercised
    (sm.lenient_step, {"l": 0.9}, lambda: sm.lenient_output_distribution(P0, Q0, 0.9)),
    (sm.typical_step, {"eps": 0.2, "delta": 0.3},
     lambda: sm.typical_output_distribution(P0, Q0, 0.2, 0.3)),
])
def test_lossy_steps_emit_their_computed_output_law_and_not_the_target(step, kw, exact):
    """Sampling matches the exact (biased) law; the same test against p must fail."""
    n = 8_000
    rng = np.random.default_rng(12)
    want = exact()
    assert _power(P0, want, n) >= MIN_POWER
    counts = np.zeros(5)
    P = np.stack([P0, P0])
    for _ in range(n):
        x = int(np.searchsorted(np.cumsum(Q0), rng.random() * 1.0, side="right"))
        counts[step(P, Q0[None], [min(x, 4)], rng, **kw)[0]] += 1
    assert g_test(counts, want).pvalue > LEVEL
    assert g_test(counts, P0).pvalue < LEVEL


def _lenient_resample_from_p(p, q, draft_tokens, rng, l):
    """Biased variant: the lenient test, but a rejection resamples from p itself."""
    x = int(draft_tokens[0])
    if rng.random() * l * q[0, x] < p[0, x]:
        return np.array([x])
    return np.array([_sample(p[0], rng)])


def test_lenient_step_residual_branch_runs_and_resampling_from_p_is_rejected():
    """At l = 0.9 the pair has β(l) < 1: a lenient step whose residual is p (not
    norm(max(0, p − q))) has a different law, which the G-test must reject."""
    n, l = 8_000, 0.9
    beta = sm.lenient_acceptance(P0, Q0, l)
    assert beta < 0.8                               # a quarter of the drafts is rejected
    want = sm.lenient_output_distribution(P0, Q0, l)
    mutant = np.minimum(Q0, P0 / l) + (1 - beta) * P0
    assert _power(want, mutant, n) >= MIN_POWER
    counts = {}
    for name, step in (("ok", sm.lenient_step), ("bad", _lenient_resample_from_p)):
        rng = np.random.default_rng(13)
        c = np.zeros(5)
        for _ in range(n):
            x = min(int(np.searchsorted(np.cumsum(Q0), rng.random(), side="right")), 4)
            c[step(np.stack([P0, P0]), Q0[None], [x], rng, l=l)[0]] += 1
        counts[name] = c
    assert g_test(counts["ok"], want).pvalue > LEVEL
    assert g_test(counts["bad"], want).pvalue < LEVEL


def test_mismatched_residual_has_mass_whenever_acceptance_below_one():
    """Chapter 8, proof of the processed-target theorem: if q_r > 0 wherever q_s > 0 and
    β < 1 then max(0, p' − q_r) has positive mass; if p' = q_r then β = 1."""
    rng = np.random.default_rng(81)
    n_lt1 = 0
    for i in range(2_000):
        p, qr = rng.dirichlet(np.ones(5) * 0.3, size=2)
        qs = sm.top_k_filter(qr, int(rng.integers(1, 6))) if i % 2 else qr
        beta_same = float((qs * np.minimum(1, qr / qr)).sum())
        assert beta_same == pytest.approx(1.0)
        beta = float((qs * np.minimum(1, p / qr)).sum())
        if beta < 1 - 1e-12:
            n_lt1 += 1
            assert np.maximum(0, p - qr).sum() > 0
            law = sm.mismatched_output_distribution(p, qs, qr)
            assert (law >= 0).all() and law.sum() == pytest.approx(1.0)
    assert n_lt1 > 1_000


def test_nearly_one_hot_draft_loses_at_most_one_minus_its_top_mass_when_made_greedy():
    """Chapter 8: α − α_greedy ≤ Σ_{x≠x*} min(p, q) ≤ 1 − q(x*)."""
    rng = np.random.default_rng(14)
    P, Q = rng.dirichlet(np.ones(6) * 0.5, 500), rng.dirichlet(np.ones(6) * 0.5, 500)
    for w in (0.0, 0.9, 0.99):
        Qw = w * np.eye(6)[Q.argmax(axis=1)] + (1 - w) * Q
        loss = sm.acceptance_probability(P, Qw) - sm.greedy_draft_acceptance(P, Qw)
        assert (loss <= 1 - Qw.max(axis=1) + 1e-12).all()
    assert loss.max() <= 0.01 + 1e-12 and loss.max() > 0


def test_sum_pq_equals_alpha_exactly_where_each_token_has_a_zero_or_a_one():
    """Chapter 8, ch8-ex2(b): Σ pq = Σ min(p, q) iff on every token p or q is 0 or 1
    (every pair of laws on three tokens with masses in tenths)."""
    grid = [np.array([a, b, 10 - a - b]) / 10 for a in range(11) for b in range(11 - a)]
    n_eq = 0
    for p in grid:
        for q in grid:
            equal = abs(p @ q - np.minimum(p, q).sum()) < 1e-12
            edge = all(min(a, b) == 0 or max(a, b) == 1 for a, b in zip(p, q, strict=True))
            assert equal == edge
            n_eq += equal
    assert 0 < n_eq < len(grid) ** 2


# ---- metrics ----------------------------------------------------------------------------


def test_engine_metrics_known_values_and_round_trip_to_mean_tokens():
    m = sm.engine_metrics([0, 2, 3, 1], 3)
    assert m == pytest.approx({"mean_acceptance_length": 2.5, "mean_accepted_drafts": 1.5,
                               "vllm_draft_acceptance_rate": 0.5, "sglang_accept_rate": 0.625})
    for name, v in m.items():
        assert sm.mean_tokens_from_metric(v, name, 3) == pytest.approx(2.5)


def test_metrics_of_simulated_iterations_recover_alpha():
    rng = np.random.default_rng(7)
    alpha, k, n = 0.7, 4, 40_000
    N = sm.simulate_tokens_per_iteration(alpha, k, n, rng)
    m = sm.engine_metrics(N - 1, k)
    se = np.std(N) / np.sqrt(n)       # 5 standard errors: false alarm below 1e-6
    assert abs(m["mean_acceptance_length"] - sm.expected_tokens(alpha, k)) < 5 * se
    # vLLM's rate estimates (α + … + α^k)/k, which is below α (chapter 4, eq. rate)
    rate_model = sum(alpha ** j for j in range(1, k + 1)) / k
    assert abs(m["vllm_draft_acceptance_rate"] - rate_model) < 5 * se / k
    assert rate_model < alpha
    a_hat = sm.alpha_from_acceptance_rate(m["vllm_draft_acceptance_rate"], k)
    assert abs(a_hat - alpha) < 0.01


def test_published_engine_metric_definitions_carry_sources():
    from specmath import published
    recs = published.load("engines_metrics")
    assert {r["system"] for r in recs} >= {"vLLM", "SGLang", "Spec-Bench"}
    for r in recs:
        assert (r["metric"] in engines.ENGINE_METRICS
                or r["quantity"] in ("default_setting", "verification_rule",
                                     "downstream_metric"))
        assert r["commit"] and r["path"] and r["url"].startswith("https://github.com/")


def test_vllm_block_option_and_k_schedule_quotes_in_chapters_9_and_11_match_the_records():
    # the chapters quote vLLM's SpeculativeConfig at one commit; the records hold the
    # quotes with that commit, so a chapter that drifts from its source fails here
    from specmath import published
    book = Path(__file__).resolve().parents[1] / "book" / "md"
    ch9 = " ".join((book / "09_block_verification.md").read_text().split())
    ch11 = " ".join((book / "11_serving.md").read_text().split())
    (blk,) = published.load("engines_metrics", name="rejection_sample_method")
    (sch,) = published.load("engines_metrics", name="num_speculative_tokens_per_batch_size")
    assert blk["value"] == "standard" and sch["value"] is None
    assert blk["commit"] == sch["commit"] and blk["commit"][:8] in ch11
    assert "block verification (Sun et al.)" in blk["source"]
    assert '("block verification (Sun et al.)")' in ch9
    quote = "batch-size schedule used to dynamically choose speculative-token count"
    assert quote.capitalize() in sch["source"] and quote in ch11
    assert "(range_start, range_end, num_speculative_tokens)" in sch["source"]
    assert "(range_start, range_end, num_speculative_tokens)" in ch11.replace("`", "")
