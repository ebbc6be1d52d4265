"""Chapters 0–2: the roofline cost model, the mismatched-q pitfall, the chapters' figures
and explorers, and the exercise answers they register."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import specmath as sm  # noqa: E402
from specmath import costmodel as cm  # noqa: E402
from specmath import stats, toy  # noqa: E402
from specmath.exercises import _REGISTRY, check, exercise_keys  # noqa: E402
from specmath.pitfalls import (  # noqa: E402
    greedy,
    gumbel_verifier_outputs,
    mismatched_output_distribution,
    reused_uniform_output_distribution,
)

P70, P7 = 70e9, 7e9


# ---------------------------------------------------------------- the roofline cost model

def test_forward_time_is_the_larger_of_memory_and_compute_time():
    for hw in cm.ILLUSTRATIVE_GPUS:
        for n in (1, 10, 100, 1000, 10_000):
            for b in (2.0, 1.0, 0.5):
                mem = P70 * b / hw.bandwidth
                comp = 2 * P70 * n / hw.peak_flops
                assert math.isclose(cm.forward_time(n, P70, hw, b), max(mem, comp))


def test_kv_cache_bytes_add_to_the_memory_term():
    kv = cm.kv_cache_bytes(4096, 80, 8, 128)
    assert kv == 2 * 80 * 8 * 128 * 4096 * 2
    assert math.isclose(cm.memory_time(P70, cm.H100_SXM, 2.0, kv),
                        (P70 * 2 + kv) / cm.H100_SXM.bandwidth)


def test_ridge_point_is_where_compute_time_equals_memory_time():
    for hw in cm.ILLUSTRATIVE_GPUS:
        for b in (2.0, 1.0, 0.5):
            n_star = cm.ridge_point(hw, b)
            assert math.isclose(n_star, hw.peak_flops * b / (2 * hw.bandwidth))
            assert math.isclose(2 * P70 * n_star / hw.peak_flops, P70 * b / hw.bandwidth)
            assert math.isclose(cm.arithmetic_intensity(1, b) * n_star,
                                hw.peak_flops / hw.bandwidth)


def test_one_step_cost_holds_exactly_up_to_the_ridge_point_and_fails_after():
    for hw in cm.ILLUSTRATIVE_GPUS:
        for b in (2.0, 1.0, 0.5):
            k_max = math.floor(cm.ridge_point(hw, b)) - 1
            assert cm.verify_cost(np.arange(k_max + 1), P70, hw, b).max() == 1.0
            assert cm.verify_cost(k_max + 1, P70, hw, b) > 1.0


@given(st.floats(1e6, 1e12), st.sampled_from([0.5, 1.0, 2.0, 4.0]),
       st.integers(1, 5000), st.integers(1, 5000))
def test_forward_time_never_decreases_with_more_tokens(n_params, b, n1, n2):
    lo, hi = sorted((n1, n2))
    assert cm.forward_time(lo, n_params, cm.H100_SXM, b) <= cm.forward_time(hi, n_params,
                                                                              cm.H100_SXM, b)
    assert cm.verify_cost(hi, n_params, cm.H100_SXM, b) >= 1.0


def test_attention_at_32k_context_moves_the_ridge_left_from_295_to_197():
    """Issue 9 item 2: 80 layers, 64 query heads, 8 KV heads, d = 128, 32k context, bf16."""
    ctx, L, H, H_kv, d = 32768, 80, 64, 8, 128
    A = cm.attention_flops(ctx, L, H, d)
    assert A == 4 * L * H * d * ctx
    assert round(A / 1e9) == 86 and round(2 * P70 / 1e9) == 140
    kv = cm.kv_cache_bytes(ctx, L, H_kv, d)
    n0 = cm.ridge_point(cm.H100_SXM, 2.0)
    n_kv_only = cm.ridge_point(cm.H100_SXM, 2.0, P70, kv)
    n_both = cm.ridge_point(cm.H100_SXM, 2.0, P70, kv, A)
    assert round(n0) == 295 and round(n_both) == 197
    assert n_both < n0 < n_kv_only            # the cache alone would move it right
    # at n*, the memory and compute terms of the roofline are equal ...
    assert math.isclose(cm.memory_time(P70, cm.H100_SXM, 2.0, kv),
                        (2 * P70 + A) * n_both / cm.H100_SXM.peak_flops)
    # ... and the one-step cost holds exactly up to floor(n*) - 1 drafts
    k_max = math.floor(n_both) - 1
    assert cm.verify_cost(k_max, P70, cm.H100_SXM, 2.0, kv, A) == 1.0
    assert cm.verify_cost(k_max + 1, P70, cm.H100_SXM, 2.0, kv, A) > 1.0
    # without context the new arguments change nothing
    assert cm.ridge_point(cm.H100_SXM, 2.0, P70) == pytest.approx(n0)
    assert cm.forward_flops(P70, 3) == 2 * P70 * 3


def test_fp32_ridge_point_of_the_illustrative_cpu_is_dozens_of_tokens():
    """Issue 9 item 10: a CPU at ~16 FLOP/byte with fp32 weights: n* = 32, not a handful."""
    cpu = cm.EPYC_9654
    intensity = cpu.peak_flops / cpu.bandwidth
    assert 10 <= intensity <= 25
    assert cm.ridge_point(cpu, 4.0) == pytest.approx(2 * intensity)
    assert 20 <= cm.ridge_point(cpu, 4.0) <= 50


def test_illustrative_cpu_peak_is_computed_from_its_stated_assumptions_not_quoted():
    """The EPYC row's peak is cores × clock × FLOP per cycle, the FLOP per cycle follow
    from Zen 4's units (2 FMA pipes × 256/32 lanes × 2 FLOP), and its source says so."""
    a = cm.EPYC_9654_ASSUMPTIONS
    assert a["fp32_flop_per_cycle"] == 2 * (256 // 32) * 2
    assert cm.EPYC_9654.peak_flops == pytest.approx(96 * 2.4e9 * 32, rel=1e-12)
    assert "not from the datasheet" in cm.EPYC_9654.source
    assert "illustrative" in cm.EPYC_9654.name


def test_ridge_point_with_context_moves_left_only_with_grouped_query_attention():
    """n* is a weighted average of F b/(2W) and (F/W)(b/2)(H_kv/H): left iff H_kv < H."""
    ctx, L, H, d = 32768, 80, 64, 128
    A = cm.attention_flops(ctx, L, H, d)
    n0 = cm.ridge_point(cm.H100_SXM, 2.0)
    for H_kv in (1, 8, 32, 63):
        kv = cm.kv_cache_bytes(ctx, L, H_kv, d)
        assert cm.ridge_point(cm.H100_SXM, 2.0, P70, kv, A) < n0
    kv_mha = cm.kv_cache_bytes(ctx, L, H, d)
    assert cm.ridge_point(cm.H100_SXM, 2.0, P70, kv_mha, A) == pytest.approx(n0, rel=1e-12)


def test_at_long_context_verifying_a_few_tokens_costs_one_step_for_every_batch_that_fits():
    """Each sequence reads its own cache: a pass over B sequences × m tokens costs
    max((P b + B·kv)/W, B m (2P + A)/F), memory-bound for all B while m ≤ F kv/(W(2P + A)).
    On eight H100s (640 GB) the weights and 46 caches of 32k tokens fit, 47 do not; every
    batch that fits verifies up to ⌊m_max⌋ tokens per sequence in one step, and twice
    m_max tokens cost more than one step at the largest batch."""
    ctx, L, H, H_kv, d = 32768, 80, 64, 8, 128
    hw = cm.tensor_parallel(cm.H100_SXM, 8)
    A = cm.attention_flops(ctx, L, H, d)
    kv = cm.kv_cache_bytes(ctx, L, H_kv, d)
    m_max = hw.peak_flops * kv / (hw.bandwidth * (2 * P70 + A))
    assert 10 < m_max < 20

    def t(B, m):
        return max((P70 * 2.0 + B * kv) / hw.bandwidth, B * m * (2 * P70 + A) / hw.peak_flops)

    B_max = math.floor((hw.memory - 2.0 * P70) / kv)
    assert B_max == 46
    assert cm.fits_in_memory(P70, hw, 2.0, B_max * kv)
    assert not cm.fits_in_memory(P70, hw, 2.0, (B_max + 1) * kv)
    for B in range(1, B_max + 1):
        for m in range(2, math.floor(m_max) + 1):
            assert t(B, m) == t(B, 1)
    assert t(B_max, math.ceil(2 * m_max)) > t(B_max, 1)


def test_speed_ratio_of_memory_bound_models_is_the_ratio_of_their_sizes():
    assert math.isclose(cm.speed_ratio(P70, P7), 10.0)
    assert math.isclose(cm.speed_ratio(P70, P7, cm.A100_SXM, 0.5), 10.0)
    # a 4-bit draft for a bf16 target is 4× faster again
    assert math.isclose(cm.speed_ratio(P70, P7, draft_bytes_per_param=0.5), 40.0)


def test_iteration_time_and_modelled_speedup_reduce_to_the_course_formula():
    c = cm.speed_ratio(P70, P7)
    t1 = cm.forward_time(1, P70)
    for k in range(0, 12):
        assert math.isclose(cm.iteration_time(k, P70, P7),
                            k * cm.forward_time(1, P7) + cm.forward_time(k + 1, P70))
        assert math.isclose(cm.iteration_time(k, P70, P7), t1 * (1 + k / c))
        for a in (0.0, 0.3, 0.8, 1.0):
            assert math.isclose(cm.modelled_speedup(a, k, P70, P7), sm.speedup(a, k, c))


def test_modelled_speedup_is_below_the_formula_once_verification_is_not_free():
    # k + 1 beyond the ridge: the target pass costs more than one step
    k = math.floor(cm.ridge_point()) + 10
    assert cm.modelled_speedup(0.99, k, P70, P7) < sm.speedup(0.99, k, cm.speed_ratio(P70, P7))


def test_leviathan_and_course_conventions_for_c_are_inverses():
    assert cm.c_from_leviathan(0.05) == pytest.approx(20.0)
    assert cm.c_from_leviathan(0.0) == math.inf
    assert cm.leviathan_c_from_c(math.inf) == 0.0
    for cl in (0.01, 0.1, 0.5, 2.0):
        assert cm.leviathan_c_from_c(cm.c_from_leviathan(cl)) == pytest.approx(cl)
        a = np.linspace(0, 1, 11)
        for k in range(8):
            assert np.allclose(sm.leviathan_walltime_improvement(a, k, cl),
                               sm.speedup(a, k, cm.c_from_leviathan(cl)))
    assert cm.c_from_times(14.1, 1.8) == pytest.approx(14.1 / 1.8)


@pytest.mark.parametrize("call, word", [
    (lambda: cm.forward_time(0, P70), "n_tokens"),
    (lambda: cm.forward_time(1.5, P70), "n_tokens"),
    (lambda: cm.forward_time(1, -1.0), "n_params"),
    (lambda: cm.forward_time(1, P70, "H100"), "hardware"),
    (lambda: cm.forward_time(1, P70, cm.H100_SXM, 0.0), "bytes_per_param"),
    (lambda: cm.forward_time(1, P70, cm.H100_SXM, 2.0, -5.0), "kv_bytes"),
    (lambda: cm.Hardware("bad", -1.0, 1e12), "bandwidth"),
    (lambda: cm.Hardware("bad", 1e12, float("nan")), "peak_flops"),
    (lambda: cm.Hardware("bad", 1e12, 1e12, "", -1.0), "memory"),
    (lambda: cm.tensor_parallel(cm.H100_SXM, 0), "n_devices"),
    (lambda: cm.tensor_parallel("H100", 2), "hardware"),
    (lambda: cm.fits_in_memory(P70, cm.EPYC_9654), "memory"),
    (lambda: cm.verify_cost(-1, P70), "k"),
    (lambda: cm.modelled_speedup(1.5, 3, P70, P7), "alpha"),
    (lambda: cm.c_from_leviathan(-0.1), "c_leviathan"),
    (lambda: cm.leviathan_c_from_c(0.0), "c"),
    (lambda: cm.c_from_times(0.0, 1.0), "target_time"),
    (lambda: cm.kv_cache_bytes(10, 0, 8, 128), "layers"),
    (lambda: cm.attention_flops(-1, 80, 64, 128), "context"),
    (lambda: cm.attention_flops(10, 80, 0, 128), "q_heads"),
    (lambda: cm.forward_flops(P70, 1, -1.0), "attn_flops"),
    (lambda: cm.ridge_point(cm.H100_SXM, 2.0, None, 1e9), "n_params is needed"),
    (lambda: cm.ridge_point(cm.H100_SXM, 2.0, P70, 0.0, float("nan")), "attn_flops"),
])
def test_cost_model_rejects_bad_input_with_a_value_error_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# ---------------------------------------------------------------- the mismatched-q pitfall

def test_matched_draft_distribution_gives_exactly_the_target(rng):
    P = rng.dirichlet(np.full(7, 0.4), size=500)
    Q = rng.dirichlet(np.full(7, 0.4), size=500)
    assert np.allclose(mismatched_output_distribution(P, Q, Q), P, atol=1e-12)


def test_greedy_draft_reported_as_its_softmax_is_biased():
    p = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
    q = np.array([0.15, 0.40, 0.10, 0.30, 0.05])
    out = mismatched_output_distribution(p, q, greedy(q))
    assert np.isclose(out.sum(), 1.0)
    assert sm.tv_distance(out, p) > 0.1
    # reporting the distribution actually sampled from (a point mass) is exact again
    assert np.allclose(mismatched_output_distribution(p, greedy(q), greedy(q)), p)


def test_mismatched_output_distribution_matches_a_simulation_of_the_buggy_pipeline(rng):
    # The draft samples at temperature 0.5 but passes its T = 1 softmax to speculative_step.
    # G-test at level 1e-3 with a fixed seed: false-alarm rate 0.1% if the formula is right;
    # the formula differs from p by TV ≈ 0.1, which 20 000 draws detect with power ≈ 1, so
    # the second assertion (against p) guards against a vacuous comparison.
    p = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
    q = np.array([0.15, 0.40, 0.10, 0.30, 0.05])
    q_hot = sm.softmax(np.log(q), 0.5)
    M = 20_000
    drafts = rng.choice(5, size=M, p=q_hot)
    P2, Q1 = np.stack([p, p]), q[None]
    out = np.array([sm.speculative_step(P2, Q1, drafts[i:i + 1], rng)[0] for i in range(M)])
    counts = np.bincount(out, minlength=5)
    assert stats.g_test(counts, mismatched_output_distribution(p, q, q_hot)).pvalue > 1e-3
    assert stats.g_test(counts, p).pvalue < 1e-3


def test_mismatched_output_with_a_zero_reported_probability_follows_the_step_rule(rng):
    """q_used(x) = 0 < q_sampled(x): accepted iff p(x) > 0, as speculative_step does."""
    p, qu, qs = np.array([0.5, 0.5]), np.array([1.0, 0.0]), np.array([0.5, 0.5])
    np.testing.assert_allclose(mismatched_output_distribution(p, qu, qs), [0.25, 0.75])
    # the same pipeline simulated with speculative_step (6 000 draws; 5-sigma band)
    n = 6_000
    drafts = rng.choice(2, size=n, p=qs)
    out = np.array([sm.speculative_step(np.vstack([p, p]), qu[None], [x], rng)[0]
                    for x in drafts])
    assert abs(out.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / n)
    with pytest.raises(ValueError, match="same shape"):
        mismatched_output_distribution([0.5, 0.5], [0.5, 0.5], [1.0, 0.0, 0.0])


def test_greedy_drafting_neither_dominates_sampled_drafting():
    """Issue 9 item 1: p = (.9, .1), q = (.6, .4): 0.90 greedy vs 0.70 sampled; and the
    chapter's animal example goes the other way."""
    p2, q2 = np.array([0.9, 0.1]), np.array([0.6, 0.4])
    assert sm.acceptance_probability(p2, greedy(q2)) == pytest.approx(0.9)
    assert sm.acceptance_probability(p2, q2) == pytest.approx(0.7)
    p = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
    q = np.array([0.15, 0.40, 0.10, 0.30, 0.05])
    assert sm.acceptance_probability(p, greedy(q)) == pytest.approx(p[1])
    assert sm.acceptance_probability(p, greedy(q)) < sm.acceptance_probability(p, q)


@given(st.integers(0, 10_000), st.integers(1, 12))
def test_rejection_sampling_is_exact_and_accepts_no_more_than_speculative_sampling(seed, V):
    """Leviathan et al. appendix A.2: one-shot rejection sampling with bound M accepts with
    1/M ≤ α, and its output (fallback to p) is exactly p. Equality needs q = p/M wherever
    p > 0; with full-support Dirichlet draws that means p = q."""
    r = np.random.default_rng(seed)
    p, q = r.dirichlet(np.full(V, 0.7)), r.dirichlet(np.full(V, 0.7))
    M = np.max(p / q)

    def one_shot(bound):                       # accept with min(1, p/(bound q)), else ~ p
        kept = q * np.minimum(1, p / (bound * q))
        return kept + (1 - kept.sum()) * p

    np.testing.assert_allclose(one_shot(M), p, atol=1e-12)
    np.testing.assert_allclose(one_shot(3 * M), p, atol=1e-12)    # any larger bound too
    if not np.allclose(p, q):                  # a bound below max p/q clips: biased
        assert sm.tv_distance(one_shot(M / 2), p) > 1e-9
    alpha = sm.acceptance_probability(p, q)
    assert 1 / M <= alpha + 1e-12
    if V > 1 and not np.allclose(p, q):
        assert 1 / M < alpha
    assert 1 / np.max(p / p) == pytest.approx(sm.acceptance_probability(p, p), abs=1e-12)


def test_top_token_agreement_bias_rises_toward_the_target_iff_the_top_is_under_proposed():
    """Bias of rule 2 along q_w = (1 − w) q + w p is q_w(x*)(1 − p(x*)): it rises with w
    exactly when q(x*) < p(x*) (the chapter's example), and falls otherwise."""
    ws = np.linspace(0, 1, 11)

    def bias(p, q):
        return np.array([sm.tv_distance(sm.naive_output_distribution(
            p, sm.mix(p, q, w), "accept-if-top"), p) for w in ws])

    b = bias(P_EX, Q_EX)
    xs = np.argmax(P_EX)
    np.testing.assert_allclose(b, sm.mix(P_EX, Q_EX, ws[:, None])[:, xs] * (1 - P_EX[xs]))
    assert (np.diff(b) > 0).all()
    q_over = np.array([0.6, 0.1, 0.1, 0.1, 0.1])          # over-proposes the top token
    assert (np.diff(bias(P_EX, q_over)) < 0).all()


def test_rejection_bound_and_resample_from_p_are_exact_for_a_scaled_down_target():
    """Equality 1/M = α, and an unbiased resample-from-p rule, hold beyond p = q: exactly
    when q = α p on the target's support, the rest of q's mass where p = 0."""
    p, q = np.array([0.6, 0.4, 0.0]), np.array([0.3, 0.2, 0.5])
    alpha = sm.acceptance_probability(p, q)
    assert alpha == pytest.approx(0.5)
    with np.errstate(divide="ignore"):
        M = np.max(np.where(q > 0, p / q, np.inf))
    assert 1 / M == pytest.approx(alpha)
    np.testing.assert_allclose(sm.residual_distribution(p, q), p)
    np.testing.assert_allclose(sm.naive_output_distribution(p, q, "resample-from-p"), p)
    # move a little of q's mass onto the target's support in the wrong ratio: both break
    q2 = np.array([0.35, 0.2, 0.45])
    M2 = np.max(p / q2)
    assert 1 / M2 < sm.acceptance_probability(p, q2) - 1e-3
    out2 = sm.naive_output_distribution(p, q2, "resample-from-p")
    assert sm.tv_distance(out2, p) > 1e-3


# ---------------------------------------------------------------- figures and explorers

P_EX = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
Q_EX = np.array([0.15, 0.40, 0.10, 0.30, 0.05])


def _figures():
    from specmath.plots import acceptance as pa
    from specmath.plots import cost as pc
    return [
        lambda: pc.roofline_figure(cm.H100_SXM, 2.0, {"n = 1": 1, "n = 5": 5}),
        lambda: pc.forward_time_figure(P70, cm.H200_SXM, 0.5, k=4),
        lambda: pc.verify_cost_figure(P70),
        lambda: pa.pq_figure(P_EX, Q_EX, list("abcde")),
        lambda: pa.rule_outputs_figure(P_EX, Q_EX, ("exact", *sm.NAIVE_RULES)),
        lambda: pa.decomposition_figure(P_EX, Q_EX),
        lambda: pa.bias_figure(P_EX, Q_EX),
    ]


@pytest.mark.parametrize("i", range(7))
def test_plotting_functions_return_a_matplotlib_figure(i):
    fig = _figures()[i]()
    assert isinstance(fig, matplotlib.figure.Figure)
    assert fig.axes and fig.axes[0].has_data()
    plt.close(fig)


def test_bias_figure_shows_zero_bias_for_the_exact_rule():
    from specmath.plots import acceptance as pa
    fig = pa.bias_figure(P_EX, Q_EX)
    exact = fig.axes[0].lines[0].get_ydata()
    assert np.allclose(exact, 0, atol=1e-12)
    plt.close(fig)


def test_rule_output_rejects_an_unknown_rule():
    from specmath.plots.acceptance import rule_output
    with pytest.raises(ValueError, match="rule"):
        rule_output(P_EX, Q_EX, "accept-if-lucky")


def test_explorers_show_a_figure_and_return_their_controls():
    import ipywidgets

    from specmath.widgets.acceptance import acceptance_explorer, explorer_draft
    from specmath.widgets.cost import cost_explorer

    box = acceptance_explorer(P_EX, Q_EX, list("abcde"))
    assert isinstance(box, ipywidgets.VBox)
    assert [c.description for c in box.children] == ["closeness w", "draft T"]
    assert acceptance_explorer(P_EX, Q_EX, show_controls=False) is None
    assert np.allclose(explorer_draft(P_EX, Q_EX, 1.0, 2.0), P_EX)
    assert np.allclose(explorer_draft(P_EX, Q_EX, 0.0, 1.0), Q_EX)
    box = cost_explorer(n_params_billion=7.0, bytes_per_param=0.5, k=40)
    assert isinstance(box, ipywidgets.VBox) and len(box.children) == 4
    with pytest.raises(ValueError, match="gpu"):
        cost_explorer(gpu="TPU")
    plt.close("all")


# ---------------------------------------------------------------- exercise answers

CH02_KEYS = [k for k in exercise_keys() if k.split("-")[0] in ("ch0", "ch1", "ch2")]


def test_every_chapter_0_to_2_registers_at_least_four_exercises():
    for ch in ("ch0", "ch1", "ch2"):
        assert sum(k.startswith(ch + "-") for k in CH02_KEYS) >= 4


@pytest.mark.parametrize("key", CH02_KEYS)
def test_exercise_answer_is_accepted_by_its_checker(key):
    assert check(key, _REGISTRY[key].compute(), quiet=True)


def test_exercise_answers_agree_with_independent_derivations():
    from specmath.exercises import ch0, ch1, ch2

    v = lambda key: np.asarray(_REGISTRY[key].compute(), dtype=float)  # noqa: E731
    assert v("ch0-ex1") == pytest.approx(1 / ch0.DATA["c_leviathan"])
    tv, shared = v("ch0-ex5")
    assert tv + shared == pytest.approx(1.0)                  # α = 1 − TV
    ours, lev = v("ch0-ex3")
    assert ours * lev == pytest.approx(1.0)
    assert v("ch1-ex1") < cm.ridge_point(cm.H100_SXM, 2.0)   # more bandwidth, same peak
    k = int(v("ch1-ex3"))
    assert cm.verify_cost(k, ch1.DATA["target_params"], cm.H100_SXM, 0.5) == 1.0
    assert cm.verify_cost(k + 1, ch1.DATA["target_params"], cm.H100_SXM, 0.5) > 1.0
    # P(emitted = drafted) = α, because a rejected token has zero residual mass
    assert v("ch2-ex3") == pytest.approx(sm.acceptance_probability(ch2.DATA["p"],
                                                                   ch2.DATA["q"]))
    r = v("ch2-ex2")
    assert r.sum() == pytest.approx(1.0) and (r[ch2.DATA["q"] >= ch2.DATA["p"]] == 0).all()


def test_bonus_token_probability_of_exercise_ch2_ex5_matches_simulation(rng):
    # 6 000 first iterations; the count is binomial, so a 4.5-sigma band has a false-alarm
    # rate below 1e-5, and a wrong answer off by 0.05 (the size of a product-of-averages
    # mistake on other seeds) is caught with power ≈ 1 (sigma ≈ 0.006).
    from specmath.exercises import ch2
    t, d = toy.toy_pair(ch2.DATA["toy_vocab"], ch2.DATA["toy_closeness"], ch2.DATA["toy_seed"])
    n = 6000
    hits = sum(toy.speculative_decode(t, d, 1, 2, rng).tokens_per_iteration[0] == 3
               for _ in range(n))
    truth = float(_REGISTRY["ch2-ex5"].compute())
    sigma = math.sqrt(truth * (1 - truth) / n)
    assert abs(hits / n - truth) < 4.5 * sigma


def test_ch2_ex5_simulation_separates_the_exact_answer_from_both_products_of_averages():
    """Review R14a finding 3: on the exercise's pair the products of averages are within
    a few 0.01 of the exact answer, so the check must be able to tell them apart. 10⁶
    vectorised first iterations (draft x1 ~ q0, accept, draft x2 ~ q(·|x1), accept):
    the tolerance is half the distance to the nearer product, about 8 standard errors,
    so the false-alarm rate and the chance to pass were a product the truth are each
    below 1e-15 (normal approximation)."""
    from specmath.exercises import ch2
    t, d = toy.toy_pair(ch2.DATA["toy_vocab"], ch2.DATA["toy_closeness"],
                        ch2.DATA["toy_seed"])
    truth = float(_REGISTRY["ch2-ex5"].compute())
    second = sm.acceptance_probability(t.transition, d.transition)
    first = np.minimum(t.initial, d.initial)
    assert truth == pytest.approx(float(first @ second))
    products = [first.sum() * float(t.initial @ second),
                first.sum() * float(d.initial @ second)]
    tol = min(abs(w - truth) for w in products) / 2
    n = 1_000_000
    sd = max(math.sqrt(v * (1 - v) / n) for v in [truth, *products])
    assert math.erfc(tol / sd / math.sqrt(2)) < 1e-15
    rng = np.random.default_rng(55)
    v = t.vocab_size
    x1 = rng.choice(v, n, p=d.initial)
    cum = np.cumsum(d.transition, axis=1)[x1]
    x2 = np.minimum((rng.random(n)[:, None] >= cum).sum(axis=1), v - 1)
    ok1 = rng.random(n) < np.minimum(1, t.initial / d.initial)[x1]
    ok2 = rng.random(n) < np.minimum(1, t.transition / d.transition)[x1, x2]
    hits = np.mean(ok1 & ok2)
    assert abs(hits - truth) < tol
    assert all(abs(hits - w) > tol for w in products)


def test_ch2_clopper_pearson_check_false_alarm_rate_is_the_exact_binomial_sum():
    """Review R14a finding 4: `fa_lo <= level <= fa_hi` (95 % Clopper-Pearson interval,
    R = 400 experiments, level 0.01) fails, were the true rate exactly the level, with
    probability Σ Binom(j; R, level) over the counts j whose interval misses the level:
    about 0.039, including j = 0, whose upper limit is below 0.01."""
    from scipy.stats import beta, binom
    r, level, tail = 400, 0.01, 0.025
    j = np.arange(r + 1)
    with np.errstate(invalid="ignore"):
        lo = np.where(j > 0, beta.ppf(tail, j, r - j + 1), 0.0)
        hi = np.where(j < r, beta.ppf(1 - tail, j + 1, r - j), 1.0)
    miss = (lo > level) | (hi < level)
    rate = binom.pmf(j[miss], r, level).sum()
    assert miss[0] and hi[0] < level
    assert 0.035 < rate < 0.045
    # a direct simulation of the check agrees (10⁵ alarm counts; sd of the rate 6e-4)
    counts = np.random.default_rng(4).binomial(r, level, size=100_000)
    assert abs(np.mean(miss[counts]) - rate) < 5 * math.sqrt(rate * (1 - rate) / 1e5)


def test_ch2_ex4_more_freed_mass_is_necessary_not_sufficient_for_a_second_over_produced_token():
    """Review R14a P3: a token y ≠ x_q* gets (1 − a) r(y) = (1 − a)/(1 − α)·(p − q)(y),
    which exceeds p(y) only if 1 − a > 1 − α; on p = (.5, .5), q = (.6, .4) that holds
    (1/6 > 0.1) yet only the top token is over-produced, the output being (5/6, 1/6)."""
    p, q = np.array([0.5, 0.5]), np.array([0.6, 0.4])
    a = p[0] / q[0]
    assert 1 - a > 1 - sm.acceptance_probability(p, q)
    out = mismatched_output_distribution(p, q, greedy(q))
    np.testing.assert_allclose(out, [5 / 6, 1 / 6])
    assert list(np.flatnonzero(out > p + 1e-12)) == [0]
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(300):                              # necessity, on random pairs
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        xq = int(np.argmax(q))
        a = min(1.0, p[xq] / q[xq])
        out = mismatched_output_distribution(p, q, greedy(q))
        others = [y for y in range(5) if y != xq and out[y] > p[y] + 1e-12]
        if others:
            seen += 1
            assert 1 - a > 1 - sm.acceptance_probability(p, q)
    assert seen > 50                                  # not vacuous


def test_ch2_ex1_widened_rule_bias_is_the_largest_set_gap_and_the_positive_part_formula():
    # issue 16 (student walk-through): exercise 2.1 now asks for Rule 2 widened to the
    # target's top-2 set S; its bias must equal the brute-force max over all 2^V sets
    from specmath.exercises import ch2
    rng = np.random.default_rng(7)
    pairs = [(ch2.DATA["p"], ch2.DATA["q"])] + [
        (rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))) for _ in range(50)]
    for p, q in pairs:
        S = np.isin(np.arange(p.size), np.argsort(p)[-2:])
        out = q * S + (1 - q[S].sum()) * p
        formula = np.maximum(0, q[S] - q[S].sum() * p[S]).sum()
        gap = max(sum((out - p)[i] for i in range(p.size) if m >> i & 1)
                  for m in range(1, 2 ** p.size))
        assert formula == pytest.approx(gap, abs=1e-12)
        assert formula == pytest.approx(sm.tv_distance(out, p), abs=1e-12)
    assert float(_REGISTRY["ch2-ex1"].compute()) == pytest.approx(0.17)


def test_ch2_ex2_residual_is_unchanged_by_mixing_the_draft_toward_the_target():
    rng = np.random.default_rng(8)
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
        r = sm.residual_distribution(p, q)
        for w in (0.1, 0.5, 0.99):
            qw = (1 - w) * q + w * p
            assert np.allclose(sm.residual_distribution(p, qw), r)
            assert 1 - sm.acceptance_probability(p, qw) == pytest.approx(
                (1 - w) * (1 - sm.acceptance_probability(p, q)))


def test_ch2_agree_bias_largest_gap_set_is_the_target_top_token():
    # issue 16 (student walk-through): (2.3) via the largest-difference reading of TV; the
    # accept-if-top output exceeds p only at x*, so {x*} is the maximising set
    rng = np.random.default_rng(9)
    for _ in range(100):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        out = sm.naive_output_distribution(p, q, "accept-if-top")
        diff = out - p
        xs = int(np.argmax(p))
        best = max(range(1, 2 ** 5), key=lambda m: sum(diff[i] for i in range(5) if m >> i & 1))
        assert best == 1 << xs
        assert diff[xs] == pytest.approx(q[xs] * (1 - p[xs]))


def test_float16_subnormal_rounding_errors_have_mixed_signs_and_a_downward_sum():
    # R1 finding 2: in chapter 2's confident float16 row (same seed and construction) the
    # entries below float16's smallest normal do NOT all round the same way
    V = 151_936
    gen = np.random.default_rng(16)
    z = gen.standard_normal((21, V)).astype(np.float32)
    z[20, 0] += np.float32(20)
    e = np.exp(z[20] - z[20].max())
    p32 = e / e.sum(dtype=np.float32)
    err = p32.astype(np.float16).astype(float) - p32.astype(float)
    sub = p32 < 2.0 ** -14
    up, down = (err[sub] > 0).sum(), (err[sub] < 0).sum()
    assert 0 < up < down and err[sub].sum() < 0
    # the tolerance counts absolute errors, so it covers the row whatever the signs
    assert np.abs(err[sub]).sum() <= sub.sum() * 2.0 ** -25


def test_g_test_degrees_of_freedom_count_only_tokens_the_law_can_produce():
    # R1 finding 8: dof = (number of x with p(x) > 0) - 1, not V - 1
    p = np.array([0.5, 0.3, 0.2, 0.0, 0.0])
    counts = np.array([50, 30, 20, 0, 0])
    assert stats.g_test(counts, p).dof == 2



def test_ch2_ex4_greedy_top_token_is_over_proposed_so_the_residual_enters_the_output():
    # issue 16, S20: with the old data the greedy token was under-proposed, always
    # accepted, and the residual never entered. Exercise 2.4's draft softmax q_greedy must
    # over-propose its top token; the answer must then be the TV of a·δ + (1 − a)·r, the
    # output must over-produce a token besides the top one, and running the verifier on
    # greedy drafts must reproduce that output (Hoeffding over the 2^5 − 2 events and a
    # union bound: Pr(TV ≥ 0.02) ≤ 30·exp(−2·20000·0.02²) < 4e-6).
    from specmath.exercises import ch2
    p, q = ch2.DATA["p"], ch2.DATA["q_greedy"]
    xq = int(np.argmax(q))
    a = p[xq] / q[xq]
    assert a < 1                                   # over-proposed: rejected at times
    out = a * (np.arange(p.size) == xq) + (1 - a) * sm.residual_distribution(p, q)
    assert np.allclose(out, mismatched_output_distribution(p, q, greedy(q)))
    truth = float(_REGISTRY["ch2-ex4"].compute())
    assert truth == pytest.approx(0.5 * np.abs(out - p).sum())
    over = set(np.flatnonzero(out > p + 1e-12))
    assert xq in over and len(over) > 1
    # the old pair: under-proposed top token, a point mass, bias 1 − p(x_q*)
    qe = ch2.DATA["q"]
    xe = int(np.argmax(qe))
    assert qe[xe] < p[xe]
    assert sm.tv_distance(mismatched_output_distribution(p, qe, greedy(qe)), p) == (
        pytest.approx(1 - p[xe]))
    rng = np.random.default_rng(24)
    n = 20_000
    rows = np.stack([p, p])
    emitted = [sm.speculative_step(rows, q[None], [xq], rng)[0] for _ in range(n)]
    freq = np.bincount(emitted, minlength=p.size) / n
    assert sm.tv_distance(freq, out) < 0.02
    assert sm.tv_distance(freq, p) > truth - 0.02       # the bias is seen, not only computed


# ------------------------------------------- fresh randomness (ch. 2, requirement (ii))

P_ANIMALS = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
Q_ANIMALS = np.array([0.15, 0.40, 0.10, 0.30, 0.05])


def test_reused_uniform_output_law_matches_a_simulation_of_that_pipeline_and_is_biased(rng):
    """One U draws X = F_q⁻¹(U) and accepts iff U < p/q: X ~ q, yet the output is not p.
    The exact law agrees with an independent simulation (G-test, level 0.01: false-alarm
    rate 0.01) and the same test rejects p (power ≈ 1 at TV 0.15 and 50,000 draws)."""
    p, q = P_ANIMALS, Q_ANIMALS
    law = reused_uniform_output_distribution(p, q)
    assert sm.tv_distance(law, p) == pytest.approx(0.15, abs=1e-12)
    assert law[3] == 0.0                                   # "owl" never emitted
    n = 50_000
    u = rng.random(n)
    x = np.minimum(np.searchsorted(np.cumsum(q), u, side="right"), p.size - 1)
    y = np.where(u < np.minimum(1, p / q)[x], x,
                 rng.choice(p.size, size=n, p=sm.residual_distribution(p, q)))
    assert stats.g_test(np.bincount(x, minlength=p.size), q).pvalue > 0.01
    assert stats.g_test(np.bincount(y, minlength=p.size), law).pvalue > 0.01
    assert stats.g_test(np.bincount(y, minlength=p.size), p).pvalue < 0.01
    # with the uniform fresh instead, the same pipeline's law would be p exactly
    np.testing.assert_allclose(mismatched_output_distribution(p, q, q), p, atol=1e-12)


def test_shared_gumbel_recovery_noise_is_caught_by_the_g_test_and_fresh_noise_is_not():
    """vLLM #47386/#54282 mechanism: the recovery reuses the draft's Gumbel noise. At
    50,000 verifications and level 0.01 (false-alarm rate 0.01 for the fresh-noise
    verifier, whose law is p), the G-test rejects the shared-noise verifier; its power
    against the shared-noise law (estimated from 10⁶ draws) is asserted above 0.95."""
    from gtestpower import power_of_gtest

    p, q = P_ANIMALS, Q_ANIMALS
    r = np.random.default_rng(47386)
    n, level = 50_000, 0.01
    x, y_shared = gumbel_verifier_outputs(p, q, n, r)
    _, y_fresh = gumbel_verifier_outputs(p, q, n, r, shared_noise=False)
    assert stats.g_test(np.bincount(x, minlength=5), q).pvalue > level     # X ~ q
    assert stats.g_test(np.bincount(y_fresh, minlength=5), p).pvalue > level
    assert stats.g_test(np.bincount(y_shared, minlength=5), p).pvalue < level
    law = np.bincount(gumbel_verifier_outputs(p, q, 1_000_000, r)[1], minlength=5) / 1e6
    assert 0.005 < sm.tv_distance(law, p) < 0.02
    assert power_of_gtest(p, law, n, level) > 0.95


def test_gumbel_verifier_rejects_bad_input_with_a_value_error_naming_the_argument(rng):
    with pytest.raises(ValueError, match="n"):
        gumbel_verifier_outputs(P_ANIMALS, Q_ANIMALS, 0, rng)
    with pytest.raises(ValueError, match="1-D"):
        gumbel_verifier_outputs(np.stack([P_ANIMALS] * 2), np.stack([Q_ANIMALS] * 2), 5, rng)


@given(st.integers(0, 10_000), st.integers(2, 9))
def test_verifier_output_is_off_from_p_by_at_most_tv_of_sampled_and_reported_draft(seed, V):
    """The verifier is one fixed random map of the drafted token that outputs p when the
    token follows the reported q: coupling the two drafts gives TV(out, p) ≤ TV(q_s, q_r)."""
    r = np.random.default_rng(seed)
    p, q_r, q_s = (r.dirichlet(np.full(V, 0.5)) for _ in range(3))
    q_r[r.integers(V)] = 0.0                          # a reported zero, as after rounding
    q_r /= q_r.sum()
    out = mismatched_output_distribution(p, q_r, q_s)
    assert sm.tv_distance(out, p) <= sm.tv_distance(q_s, q_r) + 1e-12


def test_speculative_decoding_stays_exact_when_k_and_the_draft_are_chosen_from_the_past():
    """Theorem ch2-thm-sequence, wider form: k and the draft model chosen from the last
    token. Transition counts pass the G-test (level 0.01, false-alarm rate 0.01); the same
    schedule with always-accept is rejected."""
    target, near = toy.toy_pair(vocab_size=6, closeness=0.6, seed=0)
    far = toy.toy_pair(vocab_size=6, closeness=0.1, seed=0)[1]
    r = np.random.default_rng(17)

    def decode(rule):
        seq = []
        while len(seq) < 20_000:
            last = seq[-1] if seq else 0
            k = 1 + last % 4
            it = toy.speculative_decode(target, (near, far)[last % 2], k + 1, k, r,
                                        context=seq[-1:], rule=rule)
            seq += [int(t) for t in it.tokens]
        return toy.transition_counts(np.array(seq[:20_000]), 6)

    assert stats.g_test(decode("exact"), target.transition).pvalue > 0.01
    assert stats.g_test(decode("always-accept"), target.transition).pvalue < 0.01


def test_float32_sums_of_the_same_terms_depend_on_their_order():
    """Chapter 2's floating-point remark: sequential sums left to right and right to left
    of the same float32 terms differ (why a (k+1)-token pass may round p differently)."""
    t = np.random.default_rng(7).standard_normal(4096).astype(np.float32)
    assert np.cumsum(t)[-1] != np.cumsum(t[::-1])[-1]


# ------------------------------------------------ the preface's two tripwires (ch. 0)

def test_leviathan_theorem_3_8_typed_out_literally_equals_the_course_speedup():
    """(1 − α^(γ+1)) / ((1 − α)(γ c_L + 1)), evaluated as printed, equals E[N]/(1 + k/c)
    with γ = k and c_L = 1/c; it would not with c_L = c (the tripwire)."""
    alphas = np.linspace(0, 0.99, 100)
    for c in (2.0, 10.0, 20.0):
        c_L = 1 / c
        for k in range(11):
            lev = (1 - alphas ** (k + 1)) / ((1 - alphas) * (k * c_L + 1))
            np.testing.assert_allclose(lev, sm.speedup(alphas, k, c), rtol=1e-12)
            if k > 0:
                wrong = (1 - alphas ** (k + 1)) / ((1 - alphas) * (k * c + 1))
                assert not np.allclose(wrong, sm.speedup(alphas, k, c))


def test_chen_verification_in_their_letters_emits_our_target_only_with_letters_swapped():
    """Chen et al.'s rule as printed (x ~ p_C, keep if r < q_C/p_C, else (q_C − p_C)+):
    with p_C = our draft it passes a G-test against our target (level 0.01, the false-alarm
    rate); with the letters read as ours it emits the draft and is rejected (TV 0.224 at
    50,000 draws: power ≈ 1)."""
    p, q = P_ANIMALS, Q_ANIMALS
    r = np.random.default_rng(2302)

    def chen(p_C, q_C, n):
        x = r.choice(5, size=n, p=p_C)
        keep = r.random(n) < np.minimum(1, q_C[x] / p_C[x])
        res = np.maximum(q_C - p_C, 0)
        return np.where(keep, x, r.choice(5, size=n, p=res / res.sum()))

    assert stats.g_test(np.bincount(chen(q, p, 50_000), minlength=5), p).pvalue > 0.01
    assert stats.g_test(np.bincount(chen(p, q, 50_000), minlength=5), p).pvalue < 0.01


# ------------------------------------------ capacity and tensor parallelism (ch. 1)

def test_70b_bf16_target_fits_two_h100s_but_not_one_and_halves_the_step_time():
    """140 GB of weights > 80 GB of one H100; two (160 GB) hold them and the 7B draft.
    Tensor parallelism doubles W, F and memory: the step halves, the ridge stays."""
    one, two = cm.H100_SXM, cm.tensor_parallel(cm.H100_SXM, 2)
    assert not cm.fits_in_memory(P70, one, 2.0)
    assert cm.fits_in_memory(P70, two, 2.0) and cm.fits_in_memory(P70 + P7, two, 2.0)
    assert not cm.fits_in_memory(P70 + P7, two, 2.0, 10e9)  # + a 32k-token cache: no
    assert cm.forward_time(1, P70, two) == pytest.approx(P70 * 2.0 / (2 * 3.35e12))
    assert cm.ridge_point(two) == pytest.approx(cm.ridge_point(one), rel=1e-15)
    assert cm.fits_in_memory(P70, one, 0.5)                   # 4-bit: 35 GB on one
    ms, tok_s = _REGISTRY["ch1-ex2"].compute()
    assert ms == pytest.approx(1e3 * 140e9 / 6.7e12) and tok_s == pytest.approx(6.7e12 / 140e9)


@given(st.floats(0.5, 8.0), st.floats(1e11, 1e13), st.floats(1e13, 1e16),
       st.integers(0, 2000))
def test_verification_cost_is_max_of_one_and_k_plus_1_over_n_star_when_n_star_at_least_1(
        b, W, F, k):
    """Exercise ch1-ex6(a): V(k) = max(1, (k + 1)/n*) whenever n* ≥ 1, and V(k) = k + 1
    when n* < 1 (ex6(c))."""
    hw = cm.Hardware("h", W, F)
    n_s = cm.ridge_point(hw, b)
    V = cm.verify_cost(k, P70, hw, b)
    if n_s >= 1:
        assert V == pytest.approx(max(1.0, (k + 1) / n_s), rel=1e-12)
    else:
        assert V == pytest.approx(k + 1, rel=1e-12)
