"""The acceptance rule: α, the residual, the exact output distribution, one step (ch. 2, 3)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import specmath as sm


@st.composite
def distribution_pairs(draw, max_v: int = 10, rows: int | None = None):
    """Two probability arrays of shape (V,) or (rows, V), exact zeros allowed."""
    v = draw(st.integers(1, max_v))
    shape = (v,) if rows is None else (rows, v)
    weights = st.one_of(st.just(0.0), st.floats(1e-3, 1.0))
    out = []
    for _ in range(2):
        w = np.array(draw(st.lists(weights, min_size=int(np.prod(shape)),
                                   max_size=int(np.prod(shape))))).reshape(shape)
        flat = w.reshape(-1, v)
        flat[flat.sum(axis=1) == 0, 0] = 1.0  # an all-zero row becomes a point mass
        w = flat.reshape(shape)
        out.append(w / w.sum(axis=-1, keepdims=True))
    return out


# ---- known values ----------------------------------------------------------------------

def test_known_alpha_residual_and_output():
    p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    assert sm.acceptance_probability(p, q) == pytest.approx(0.6)
    np.testing.assert_allclose(sm.residual_distribution(p, q), [0.0, 1.0])
    np.testing.assert_allclose(sm.output_distribution(p, q), p, atol=1e-15)
    # the biased rules, computed by hand
    np.testing.assert_allclose(sm.naive_output_distribution(p, q, "always-accept"), q)
    # resample-from-p: min(p, q) + (1 − α) p = [0.5, 0.1] + 0.4 [0.5, 0.5]
    np.testing.assert_allclose(sm.naive_output_distribution(p, q, "resample-from-p"),
                               [0.7, 0.3])
    # accept-if-top (top of p is token 0, ties to the lowest index): q(0) on token 0,
    # else a fresh draw from p: [0.9 + 0.1·0.5, 0.1·0.5]
    np.testing.assert_allclose(sm.naive_output_distribution(p, q, "accept-if-top"),
                               [0.95, 0.05])


# ---- properties ------------------------------------------------------------------------

@given(distribution_pairs())
def test_alpha_equals_one_minus_tv(pq):
    p, q = pq
    a = sm.acceptance_probability(p, q)
    assert 0.0 <= a <= 1.0 + 1e-15
    assert a == pytest.approx(1.0 - sm.tv_distance(p, q), abs=1e-12)
    assert a == sm.acceptance_probability(q, p)


@given(distribution_pairs())
def test_output_distribution_equals_target(pq):
    p, q = pq
    np.testing.assert_allclose(sm.output_distribution(p, q), p, rtol=0, atol=1e-12)


@given(distribution_pairs())
def test_residual_is_a_distribution_supported_where_p_exceeds_q(pq):
    p, q = pq
    r = sm.residual_distribution(p, q)
    assert np.isfinite(r).all() and (r >= 0).all()
    assert r.sum() == pytest.approx(1.0, abs=1e-12)
    if sm.acceptance_probability(p, q) < 1 - 1e-9:
        assert (r[p <= q] == 0).all()
        np.testing.assert_allclose(r, np.maximum(p - q, 0) / np.maximum(p - q, 0).sum(),
                                   atol=1e-12)


@given(distribution_pairs())
def test_naive_output_distributions_are_distributions_and_biased_unless_q_is_p(pq):
    p, q = pq
    for rule in sm.NAIVE_RULES:
        d = sm.naive_output_distribution(p, q, rule)
        assert (d >= -1e-15).all() and d.sum() == pytest.approx(1.0, abs=1e-12)
    # always-accept emits q; resample-from-p is biased exactly when some draft is rejected
    np.testing.assert_array_equal(sm.naive_output_distribution(p, q, "always-accept"), q)
    alpha = sm.acceptance_probability(p, q)
    rp = sm.naive_output_distribution(p, q, "resample-from-p")
    expected = np.minimum(p, q) + (1 - alpha) * p
    np.testing.assert_allclose(rp, expected, atol=1e-12)


@given(distribution_pairs(rows=4))
def test_batched_calls_equal_rowwise_calls(pq):
    p, q = pq
    a, t = sm.acceptance_probability(p, q), sm.tv_distance(p, q)
    r, o = sm.residual_distribution(p, q), sm.output_distribution(p, q)
    assert a.shape == t.shape == (4,)
    for i in range(4):
        assert a[i] == sm.acceptance_probability(p[i], q[i])
        assert t[i] == sm.tv_distance(p[i], q[i])
        np.testing.assert_array_equal(r[i], sm.residual_distribution(p[i], q[i]))
        np.testing.assert_array_equal(o[i], sm.output_distribution(p[i], q[i]))
        for rule in sm.NAIVE_RULES:
            np.testing.assert_array_equal(sm.naive_output_distribution(p, q, rule)[i],
                                          sm.naive_output_distribution(p[i], q[i], rule))


# ---- edges -------------------------------------------------------------------------------

def test_residual_of_identical_distributions_is_p_finite_and_never_nan():
    """Documented: when p = q the residual mass is 0, rejection never happens; we return p."""
    p = np.array([0.2, 0.0, 0.8])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        r = sm.residual_distribution(p, p)
        np.testing.assert_array_equal(r, p)
        np.testing.assert_array_equal(sm.output_distribution(p, p), p)
        assert sm.acceptance_probability(p, p) == 1.0
        rows = sm.residual_distribution(np.array([p, [0.5, 0.5, 0]]), np.array([p, [1, 0, 0]]))
        np.testing.assert_array_equal(rows, [p, [0.0, 1.0, 0.0]])


def test_p_zero_where_q_has_mass_always_rejects_that_token(rng):
    """The draft proposes token 2 which the target never emits: every such draft is rejected."""
    p = np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]])
    q = np.array([[0.0, 0.0, 1.0]])
    assert sm.acceptance_probability(p[0], q[0]) == 0.0
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for _ in range(200):
            out = sm.speculative_step(p, q, [2], rng)
            assert len(out) == 1 and out[0] in (0, 1)
        np.testing.assert_allclose(sm.output_distribution(p[0], q[0]), p[0])


def test_q_zero_where_p_has_mass_is_reached_through_the_residual(rng):
    p = np.array([[0.5, 0.5], [1.0, 0.0]])
    q = np.array([[1.0, 0.0]])  # the draft never proposes token 1
    np.testing.assert_array_equal(sm.residual_distribution(p[0], q[0]), [0.0, 1.0])
    outs = [tuple(sm.speculative_step(p, q, [0], rng)) for _ in range(400)]
    assert set(outs) <= {(0, 0), (1,)}
    assert {(0, 0), (1,)} <= set(outs)  # both happen (each has probability 1/2)


def test_vocabulary_of_one_token_always_accepts(rng):
    p, q = np.ones((4, 1)), np.ones((3, 1))
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert sm.acceptance_probability(p[0], q[0]) == 1.0
        np.testing.assert_array_equal(sm.speculative_step(p, q, [0, 0, 0], rng), [0, 0, 0, 0])
        np.testing.assert_array_equal(sm.residual_distribution(p[0], q[0]), [1.0])


def test_k_zero_step_is_plain_sampling_from_p0(rng):
    p = np.array([[0.0, 1.0, 0.0]])
    for _ in range(20):
        np.testing.assert_array_equal(sm.speculative_step(p, np.empty((0, 3)), [], rng), [1])
        np.testing.assert_array_equal(
            sm.naive_step(p, np.empty((0, 3)), np.array([], dtype=int), rng, "always-accept"),
            [1])


def test_alpha_one_accepts_every_draft_and_adds_the_bonus(rng):
    p = np.array([[0.3, 0.7], [0.6, 0.4], [0.0, 1.0]])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for _ in range(100):
            draft = [int(rng.integers(2)), int(rng.integers(2))]
            out = sm.speculative_step(p, p[:2], draft, rng)
            np.testing.assert_array_equal(out, draft + [1])


def test_alpha_zero_rejects_the_first_draft(rng):
    p = np.array([[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]])
    q = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for _ in range(100):
            out = sm.speculative_step(p, q, [0, 0], rng)
            assert len(out) == 1 and out[0] in (1, 2)


@pytest.mark.parametrize("rule", ("exact",) + sm.NAIVE_RULES)
def test_step_returns_accepted_prefix_plus_one_token(rule, rng):
    k, V = 4, 5
    p = rng.dirichlet(np.ones(V), size=k + 1)
    q = rng.dirichlet(np.ones(V), size=k)
    for _ in range(300):
        draft = np.array([rng.choice(V, p=q[i]) for i in range(k)])
        out = (sm.speculative_step(p, q, draft, rng) if rule == "exact"
               else sm.naive_step(p, q, draft, rng, rule))
        assert out.dtype == np.int64 and out.ndim == 1 and 1 <= len(out) <= k + 1
        np.testing.assert_array_equal(out[:-1], draft[:len(out) - 1])
        assert 0 <= out[-1] < V
        if rule == "always-accept":
            assert len(out) == k + 1


def test_step_is_reproducible_with_the_same_seed():
    p = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    q = np.array([[0.7, 0.3], [0.1, 0.9]])
    a = [sm.speculative_step(p, q, [0, 1], np.random.default_rng(5)).tolist() for _ in range(3)]
    assert a[0] == a[1] == a[2]


# ---- inputs as engines produce them (issue 9) ----------------------------------------------

V_QWEN = 151_936  # the Qwen2.5 vocabulary


def _float32_softmax_rows(rng, rows: int, V: int = V_QWEN, std: float = 3.0) -> np.ndarray:
    """float32 softmax rows whose normaliser is accumulated as a SIMD CPU kernel does.

    Eight float32 lanes (AVX2) each sum every eighth term left to right, then the lanes
    are added: this reproduces the ~1e-5 errors of the sums that engines hand over (16
    lanes give torch's CPU softmax's ~5e-6; numpy's own pairwise ``sum`` is kinder).
    """
    z = (std * rng.standard_normal((rows, V))).astype(np.float32)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    lanes = np.cumsum(e.reshape(rows, -1, 8), axis=1, dtype=np.float32)[:, -1, :]
    S = lanes.sum(axis=1, keepdims=True, dtype=np.float32)
    return (e / S).astype(np.float32)


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return r.view(np.float32)


def _draft_tokens(q: np.ndarray, rng) -> np.ndarray:
    qq = q.astype(np.float64)
    return np.array([rng.choice(q.shape[1], p=row / row.sum()) for row in qq])


def test_float32_softmax_rows_at_vocab_151936_pass_step_and_alpha(rng):
    """Rows off by more than SUM_TOL (as float32 engines produce them) are accepted."""
    k = 3
    p = _float32_softmax_rows(rng, k + 1)
    q = _float32_softmax_rows(rng, k)
    sums = p.astype(np.float64).sum(axis=1)
    assert np.abs(sums - 1).max() > sm.SUM_TOL  # the old rule would have refused them
    alpha = sm.acceptance_probability(p[:k], q)
    p64, q64 = (a.astype(np.float64) for a in (p, q))
    p64, q64 = p64 / p64.sum(1, keepdims=True), q64 / q64.sum(1, keepdims=True)
    np.testing.assert_allclose(alpha, np.minimum(p64[:k], q64).sum(1), rtol=0, atol=1e-12)
    out = sm.speculative_step(p, q, _draft_tokens(q, rng), rng)
    assert 1 <= len(out) <= k + 1 and ((out >= 0) & (out < V_QWEN)).all()
    # renormalised in float64: the exact output distribution is the renormalised target
    np.testing.assert_allclose(sm.output_distribution(p[0], q[0]), p64[0], rtol=0, atol=1e-15)


def test_bf16_rounded_rows_as_float32_pass_step_and_alpha(rng):
    k = 2
    p = _bf16_round(_float32_softmax_rows(rng, k + 1))
    q = _bf16_round(_float32_softmax_rows(rng, k))
    off = np.abs(p.astype(np.float64).sum(axis=1) - 1).max()
    assert off > sm.SUM_TOL
    from specmath._validate import _storage, sum_tolerance
    assert _storage(str(p.dtype), p) == "bfloat16"
    assert off < sum_tolerance(V_QWEN, "bfloat16")
    assert _storage("float32", p[:, :3] + np.float32(1e-7)) == "float32"
    # a list of float32 rows keeps its precision
    assert 0 < sm.acceptance_probability(list(p[:k]), list(q)).min() <= 1
    assert 0 < sm.acceptance_probability(p[:k], q).min() <= 1
    out = sm.speculative_step(p, q, _draft_tokens(q, rng), rng)
    assert 1 <= len(out) <= k + 1


def test_torch_float32_softmax_at_vocab_151936_is_accepted(rng):
    torch = pytest.importorskip("torch")
    z = torch.from_numpy((3 * rng.standard_normal((3, V_QWEN))).astype(np.float32))
    p = torch.softmax(z, -1)
    q = torch.softmax(z.flip(0), -1)
    assert 0 < sm.acceptance_probability(p[:2], q[:2]).min() < 1
    assert len(sm.speculative_step(p, q[:2], _draft_tokens(q[:2].numpy(), rng), rng)) >= 1
    pb = p.bfloat16()  # bfloat16 rows straight from torch
    assert 0 < sm.acceptance_probability(pb, pb.flip(0)).min() < 1


def test_torch_bf16_tensor_rows_are_read_as_float32():
    torch = pytest.importorskip("torch")
    z = torch.randn(2, 1000, generator=torch.Generator().manual_seed(0)) * 3
    pb = torch.softmax(z, -1).bfloat16()
    a = sm.acceptance_probability(pb, pb)
    np.testing.assert_allclose(a, 1.0, rtol=0, atol=1e-12)


def test_rows_truly_off_still_raise_with_ten_digits(rng):
    p = _float32_softmax_rows(rng, 2)
    bad = p.copy()
    bad[1] *= np.float32(0.99)
    with pytest.raises(ValueError, match=r"q must sum to 1 along the last axis \(within "
                       r"0\.000232 for float32 rows of length 151936\); found a sum of "
                       r"0\.99\d{8} in row \(1,\)"):
        sm.acceptance_probability(p, bad)
    with pytest.raises(ValueError, match=r"q must sum to 1 .* bfloat16 rows"):
        sm.speculative_step(p[:2], _bf16_round(bad[1:]), [0], rng)
    # a float32 row upcast to float64 loses the information: the message says what to do
    with pytest.raises(ValueError, match=r"float64 rows of length 151936\) \(rows computed "
                       r"in float32 or bfloat16 and then upcast should be passed in their own "
                       r"dtype\)"):
        sm.acceptance_probability(p.astype(np.float64), p.astype(np.float64))


def test_sum_tolerance_scales_with_precision_and_vocabulary():
    from specmath._validate import sum_tolerance
    assert sum_tolerance(5, "float64") == sm.SUM_TOL
    assert sum_tolerance(V_QWEN, "float64") == sm.SUM_TOL
    t32 = sum_tolerance(V_QWEN, "float32")
    # u + λ √V u for float32 at V = 151,936; 0.99 (an error of 1e-2) stays out of reach
    assert t32 == pytest.approx(2.0 ** -24 * (1 + 10 * np.sqrt(V_QWEN)))
    assert sum_tolerance(4 * V_QWEN, "float32") > t32
    assert sm.SUM_TOL < t32 < sum_tolerance(V_QWEN, "float16") < sum_tolerance(V_QWEN,
                                                                                 "bfloat16")
    assert sum_tolerance(V_QWEN, "bfloat16") < 0.01
    with pytest.raises(ValueError, match="storage must be one of"):
        sum_tolerance(3, "int8")


def test_exact_float64_rows_are_returned_bit_for_bit():
    p = np.array([0.1, 0.2, 0.7])
    np.testing.assert_array_equal(sm.residual_distribution(p, p), p)
    off = np.array([0.5, 0.5 + 5e-7])  # within SUM_TOL: accepted and renormalised
    np.testing.assert_allclose(sm.output_distribution(off, off).sum(), 1.0, rtol=0, atol=1e-15)


def test_draft_token_with_q_zero_is_accepted_iff_target_allows_it(rng):
    """The rule u·q(x) < p(x): q(x) = 0 accepts when p(x) > 0 and rejects when p(x) = 0."""
    q = np.array([[0.5, 0.5, 0.0]])
    p_allows = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    p_forbids = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    for _ in range(50):
        np.testing.assert_array_equal(sm.speculative_step(p_allows, q, [2], rng), [2, 0])
        out = sm.speculative_step(p_forbids, q, [2], rng)
        assert len(out) == 1 and out[0] in (0, 1)


def test_speculative_step_at_vocab_151936_takes_milliseconds(rng):
    """No O(kV) Python loop: k = 5 at V = 151,936 in well under a second (shared 2-core box)."""
    import time
    k = 5
    p = _float32_softmax_rows(rng, k + 1)
    q = _float32_softmax_rows(rng, k)
    t = _draft_tokens(q, rng)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        sm.speculative_step(p, q, t, rng)
        times.append(time.perf_counter() - t0)
    assert min(times) < 0.5
