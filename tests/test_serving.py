"""Chapter 11's modules: specmath.serving, specmath.adaptive and specmath.batching.

Exact identities are checked in exact or float arithmetic; statistical checks use fixed
seeds and state their false-alarm rate; every public function has a bad-input case
(`test_every_public_function_of_chapter_11_has_a_bad_input_case`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import specmath as sm
from specmath import adaptive as ad
from specmath import batching as bt
from specmath import costmodel as cm
from specmath import serving as sv
from specmath import traces as tr

TGT = bt.ModelShape(70e9, 80, 64, 8, 128)
DRF = bt.ModelShape(7e9, 32, 32, 8, 128)
LEVEL = 1e-3


# ---- serving: Var(N), renewal, latency, bursts, workloads ------------------------------

def _var_fraction(a: Fraction, k: int) -> Fraction:
    pm = [a ** (j - 1) * (1 - a) for j in range(1, k + 1)] + [a ** k]
    m1 = sum(j * pm[j - 1] for j in range(1, k + 2))
    return sum(j * j * pm[j - 1] for j in range(1, k + 2)) - m1 ** 2


@pytest.mark.parametrize("a", [Fraction(0), Fraction(1, 7), Fraction(1, 2), Fraction(9, 10),
                               Fraction(99, 100), Fraction(1)])
def test_variance_closed_form_equals_exact_second_moment(a):
    for k in range(0, 15):
        assert sv.tokens_per_iteration_variance(float(a), k) == pytest.approx(
            float(_var_fraction(a, k)), abs=1e-9)


def test_variance_of_k_equal_one_is_bernoulli_and_large_k_is_geometric():
    a = np.linspace(0, 1, 101)
    np.testing.assert_allclose(sv.tokens_per_iteration_variance(a, 1), a * (1 - a), atol=1e-12)
    b = np.linspace(0, 0.9, 10)
    np.testing.assert_allclose(sv.tokens_per_iteration_variance(b, 500), b / (1 - b) ** 2,
                               rtol=1e-9)


def test_simulated_variance_matches_closed_form():
    rng = np.random.default_rng(1)
    x = sm.simulate_tokens_per_iteration(0.7, 6, 300_000, rng)
    se = np.sqrt((np.mean((x - x.mean()) ** 4) - x.var() ** 2) / x.size)
    # 5 standard errors: false-alarm rate below 1e-6
    assert abs(x.var(ddof=1) - sv.tokens_per_iteration_variance(0.7, 6)) < 5 * se


def test_iterations_to_n_law_is_exact_for_small_cases_by_enumeration():
    # n = 3, k = 1: N ∈ {1, 2}; enumerate sequences of iterations
    a = 0.6
    pm = {1: 1 - a, 2: a}
    law = {}

    def walk(total, m, prob):
        if total >= 3:
            law[m] = law.get(m, 0) + prob
            return
        for j, pj in pm.items():
            walk(total + j, m + 1, prob * pj)
    walk(0, 0, 1.0)
    got = sv.iterations_to_n_pmf(a, 1, 3)
    for m, p in law.items():
        assert got[m] == pytest.approx(p, abs=1e-14)
    assert got.sum() == pytest.approx(1.0, abs=1e-14)


def test_simulated_latency_fits_exact_law_and_clt_is_close():
    rng = np.random.default_rng(2)
    a, k, c, n = 0.75, 4, 8.0, 150
    pm = sv.iterations_to_n_pmf(a, k, n)
    tau = sv.iteration_cost(k, c)
    M = np.rint(sv.simulate_latency(a, k, c, n, 30_000, rng) / tau).astype(int)
    sup = np.flatnonzero(pm > 1e-4)
    lo, hi = sup.min(), sup.max()
    obs = [(M <= lo).sum()] + [(M == m).sum() for m in range(lo + 1, hi)] + [(M >= hi).sum()]
    exp = np.concatenate([[pm[:lo + 1].sum()], pm[lo + 1:hi], [pm[hi:].sum()]])
    assert sm.stats.g_test(np.array(obs), exp).pvalue > LEVEL   # false-alarm rate LEVEL
    mean, var = sv.iterations_to_n_moments(a, k, n)
    cm_, cv_ = sv.renewal_normal_approx(a, k, n)
    assert abs(mean - cm_) < 1 and abs(var / cv_ - 1) < 0.1


def test_clt_standardised_iterations_approach_normal_quantiles_as_n_grows():
    from scipy.stats import norm
    err = []
    for n in (50, 400, 3200):
        mu, var = sv.renewal_normal_approx(0.8, 5, n)
        q = sv.latency_quantile(0.8, 5, 1e9, n, 0.9) / sv.iteration_cost(5, 1e9)
        err.append(abs((q - mu) / math.sqrt(var) - norm.ppf(0.9)))
    assert err[-1] < err[0] and err[-1] < 0.25


def test_inter_token_gaps_fraction_and_cv_and_size_biased_bursts():
    a, k, c = 0.8, 5, 10.0
    tau, p, mean, cv = sv.inter_token_gaps(a, k, c)
    mu = sm.expected_tokens(a, k)
    assert tau == pytest.approx(1.5) and p == pytest.approx(1 / mu)
    assert mean == pytest.approx(1 / sm.speedup(a, k, c))
    assert cv == pytest.approx(math.sqrt(mu - 1))
    law = sv.chunk_size_seen_by_token(a, k)
    n = np.arange(1, k + 2)
    assert law.sum() == pytest.approx(1.0)
    assert law @ n == pytest.approx(mu + sv.tokens_per_iteration_variance(a, k) / mu)
    # simulation: the bursts of uniformly picked tokens follow the size-biased law
    # (G-test at LEVEL), and the plain law of N, the biased variant, is rejected
    rng = np.random.default_rng(12)
    N = sm.simulate_tokens_per_iteration(a, k, 100_000, rng)
    burst = np.repeat(N, N)
    picked = np.bincount(burst[rng.integers(0, burst.size, 3_000)], minlength=k + 2)[1:]
    assert sm.stats.g_test(picked, law).pvalue > LEVEL
    assert sm.stats.g_test(picked, sm.tokens_per_iteration_pmf(a, k)).pvalue < LEVEL


def test_ratio_of_means_is_length_weighted_harmonic_mean_and_at_most_mean_of_ratios():
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = rng.uniform(0, 0.95, 8)
        w = sv.workload_speedups(a, np.full(8, 10.0), 4, 6.0)
        assert w["ratio_of_means"] <= w["mean_of_ratios"] + 1e-12
        S = w["per_request"]
        assert w["ratio_of_means"] == pytest.approx(8 / np.sum(1 / S))
    same = sv.workload_speedups([0.7] * 3, [5, 50, 500], 3, 4.0)
    assert same["ratio_of_means"] == pytest.approx(same["mean_of_ratios"])


# ---- adaptive ----------------------------------------------------------------------------

def test_oracle_closed_form_limits_and_bound_over_fixed_k():
    A, C = np.meshgrid(np.linspace(0, 0.99, 60), np.logspace(0, 2, 30))
    o = ad.oracle_speedup(A, C)
    np.testing.assert_allclose(o, 1 / (1 - A + A / C))
    assert (o >= sm.speedup(A, sm.optimal_k(A, C), C) - 1e-12).all()
    for K in (0, 1, 3, 10):
        assert (ad.oracle_speedup(A, C, K) >= sm.speedup(A, K, C) - 1e-12).all()
    assert ad.oracle_speedup(0.5, 1e12) == pytest.approx(2.0)


def test_fixed_replay_equals_chapter_7_greedy_iterations():
    rng = np.random.default_rng(4)
    for k in (0, 1, 3, 7):
        a = (rng.random(300) < 0.7).astype(int)
        r = ad.replay_fixed(a, k)
        N, d = tr.greedy_iterations(a, k)
        assert (r.N == N).all() and (r.drafted == d).all() and r.tokens == a.size


def test_oracle_replay_wastes_no_draft_and_beats_every_fixed_k():
    rng = np.random.default_rng(5)
    a = (rng.random(2000) < 0.75).astype(int)
    o = ad.replay_oracle(a)
    assert (o.N == o.drafted + 1).all()           # every drafted token accepted
    for k in range(0, 12):
        f = ad.replay_fixed(a, k)
        assert len(o.N) <= len(f.N)               # fewest target passes
        assert o.cost(4.0, 1.0) <= f.cost(4.0, 1.0) + 1e-9


def test_oracle_costs_no_more_than_any_policy_iff_a_draft_costs_under_one_pass():
    """Proposition ch11-prop-oracle-bound: with V(d) = 1 + v d and 0 ≤ u = 1/c + v ≤ 1 the
    uncapped oracle costs no more than fixed k, the threshold rule or the heuristic on
    every string (exact arithmetic on replays, no tolerance beyond rounding); with u > 1
    it costs (L − I_o)(u − 1) more than plain decoding, so the hypothesis is needed."""
    rng = np.random.default_rng(8)
    n_lt = n_gt = 0
    for _ in range(400):
        L = int(rng.integers(10, 120))
        a = (rng.random(L) < rng.uniform(0.2, 0.95)).astype(int)
        a[0] = 1
        qt = rng.random(L)
        c, v = float(rng.choice([1.2, 2.0, 3.0, 10.0])), float(rng.uniform(0, 1.2))
        u = 1 / c + v
        V = 1 + v * np.arange(L + 2)
        o = ad.replay_oracle(a)
        co = o.cost(c, V)
        assert co == pytest.approx(L * u + len(o.N) * (1 - u))
        others = [ad.replay_fixed(a, k).cost(c, V) for k in range(10)]
        others += [ad.replay_threshold(a, qt, h, K).cost(c, V)
                   for h in (0.2, 0.6) for K in (2, 8)]
        others.append(ad.replay_hf_heuristic(a).cost(c, V))
        if u <= 1:
            n_lt += 1
            assert co <= min(others) + 1e-9
        else:
            n_gt += 1
            assert co - others[0] == pytest.approx((L - len(o.N)) * (u - 1))
            assert co > others[0]
    assert n_lt > 100 and n_gt > 100


def test_oracle_can_cost_more_than_fixed_k_when_a_draft_makes_verification_cheaper():
    """Review R4 B1: the proposition also needs u ≥ 0. With c = 10 and v = −0.11
    (u = −0.01, V(d) > 0 for d ≤ 9) the oracle costs 30 on 30 disagreements and a fixed
    k = 8, which wastes every draft, costs 27.96; the chapter computes the same pair."""
    c, v = 10.0, -0.11
    V = 1 + v * np.arange(10)
    assert (V > 0).all() and 1 / c + v < 0
    a = np.zeros(30, dtype=int)
    assert ad.replay_oracle(a).cost(c, V) == pytest.approx(30.0)
    assert ad.replay_fixed(a, 8).cost(c, V) == pytest.approx(27.96)


def test_oracle_iterations_match_an_independent_count_of_runs_with_end_of_text_cap():
    """The proof's equality cost = L u + I_o (1 − u) uses I_o, the oracle's iterations;
    counted here without specmath.adaptive (each iteration drafts the run of agreements,
    cut at the end of the text), it equals the replay's on random strings."""
    def count(a):
        s = n = 0
        while s < len(a):
            r = 0
            while s + r < len(a) - 1 and a[s + r]:
                r += 1
            s, n = s + r + 1, n + 1
        return n

    rng = np.random.default_rng(21)
    for _ in range(300):
        L = int(rng.integers(1, 80))
        a = (rng.random(L) < rng.uniform(0.0, 1.0)).astype(int)
        assert len(ad.replay_oracle(a).N) == count(a)


def test_threshold_rule_extremes_are_plain_decoding_and_fixed_k():
    rng = np.random.default_rng(6)
    a = (rng.random(200) < 0.7).astype(int)
    q = rng.uniform(0.2, 0.9, 200)
    never = ad.replay_threshold(a, q, 1.0, 8)      # max q < 1: never drafts
    assert (never.drafted == 0).all() and never.tokens == 200
    always = ad.replay_threshold(a, q, 0.0, 5)     # always drafts up to the cap
    fixed = ad.replay_fixed(a, 5)
    assert (always.N == fixed.N).all() and (always.passes == fixed.passes).all()


def test_threshold_rule_charges_the_pass_that_saw_low_confidence():
    a = np.ones(10, int)
    q = np.array([0.9, 0.9, 0.1] + [0.9] * 7)
    r = ad.replay_threshold(a, q, 0.5, 8)
    assert r.drafted[0] == 2 and r.passes[0] == 3 and r.N[0] == 3


def test_hf_heuristic_follows_plus_two_minus_one():
    a = np.array([1] * 5 + [0] + [1] * 40)
    r = ad.replay_hf_heuristic(a, 2)
    # iteration 1 drafts 2 (all accepted → 4), iteration 2 drafts 4 but position 5 disagrees
    assert r.drafted[:3].tolist() == [2, 4, 3]


def test_hf_roc_threshold_minimises_fpr_plus_three_fnr_like_sklearn():
    rng = np.random.default_rng(7)
    p = rng.random(60)
    y = (rng.random(60) < p).astype(int)
    th = ad.hf_roc_threshold(p, y)
    best = min((np.mean(p[y == 0] >= t) + 3 * np.mean(p[y == 1] < t), -t)
               for t in np.concatenate([[np.inf], p]))
    assert np.mean(p[y == 0] >= th) + 3 * np.mean(p[y == 1] < th) == pytest.approx(best[0])


def test_hf_roc_threshold_cost_equals_sklearn_roc_minimum():
    rng = np.random.default_rng(7)
    p = rng.random(60)
    y = (rng.random(60) < p).astype(int)
    th = ad.hf_roc_threshold(p, y)
    best = [np.mean(p[y == 0] >= th) + 3 * np.mean(p[y == 1] < th)]
    sk = pytest.importorskip("sklearn.metrics")
    fpr, tpr, ths = sk.roc_curve(y, p)
    assert np.min(fpr + 3 * (1 - tpr)) == pytest.approx(best[0])


def test_hf_defaults_match_installed_transformers():
    tf = pytest.importorskip("transformers")
    from transformers.generation import configuration_utils as cu
    src = open(cu.__file__).read()
    for key in ("num_assistant_tokens", "num_assistant_tokens_schedule",
                "assistant_confidence_threshold"):
        assert f'"{key}": {ad.HF_DEFAULTS[key]!r}'.replace("'", '"') in src
    assert tf.__version__ == ad.HF_DEFAULTS["transformers_version"]


def test_threshold_rule_is_exact_and_peeking_rule_is_caught():
    """G-test at LEVEL on the first two tokens; the peeking variant must be rejected."""
    rng = np.random.default_rng(8)
    t, d = sm.toy.toy_pair(4, 0.5, seed=3)
    law = (t.transition[0][:, None] * t.transition).ravel()

    def counts(peek, runs):
        X = np.array([ad.threshold_decode_markov(t, d, 2, 0.55, 3, rng, peek=peek)
                      for _ in range(runs)])
        return np.bincount(X[:, 0] * 4 + X[:, 1], minlength=16)
    assert sm.stats.g_test(counts(False, 5000), law).pvalue > LEVEL
    # power, computed: the peeking rule's exact law (a drafted position after x emits
    # min(p, q) + (1 − α_x) p; position t is drafted iff max q(·|x_{t−1}) ≥ h, K ≥ 2)
    # gives the G statistic's noncentrality at 5000 runs
    from scipy import stats as sps
    P, Q = t.transition, d.transition
    mn = np.minimum(P, Q)
    L = np.where((Q.max(1) >= 0.55)[:, None], mn + (1 - mn.sum(1))[:, None] * P, P)
    peek_law = (L[0][:, None] * L).ravel()
    lam = 2 * 5000 * np.sum(peek_law * np.log(np.maximum(peek_law, 1e-300) / law))
    assert sps.ncx2.sf(sps.chi2.isf(LEVEL, 15), 15, lam) > 0.99
    peek = counts(True, 5000)
    assert sm.stats.g_test(peek, peek_law).pvalue > LEVEL    # the exact law is right
    assert sm.stats.g_test(peek, law).pvalue < LEVEL


def test_bootstrap_ratio_point_and_interval():
    rng = np.random.default_rng(9)
    ca = rng.uniform(1, 2, 30)
    cb = 1.5 * ca
    pt, lo, hi = ad.bootstrap_ratio(np.ones(30), ca, cb, rng=rng)
    assert pt == pytest.approx(1.5) and lo == pytest.approx(1.5) and hi == pytest.approx(1.5)
    pt, lo, hi = ad.bootstrap_ratio(np.ones(30), ca, rng.uniform(1, 2, 30), rng=rng)
    assert lo < pt < hi


def test_synthetic_traces_have_the_shape_the_loader_accepts(tmp_path):
    import json
    T = ad.synthetic_traces(6, 40, seed=1)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(T))
    R = tr.load_traces(f)
    assert {r["split"] for r in R["prompts"]} == {"train", "test"}
    assert all(len(r["q_top"]) == r["L"] == len(r["agree"]) for r in R["prompts"])


# ---- batching ----------------------------------------------------------------------------

def test_batch_pass_of_one_row_is_chapter_1_forward_time():
    for hw in cm.ILLUSTRATIVE_GPUS:
        for m in (1, 4, 300):
            assert bt.batch_pass_time(TGT, 1, m, hw) == pytest.approx(
                cm.forward_time(m, TGT.params, hw))


def test_break_even_search_matches_closed_form_on_three_gpus():
    c = cm.speed_ratio(TGT.params, DRF.params)
    for hw in cm.ILLUSTRATIVE_GPUS:
        ns = cm.ridge_point(hw)
        for a in (0.6, 0.8, 0.9):
            for k in (1, 3, 5, 8):
                en = sm.expected_tokens(a, k)
                if en - k / c < 1:
                    continue
                closed = bt.break_even_batch_closed_form(a, k, c, ns)
                assert bt.break_even_batch(a, k, TGT, DRF, hw) == math.floor(closed) + 1


def test_large_batch_speedup_is_inverse_operations_factor():
    c = cm.speed_ratio(TGT.params, DRF.params)
    for a in (0.5, 0.9):
        for k in (1, 4):
            s = bt.batch_speedup(a, k, 10_000, TGT, DRF, cm.H100_SXM)
            assert s == pytest.approx(1 / sm.operations_factor(a, k, 1 / c))
            assert s < 1


def test_best_k_falls_with_batch_size_to_zero():
    Bs = np.arange(1, 1200)
    kb = bt.best_k_for_batch(0.8, Bs, TGT, DRF, cm.H100_SXM)
    assert (np.diff(kb) <= 0).all() and kb[0] > 0 and kb[-1] == 0


def test_long_context_keeps_speculation_winning_at_large_batch():
    win = bt.ModelShape(7e9, 32, 32, 8, 128, kv_window=2048)
    assert bt.batch_speedup(0.8, 5, 256, TGT, win, cm.H100_SXM, context=32768) > 1
    assert bt.batch_speedup(0.8, 5, 256, TGT, win, cm.H100_SXM, context=0) < 1
    # the window caps the draft's KV bytes
    assert win.kv_bytes(32768, 1) == win.kv_bytes(2048, 1) < DRF.kv_bytes(32768, 1)


def test_goodput_per_batch_choice_is_expected_optimum_and_oracle_dominates():
    rng = np.random.default_rng(10)
    steps = [rng.choice([0.5, 0.9], size=B) for B in rng.choice([1, 16, 128, 512], 200)]
    g = bt.goodput_policies(steps, TGT, DRF, rng)
    assert g["oracle"] >= g["per_batch"] - 1e-12 and g["oracle"] >= g["fixed"] - 1e-12
    # k = 0 at the largest batches, k > 0 at B = 1
    ks = g["k_per_batch"]
    sizes = np.array([s.size for s in steps])
    assert (ks[sizes == 512] == 0).all() and (ks[sizes == 1] > 0).all()
    a0 = np.array([0.6, 0.9, 0.8])
    gp = bt.batch_goodput(a0, np.arange(5), TGT, DRF)
    for k in range(5):
        assert gp[k] == pytest.approx(bt.batch_goodput(a0, k, TGT, DRF))
    assert gp[0] == pytest.approx(3 / bt.batch_pass_time(TGT, 3, 1))


# ---- bad input ---------------------------------------------------------------------------

RNG = np.random.default_rng(0)
T_TOY, D_TOY = sm.toy.toy_pair(3, 0.5, seed=0)
CASES = [
    ("tokens_per_iteration_variance alpha", lambda: sv.tokens_per_iteration_variance(1.2, 3),
     r"alpha"),
    ("iteration_cost c", lambda: sv.iteration_cost(3, -1.0), r"c must"),
    ("iterations_to_n_pmf n", lambda: sv.iterations_to_n_pmf(0.5, 3, 0), r"n must"),
    ("iterations_to_n_moments k", lambda: sv.iterations_to_n_moments(0.5, -1, 5), r"k must"),
    ("renewal_normal_approx n", lambda: sv.renewal_normal_approx(0.5, 3, 0), r"n must"),
    ("latency_quantile q", lambda: sv.latency_quantile(0.5, 3, 2.0, 10, 1.5), r"q must"),
    ("simulate_latency n_requests",
     lambda: sv.simulate_latency(0.5, 3, 2.0, 10, 0, RNG), r"n_requests must"),
    ("inter_token_gaps alpha", lambda: sv.inter_token_gaps(-0.1, 3, 2.0), r"alpha"),
    ("chunk_size_seen_by_token k", lambda: sv.chunk_size_seen_by_token(0.5, 1.5), r"k must"),
    ("workload_speedups shapes", lambda: sv.workload_speedups([0.5, 0.6], [10], 3, 2.0),
     r"alphas and lengths"),
    ("oracle_speedup c", lambda: ad.oracle_speedup(0.5, 0.0), r"c must"),
    ("replay_fixed agree", lambda: ad.replay_fixed([0, 2, 1], 3), r"agree must"),
    ("replay_threshold q_top shape", lambda: ad.replay_threshold([1, 0], [0.5], 0.5, 3),
     r"q_top must"),
    ("replay_oracle k_max", lambda: ad.replay_oracle([1, 0], -1), r"k_max must"),
    ("replay_hf_heuristic k0", lambda: ad.replay_hf_heuristic([1, 0], 0), r"k0 must"),
    ("replay_hf_confidence threshold",
     lambda: ad.replay_hf_confidence([1, 0], [0.5, 0.5], threshold=2.0), r"threshold must"),
    ("hf_roc_threshold one class", lambda: ad.hf_roc_threshold([0.2, 0.3], [1, 1]),
     r"matches must contain both"),
    ("aggregate_speedup c", lambda: ad.aggregate_speedup([ad.replay_fixed([1, 0], 1)], 0, 1),
     r"c must"),
    ("bootstrap_ratio shapes", lambda: ad.bootstrap_ratio([1, 1], [1.0, 2.0], [1.0]),
     r"cost_a and cost_b"),
    ("synthetic_traces n_prompts", lambda: ad.synthetic_traces(1), r"n_prompts must"),
    ("threshold_decode_markov models",
     lambda: ad.threshold_decode_markov(np.eye(3), D_TOY, 2, 0.5, 2, RNG),
     r"target and draft must be"),
    ("Replay.cost V too short",
     lambda: ad.replay_fixed([1, 1, 1, 0], 3).cost(2.0, [1.0, 1.1]), r"V must cover"),
    ("ModelShape layers", lambda: bt.ModelShape(1e9, 0, 8, 8, 64), r"layers must"),
    ("batch_pass_time model", lambda: bt.batch_pass_time("70B", 1, 1), r"model must be"),
    ("batch_speedup B", lambda: bt.batch_speedup(0.8, 3, 0, TGT, DRF), r"B must"),
    ("break_even_batch k", lambda: bt.break_even_batch(0.8, 0, TGT, DRF), r"k must"),
    ("break_even_batch_closed_form n_star",
     lambda: bt.break_even_batch_closed_form(0.8, 3, 10.0, -5.0), r"n_star must"),
    ("best_k_for_batch draft", lambda: bt.best_k_for_batch(0.8, 4, TGT, None), r"draft must"),
    ("batch_goodput alphas", lambda: bt.batch_goodput([], 3, TGT, DRF), r"alphas must"),
    ("load_batch_cost path", lambda: bt.load_batch_cost("/nonexistent/b.json"),
     r"path must name an existing file"),
    ("goodput_policies alpha_batches",
     lambda: bt.goodput_policies([], TGT, DRF, RNG), r"alpha_batches must"),
]


@pytest.mark.parametrize(("func", "match"), [(f, m) for _, f, m in CASES],
                         ids=[name for name, _, _ in CASES])
def test_bad_input_raises_value_error_naming_argument(func, match):
    with pytest.raises(ValueError, match=match):
        func()


def test_every_public_function_of_chapter_11_has_a_bad_input_case():
    covered = {name.split(" ")[0].split(".")[0] for name, _, _ in CASES}
    public = [n for mod in (sv, ad, bt) for n in mod.__all__
              if callable(getattr(mod, n)) and n not in ("Replay",)]
    missing = sorted(set(public) - covered)
    assert not missing, f"no bad-input test for {missing}"
