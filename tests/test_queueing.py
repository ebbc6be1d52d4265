"""Chapter 11, queueing and memory: the M/G/1 mean wait (Pollaczek–Khinchine), what
speculation does to it, the overloaded-run latency of vLLM issue 10318, and the largest
batch with and without the draft (specmath.queueing, specmath.capacity)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from specmath import batching as bt
from specmath import capacity as cp
from specmath import published
from specmath import queueing as qu
from specmath import serving as sv

ROOT = Path(__file__).resolve().parents[1]
LEVEL = 1e-3                      # false-alarm rate of the statistical tests below
Z = sps.norm.isf(LEVEL / 2)
A, K, C = 0.8, 5, 10.0
LENS, W = np.array([50, 100, 200, 400]), np.array([0.4, 0.3, 0.2, 0.1])
PRE = 10.0


def _spec_services(n_cust, rng):
    cls = rng.choice(LENS.size, n_cust, p=W)
    t = np.empty(n_cust)
    for i, n in enumerate(LENS):
        idx = np.flatnonzero(cls == i)
        t[idx] = PRE * (1 + 1 / C) + sv.simulate_latency(A, K, C, int(n), idx.size, rng)
    return t


def test_pk_mean_wait_matches_a_simulated_mg1_queue_and_rejects_md1_and_mm1():
    """Regenerative test at level 1e-3 (asymptotic normal, >10 000 busy cycles); the
    M/D/1 and M/M/1 formulas, with the right mean service time, must be rejected, and the
    computed power against each is above 0.99."""
    rng = np.random.default_rng(2024)
    m1, m2 = qu.service_moments(A, K, C, LENS, W, PRE * (1 + 1 / C))
    lam = 0.6 / m1
    waits = qu.simulate_mg1_waits(lam, _spec_services(80_000, rng), rng)
    est, se, cycles = qu.regenerative_mean_wait(waits)
    assert cycles > 10_000
    pk = qu.pk_mean_wait(lam, m1, m2)
    assert abs(est - pk) < Z * se
    phi = lam * m1
    for biased in (lam * m1**2 / (2 * (1 - phi)), phi * m1 / (1 - phi)):
        assert sps.norm.cdf(abs(pk - biased) / se - Z) > 0.99          # power
        assert abs(est - biased) > Z * se


def test_pk_formula_gives_the_mm1_and_md1_textbook_values():
    lam, m = 0.3, 2.0
    phi = lam * m
    assert np.isclose(qu.pk_mean_wait(lam, m, 2 * m**2), phi * m / (1 - phi))     # M/M/1
    assert np.isclose(qu.pk_mean_wait(lam, m, m**2), phi * m / (2 * (1 - phi)))   # M/D/1
    assert np.isclose(qu.mean_ttft(lam, m, m**2, 0.5), phi * m / (2 * (1 - phi)) + 0.5)
    got = qu.pk_mean_wait(np.array([0.1, 0.2]), m, m**2)
    assert got.shape == (2,) and got[1] > got[0]


def test_service_moments_equal_enumeration_of_the_exact_renewal_law_and_k0_is_plain():
    for k, pre in ((0, PRE), (K, PRE * 1.1)):
        th = sv.iteration_cost(k, C)
        m1 = m2 = 0.0
        for n, w in zip(LENS, W, strict=True):
            pm = sv.iterations_to_n_pmf(A, k, int(n))
            t = pre + th * np.arange(pm.size)
            m1 += w * (pm @ t)
            m2 += w * (pm @ t**2)
        assert np.allclose(qu.service_moments(A, k, C, LENS, W, pre), [m1, m2], rtol=1e-10)
    assert qu.service_moments(A, 0, C, [200], None, 10.0) == (210.0, 210.0**2)


def test_wait_falls_more_than_the_speedup_exactly_above_the_threshold():
    rng = np.random.default_rng(7)
    seen_inside = 0
    for _ in range(200):
        a = rng.uniform(0.2, 0.95)
        k = int(rng.integers(1, 6))
        n = int(rng.integers(2, 12))
        mp, ms = qu.service_moments(a, 0, C, [n]), qu.service_moments(a, k, C, [n])
        if ms[0] >= mp[0]:
            with pytest.raises(ValueError, match="spec_mean must be < plain_mean"):
                qu.wait_ratio_threshold(*mp, *ms)
            continue
        s = mp[0] / ms[0]
        th = qu.wait_ratio_threshold(*mp, *ms)
        phis = np.linspace(0, 0.99, 100)
        above = qu.wait_ratio(phis, *mp, *ms) > s * (1 + 1e-12)
        away = np.abs(phis - th) > 1e-9
        assert np.array_equal(above[away], (phis > th)[away])
        seen_inside += 0 < th < 1
    assert seen_inside >= 5                    # the condition is not always slack


def test_running_example_wait_ratio_exceeds_the_service_speedup_at_every_load():
    mp = qu.service_moments(A, 0, C, LENS, W, PRE)
    ms = qu.service_moments(A, K, C, LENS, W, PRE * (1 + 1 / C))
    assert qu.wait_ratio_threshold(*mp, *ms) == 0
    r = qu.wait_ratio(np.linspace(0, 0.99, 50), *mp, *ms)
    assert np.all(r > mp[0] / ms[0]) and np.all(np.diff(r) > 0)


@pytest.mark.parametrize("call, arg", [
    (lambda: qu.pk_mean_wait(0.01, 100.0, 1e4), "arrival_rate × service_mean"),
    (lambda: qu.pk_mean_wait(-0.1, 1.0, 1.0), "arrival_rate"),
    (lambda: qu.pk_mean_wait(0.1, 2.0, 3.0), "service_second_moment"),
    (lambda: qu.utilisation(0.1, -1.0), "service_mean"),
    (lambda: qu.mean_ttft(0.1, 1.0, 1.0, 2.0), "prefill"),
    (lambda: qu.wait_ratio(1.0, 2.0, 4.0, 1.0, 1.0), "phi_plain"),
    (lambda: qu.overloaded_excess_bounds(32, 1.0, 1.5), "laplace"),
    (lambda: qu.simulate_overloaded_runs(np.ones(4), 1.0, 0), "services"),
    (lambda: qu.overloaded_service_mean(-1.0, 32), "duration"),
    (lambda: qu.service_moments(0.8, 2, 4.0, [10, 20], [0.5, 0.6]), "weights"),
    (lambda: qu.simulate_mg1_waits(0.1, [1.0], "seed"), "rng"),
    (lambda: cp.max_batch(1e9, 4096, cp.shape_from_config(_cfg("1.5b"))), "memory_bytes"),
])
def test_bad_input_raises_a_value_error_naming_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_vectorised_fifo_waits_equal_lindleys_recursion_loop():
    rng = np.random.default_rng(3)
    a, t = rng.exponential(1.0, 500), rng.gamma(2.0, 0.4, 500)
    w = [0.0]
    for i in range(1, 500):
        w.append(max(0.0, w[-1] + t[i - 1] - a[i]))
    assert np.allclose(qu.fifo_waits(a, t), w)


def test_overloaded_run_formula_is_a_pathwise_lower_bound_with_excess_within_the_bound():
    """ch11-prop-over: e2e_i ≥ T_1 + … + T_i − 𝒯_i on every run; the mean excess is at
    most (n − 1) E[e^{−λT}]/(2λ); P(idle) ≤ (n − 1) E[e^{−λT}]. The proof's steps are
    checked on every run (excess = Σ (n − i + 1) I_i / n, I_i ≤ (G_i − T_{i−1})⁺) and the
    dominating terms' means equal the bounds (two-sided, level 1e-3 each); P(idle) is
    compared with its bound where that is below one (E[T] = 8, cv 0.5: about 0.38). The
    variant that forgets the arrival spread, (n + 1) E[T]/2, is rejected."""
    rng = np.random.default_rng(11)
    lam, n, R = 1.0, 32, 20_000
    binding = 0
    for et, cv in ((3.0, 0.5), (3.0, 1.5), (8.0, 0.5)):
        t = rng.gamma(1 / cv**2, et * cv**2, size=(R, n))
        s = qu.simulate_overloaded_runs(t, lam, rng)
        assert s["arrivals"][:, 0].max() == 0.0                 # first request at 0
        path = (np.cumsum(t, axis=1) - s["arrivals"]).mean(axis=1)
        exc = s["mean_e2e"] - path
        assert exc.min() >= -1e-9
        assert np.allclose(s["duration"], t.sum(axis=1) + s["idle"])
        b_dur, b_e2e, b_p = qu.overloaded_excess_bounds(n, lam, qu.gamma_laplace(et, cv, lam))
        assert exc.mean() < b_e2e + Z * exc.std(ddof=1) / np.sqrt(R)
        assert s["idle"].mean() < b_dur + Z * s["idle"].std(ddof=1) / np.sqrt(R)
        idle_i = np.maximum(s["arrivals"][:, 1:] - s["departures"][:, :-1], 0.0)
        dom = np.maximum(np.diff(s["arrivals"], axis=1) - t[:, :-1], 0.0)
        w = (n - np.arange(2, n + 1) + 1) / n
        assert np.allclose(exc, idle_i @ w) and np.all(idle_i <= dom + 1e-9)
        for x, b in ((dom @ w, b_e2e), (dom.sum(axis=1), b_dur),
                     ((dom > 0).sum(axis=1), (n - 1) * qu.gamma_laplace(et, cv, lam))):
            assert abs(x.mean() - b) < Z * x.std(ddof=1) / np.sqrt(R)
        if b_p < 1:
            binding += 1
            assert (s["idle"] > 0).mean() < b_p + Z * np.sqrt(0.25 / R)
        m, se = s["mean_e2e"].mean(), s["mean_e2e"].std(ddof=1) / np.sqrt(R)
        assert m >= qu.overloaded_mean_e2e(n, lam, et) - Z * se
        assert abs(m - (n + 1) * et / 2) > Z * se              # biased variant caught
    assert binding == 1


def test_two_request_counterexample_exceeds_the_bound_by_exp_minus_one_over_two():
    """n = 2, T ≡ 1, λ = 1: the bound says 1, the truth is 1 + e⁻¹/2 ≈ 1.184, and
    conditioned on never idling (probability 1 − e⁻¹) the mean is larger still, 1.291:
    'never idle' gives no equality of expectations. Level 1e-3."""
    rng = np.random.default_rng(4)
    R = 400_000
    s = qu.simulate_overloaded_runs(np.ones((R, 2)), 1.0, rng)
    m, se = s["mean_e2e"].mean(), s["mean_e2e"].std(ddof=1) / np.sqrt(R)
    bound = qu.overloaded_mean_e2e(2, 1.0, 1.0)
    exact = bound + qu.overloaded_excess_bounds(2, 1.0, np.exp(-1))[1]
    assert bound == 1.0 and np.isclose(exact, 1 + np.exp(-1) / 2)
    assert abs(m - exact) < Z * se and m - bound > Z * se
    never = s["idle"] == 0
    assert abs(never.mean() - (1 - np.exp(-1))) < Z * np.sqrt(0.25 / R)
    g = 1 - 2 * np.exp(-1)                      # E[G; G ≤ 1] for G ~ Exp(1)
    cond_exact = (1 + 2 - g / (1 - np.exp(-1))) / 2
    cm_ = s["mean_e2e"][never]
    assert abs(cm_.mean() - cond_exact) < Z * cm_.std(ddof=1) / np.sqrt(cm_.size)
    assert cond_exact > exact + 0.1


def test_gamma_laplace_matches_a_monte_carlo_mean_of_exp_minus_s_t():
    rng = np.random.default_rng(8)
    for m, cv in ((2.0, 0.5), (5.0, 1.0), (1.0, 1.5)):
        t = rng.gamma(1 / cv**2, m * cv**2, 200_000)
        e = np.exp(-0.7 * t)
        assert abs(e.mean() - qu.gamma_laplace(m, cv, 0.7)) < Z * e.std() / np.sqrt(t.size)


def _devs_10318(rng, et, cv, lam, n, R):
    s = qu.simulate_overloaded_runs(rng.gamma(1 / cv**2, et * cv**2, (R, n)), lam, rng)
    et_r = qu.overloaded_service_mean(s["duration"], n)
    return (s["mean_e2e"] - qu.overloaded_mean_e2e(n, lam, et_r),
            np.percentile(s["starts"] - s["arrivals"], 99, axis=1)
            - (n - 1) * (et_r - 1 / lam),
            s["mean_e2e"] - et_r)


def _outside(ranges, d_e, d_p, every=True):
    o = [(d_e <= le) | (d_e >= he) | (d_p <= lp) | (d_p >= hp) for le, he, lp, hp in ranges]
    return np.all(o, axis=0) if every else np.any(o, axis=0)


def test_vllm_10318_rows_pass_the_every_spread_rule_whose_false_alarm_rate_is_2e_3():
    """Each row is one 32-request run: its mean e2e and p99 TTFT, against eq. ch11-over at
    the run's own duration / n, against the central 1 − 1e-3 ranges of simulated runs
    (gamma services, cv 0.5, 1, 1.5). A row is rejected only when outside the ranges at
    EVERY spread; the rows pass. On fresh runs under each spread the rule's false-alarm
    rate is ≤ 2e-3 (union over the two statistics; one-sided, z at 1e-3), while the
    biased rule that rejects when ANY range misses fires far more often; the no-queue
    model (e2e = E[T]) is rejected with probability > 0.99 at cv 0.5 and > 0.5 at all."""
    rep = published.load("serving_reports", report="vllm-10318")
    assert all(r["source"] == "https://github.com/vllm-project/vllm/issues/10318" for r in rep)
    lam = [r for r in rep if r["quantity"] == "request_rate"][0]["value"]
    rng = np.random.default_rng(6)
    n, R, R_f = 32, 100_000, 50_000
    se = np.sqrt(2 * LEVEL / R_f)
    for row in (1, 2):
        get = {r["quantity"]: r["value"] for r in rep if r.get("table_row") == row}
        et = qu.overloaded_service_mean(get["latency"], n)
        assert et == get["latency"] / n and qu.utilisation(lam, et) > 5
        dev_e = get["mean_e2e_ms"] / 1e3 - qu.overloaded_mean_e2e(n, lam, et)
        dev_p = get["p99_ttft_ms"] / 1e3 - (n - 1) * (et - 1 / lam)
        ranges = []
        for cv in (0.5, 1.0, 1.5):
            d_e, d_p, _ = _devs_10318(rng, et, cv, lam, n, R)
            ranges.append((*np.quantile(d_e, [LEVEL / 2, 1 - LEVEL / 2]),
                           *np.quantile(d_p, [LEVEL / 2, 1 - LEVEL / 2])))
        assert not _outside(ranges, dev_e, dev_p)
        fa_any = []
        for cv in (0.5, 1.0, 1.5):
            d_e, d_p, d_noq = _devs_10318(rng, et, cv, lam, n, R_f)
            assert _outside(ranges, d_e, d_p).mean() < 2 * LEVEL + Z * se
            fa_any.append(_outside(ranges, d_e, d_p, every=False).mean())
            pw = _outside(ranges, d_noq, d_p).mean()
            assert pw > (0.99 if cv == 0.5 else 0.5)
        assert max(fa_any) > 2 * LEVEL + Z * se          # the biased rule is caught


def test_vllm_10318_rows_served_the_same_number_of_tokens_within_rounding():
    """Shared-seed evidence (ch11): throughput × duration gives each row's output and
    total token counts; the two rows agree within the 2-decimal rounding (±0.005 ×
    duration each); a 1 % change in one count would not."""
    rep = published.load("serving_reports", report="vllm-10318")
    get = {row: {r["quantity"]: r["value"] for r in rep if r.get("table_row") == row}
           for row in (1, 2)}
    tol = 0.005 * (get[1]["latency"] + get[2]["latency"])
    for q in ("output_token_throughput", "total_token_throughput"):
        tok = [get[r][q] * get[r]["latency"] for r in (1, 2)]
        assert abs(tok[0] - tok[1]) < tol < 0.01 * tok[0]


def test_vllm_10318_latency_ratio_exceeds_the_service_ratio_because_aE2_exceeds_x():
    """ch11: (aE₁ − x)/(aE₂ − x) > E₁/E₂ needs E₁ > E₂, x > 0 and aE₂ > x (a = (n + 1)/2,
    x = (n − 1)/(2λ)); it holds for the table's lower bounds, and fails when aE₂ < x."""
    rep = published.load("serving_reports", report="vllm-10318")
    lam = [r for r in rep if r["quantity"] == "request_rate"][0]["value"]
    n = 32
    e = [[r for r in rep if r.get("table_row") == row and r["quantity"] == "latency"][0]
         ["value"] / n for row in (1, 2)]
    a, x = (n + 1) / 2, (n - 1) / (2 * lam)
    assert e[0] > e[1] and a * e[1] > x > 0
    assert (a * e[0] - x) / (a * e[1] - x) > e[0] / e[1]
    e_small = [x / a * 0.5, x / a * 0.4]           # aE₂ < x: both negative, ratio < E₁/E₂
    assert (a * e_small[0] - x) / (a * e_small[1] - x) < e_small[0] / e_small[1]


def _cfg(size):
    return [r for r in published.load("model_configs")
            if r["model"] == f"Qwen2.5-Coder-{size.upper()}-Instruct"][0]["value"]


def test_stored_model_configs_equal_the_benchmark_config_files():
    for size in ("0.5b", "1.5b"):
        disk = json.loads((ROOT / "benchmarks" / "configs" / f"qwen2.5-coder-{size}.json")
                          .read_text())
        assert all(disk[k] == v for k, v in _cfg(size).items())


def test_parameter_count_from_config_gives_the_published_sizes_when_tied():
    # the published Qwen2.5 sizes (0.49B, 1.54B) count a tied output matrix once
    for size, published_params in (("0.5b", 0.49e9), ("1.5b", 1.54e9)):
        tied = dict(_cfg(size), tie_word_embeddings=True)
        assert abs(cp.params_from_config(tied) / published_params - 1) < 0.01


def _need(models, batch, ctx):
    return sum(2 * m.params + batch * cp.kv_bytes_per_request(m, ctx) for m in models)


def test_largest_batch_is_the_largest_that_fits_and_the_draft_lowers_it():
    tgt, drf = cp.shape_from_config(_cfg("1.5b")), cp.shape_from_config(_cfg("0.5b"))
    mem = published.load("gpus_memory", gpu="H100 SXM")[0]["value"]
    for ctx in (1024, 4096, 32768):
        for models in ([tgt], [tgt, drf]):
            b = cp.max_batch(mem, ctx, *models)
            assert _need(models, b, ctx) <= mem < _need(models, b + 1, ctx)
        assert cp.max_batch(mem, ctx, tgt, drf) < cp.max_batch(mem, ctx, tgt)
    # a windowed draft keeps at most its window of cache
    win = bt.ModelShape(drf.params, drf.layers, drf.q_heads, drf.kv_heads, drf.head_dim,
                        kv_window=256)
    assert cp.max_batch(mem, 32768, tgt, win) > cp.max_batch(mem, 32768, tgt, drf)


def test_speculative_ttft_is_longer_only_below_the_crossing_load():
    """ch11: the draft's own prefill makes the first token later at the lightest load."""
    mp = qu.service_moments(A, 0, C, LENS, W, PRE)
    ms = qu.service_moments(A, K, C, LENS, W, PRE * (1 + 1 / C))
    phis = np.linspace(0, 0.95, 400)
    gap = (qu.mean_ttft(phis / mp[0], *mp, PRE)
           - qu.mean_ttft(phis / mp[0], *ms, PRE * (1 + 1 / C)))
    assert gap[0] < 0 < gap[-1]
    sign_changes = np.flatnonzero(np.diff(np.sign(gap)))
    assert sign_changes.size == 1 and phis[sign_changes[0]] < 0.05
    # at light load the wait ratio is S_svc² / ξ (theorem ch11-thm-wait at φ_p → 0)
    s = mp[0] / ms[0]
    xi = (ms[1] / ms[0] ** 2) / (mp[1] / mp[0] ** 2)
    assert np.isclose(qu.wait_ratio(0.0, *mp, *ms), s**2 / xi)


def test_roofline_speedup_ignores_bandwidth_so_only_a_fixed_pass_cost_can_lower_c():
    """ch11, transformers 36337: in the memory-bound roofline scaling W changes no
    speedup; with a fixed time t0 per pass, c(W) = (t0 + P_t b/W)/(t0 + P_d b/W) falls
    with W (eq. ch11-cW)."""
    from dataclasses import replace

    from specmath import costmodel as cm

    fast = replace(cm.A100_SXM, bandwidth=4 * cm.A100_SXM.bandwidth)
    for a in (0.5, 0.8):
        assert np.isclose(cm.modelled_speedup(a, 4, 8e9, 1e9, cm.A100_SXM),
                          cm.modelled_speedup(a, 4, 8e9, 1e9, fast))
    w = np.linspace(0.5e12, 5e12, 10)
    c_w = (1e-3 + 16e9 / w) / (1e-3 + 2e9 / w)
    assert np.all(np.diff(c_w) < 0) and np.all(c_w < 8) and np.all(c_w > 1)


def test_draft_cache_reads_cost_far_more_throughput_than_the_smaller_batch():
    """ch11 B_max section (review R7c finding 5): at each server's own largest batch on
    an H100 (80 GiB × vLLM's default share up to 0.19.1, tied published counts), the smaller batch
    costs a few per cent of plain throughput, the draft's k cache reads more than half
    of speculation's token rate."""
    from specmath import costmodel as cm
    tied = {s: cp.shape_from_config(dict(_cfg(s), tie_word_embeddings=True))
            for s in ("1.5b", "0.5b")}
    tgt, drf = tied["1.5b"], tied["0.5b"]
    gib = published.load("gpus_memory", gpu="H100 SXM", quantity="memory_capacity_gib")
    share = published.load("gpus_memory", quantity="engine_memory_fraction")[0]["value"]
    mem = share * gib[0]["value"] * 2**30
    ctx, k = 4096, 4
    bp, bs = cp.max_batch(mem, ctx, tgt), cp.max_batch(mem, ctx, tgt, drf)
    def thr(b):
        return b / bt.batch_pass_time(tgt, b, 1, cm.H100_SXM, ctx)
    loss_batch = 1 - thr(bs) / thr(bp)
    nokv = bt.ModelShape(drf.params, drf.layers, drf.q_heads, drf.kv_heads, drf.head_dim,
                         kv_window=1)
    for a in (0.6, 0.8):
        s = bt.batch_speedup(a, k, bs, tgt, drf, cm.H100_SXM, ctx)
        s0 = bt.batch_speedup(a, k, bs, tgt, nokv, cm.H100_SXM, ctx)
        assert 0 < loss_batch < 0.05 and 1 - s / s0 > 0.5
        assert 1 - s / s0 > 10 * loss_batch


def test_published_tied_counts_differ_from_the_untied_files_and_the_unit_matters():
    """ch11 (finding 6, 7): untied GGUF-derived files hold more parameters and a smaller
    ratio; GiB × 0.9 and the datasheet's GB give different B_max."""
    un = [cp.params_from_config(_cfg(s)) for s in ("1.5b", "0.5b")]
    ti = [cp.params_from_config(dict(_cfg(s), tie_word_embeddings=True))
          for s in ("1.5b", "0.5b")]
    assert un[0] > ti[0] and un[1] > ti[1] and un[0] / un[1] < ti[0] / ti[1]
    assert abs(un[0] / un[1] - 2.82) < 0.01
    tgt = cp.shape_from_config(dict(_cfg("1.5b"), tie_word_embeddings=True))
    gb = published.load("gpus_memory", gpu="H100 SXM", quantity="memory_capacity")
    assert cp.max_batch(gb[0]["value"], 4096, tgt) != cp.max_batch(0.9 * 80 * 2**30, 4096,
                                                                     tgt)


def test_transformers_36337_fp32_ridge_point_is_below_the_default_verification_length():
    """ch11 (finding 4): the maintainer's reply names the dtype; the reporter's command
    sets none (script default None → float32); A100 ridge point in FP32 ≈ 19 tokens,
    below the 21 tokens of a full default verification pass; in 16 bits it is ≈ 153."""
    rep = {r["quantity"]: r["value"]
           for r in published.load("serving_reports", report="transformers-36337")}
    assert "dtype" in rep["maintainer_reply"] and "--dtype" not in rep["setup"]
    assert rep["default_num_assistant_tokens"] == 20
    g = {q: published.load("gpus", gpu="A100 SXM 80GB", quantity=q)[0]["value"]
         for q in ("memory_bandwidth", "peak_bf16_dense", "peak_fp32")}
    ns32 = g["peak_fp32"] * 4 / (2 * g["memory_bandwidth"])
    ns16 = g["peak_bf16_dense"] * 2 / (2 * g["memory_bandwidth"])
    assert ns32 < rep["default_num_assistant_tokens"] + 1 < ns16
    assert 19 < ns32 < 19.5


def test_transformers_36337_pair_sits_between_the_k20_break_evens_and_fp32_costs_under_9pc():
    """ch11 (R9d findings 3, 4): the pair's weight ratio from its config files is ≈ 6.50
    (8.03B / 1.24B, the published sizes); at the default k = 20 speculation breaks even
    at c ≈ 5.06 (α = 0.8) and ≈ 6.69 (α = 0.75), so the pair lies between; in the
    roofline fp32 multiplies the speedup by (1 + k/c)/(V32 + k/c) ≥ 1/V32 ≈ 0.911, ≈ 0.977
    at the pair's ratio."""
    import specmath as sm
    rep = {r["quantity"]: r["value"]
           for r in published.load("serving_reports", report="transformers-36337")}
    cfg = rep["model_configs"]
    p8, p1 = (cp.params_from_config(cfg[m]) for m in ("Llama-3.1-8B", "Llama-3.2-1B"))
    assert abs(p8 / 1e9 - 8.03) < 0.005 and abs(p1 / 1e9 - 1.24) < 0.005
    c = p8 / p1
    k = rep["default_num_assistant_tokens"]
    cmin = [k / (sm.expected_tokens(a, k) - 1) for a in (0.8, 0.75)]
    assert abs(cmin[0] - 5.06) < 0.005 and abs(cmin[1] - 6.69) < 0.005
    assert cmin[0] < c < cmin[1]
    assert sm.speedup(0.8, k, c) > 1 > sm.speedup(0.75, k, c)
    # eq. ch11-cW: a fixed cost t0 = 0.355 draft weight reads brings c to break-even
    t0 = (c - cmin[0]) / (cmin[0] - 1)
    assert abs(t0 - 0.355) < 0.001 and np.isclose((t0 * p1 + p8) / (t0 * p1 + p1), cmin[0])
    g = {q: published.load("gpus", gpu="A100 SXM 80GB", quantity=q)[0]["value"]
         for q in ("memory_bandwidth", "peak_fp32")}
    v32 = (k + 1) / (g["peak_fp32"] * 4 / (2 * g["memory_bandwidth"]))
    r = (sm.speedup_with_verification_cost(0.8, k, c, v32) / sm.speedup(0.8, k, c))
    assert abs(1 / v32 - 0.911) < 0.001 and abs(r - 0.977) < 0.001
    for cc in (1.0, c, 1e3, 1e6):                  # the factor tends to 1/V32 from above
        rr = sm.speedup_with_verification_cost(0.8, k, cc, v32) / sm.speedup(0.8, k, cc)
        assert 1 / v32 < rr < 1


def test_a_device_reporting_one_percent_less_memory_moves_b_max_by_at_most_1_5_pc():
    """ch11 (R9d finding 6): 0.9 × 80 GiB gives B_max 631 / 436 for the Qwen pair at a
    4096-token context; 1 % less memory gives 625 / 431, a change of under 1.5 %."""
    tgt, drf = (cp.shape_from_config(dict(_cfg(s), tie_word_embeddings=True))
                for s in ("1.5b", "0.5b"))
    mem = 0.9 * 80 * 2**30
    for models in ((tgt,), (tgt, drf)):
        b, b_less = cp.max_batch(mem, 4096, *models), cp.max_batch(0.99 * mem, 4096, *models)
        assert 0 < b - b_less <= 0.015 * b
    assert cp.max_batch(mem, 4096, tgt) == 631 and cp.max_batch(mem, 4096, tgt, drf) == 436


def test_xi_below_one_comes_mainly_from_the_constant_prefill():
    """ch11 (finding 11): with the chapter's workload ξ < 1; without the prefill ξ is
    nearer one; for a single response length ξ > 1 (renewal noise)."""
    from specmath.exercises.ch11 import QUEUE
    L, Wt, pre = np.array(QUEUE["lengths"]), np.array(QUEUE["weights"]), QUEUE["prefill"]
    def xi(mp, ms):
        return (ms[1] / ms[0] ** 2) / (mp[1] / mp[0] ** 2)
    r = xi(qu.service_moments(A, 0, C, L, Wt, pre),
           qu.service_moments(A, K, C, L, Wt, pre * (1 + 1 / C)))
    r0 = xi(qu.service_moments(A, 0, C, L, Wt, 0.0), qu.service_moments(A, K, C, L, Wt, 0.0))
    assert r < r0 < 1
    for n in (50, 200):
        assert xi(qu.service_moments(A, 0, C, [n]), qu.service_moments(A, K, C, [n])) > 1
