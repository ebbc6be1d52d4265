"""softmax with temperature, total variation, mixtures, entropy, top-1 agreement (ch. 3, 6)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import specmath as sm

logit_vectors = hnp.arrays(float, st.integers(1, 12),
                           elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False))
temperatures = st.floats(1e-3, 100.0)


@st.composite
def distribution_pairs(draw, max_v: int = 10):
    """Two probability vectors over the same vocabulary, with exact zeros allowed."""
    v = draw(st.integers(1, max_v))
    weights = st.one_of(st.just(0.0), st.floats(1e-3, 1.0))
    out = []
    for _ in range(2):
        w = np.array(draw(st.lists(weights, min_size=v, max_size=v)))
        if w.sum() == 0:
            w[draw(st.integers(0, v - 1))] = 1.0
        out.append(w / w.sum())
    return out


# ---- softmax -----------------------------------------------------------------------------

def test_softmax_known_values():
    np.testing.assert_allclose(sm.softmax([0.0, math.log(2.0)]), [1 / 3, 2 / 3], rtol=1e-15)
    # T = 2 halves the log-odds: softmax(z, 2) = softmax(z / 2)
    np.testing.assert_allclose(sm.softmax([0.0, math.log(4.0)], 2.0), [1 / 3, 2 / 3],
                               rtol=1e-15)
    np.testing.assert_array_equal(sm.softmax([3.0]), [1.0])  # V = 1


def test_softmax_temperature_zero_is_argmax_with_ties_to_lowest_index():
    np.testing.assert_array_equal(sm.softmax([1.0, 3.0, 2.0], 0), [0, 1, 0])
    np.testing.assert_array_equal(sm.softmax([5.0, 1.0, 5.0], 0), [1, 0, 0])
    np.testing.assert_array_equal(sm.softmax([[0.0, 0.0], [1.0, 2.0]], 0.0), [[1, 0], [0, 1]])


def test_softmax_tiny_temperature_is_finite_and_approaches_argmax():
    """Regression: z / T overflowed to inf and inf − inf gave NaN for T ≈ 1e-308."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sm.softmax([1.0, 2.0, 2.0 - 1e-9], 1e-308)
    np.testing.assert_array_equal(out, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(sm.softmax([0.0, 1.0], 1e-3), [0.0, 1.0])


def test_softmax_large_logits_and_masked_tokens():
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        out = sm.softmax([1000.0, 1000.0, -math.inf])
        np.testing.assert_array_equal(out, [0.5, 0.5, 0.0])
        np.testing.assert_array_equal(sm.softmax([-math.inf, 0.0], 0), [0.0, 1.0])


@given(logit_vectors, temperatures)
def test_softmax_is_a_distribution_preserving_the_order_of_logits(z, t):
    p = sm.softmax(z, t)
    assert p.shape == z.shape
    assert (p >= 0).all() and p.sum() == pytest.approx(1.0, abs=1e-12)
    order = np.argsort(z, kind="stable")
    assert (np.diff(p[order]) >= -1e-15).all()
    np.testing.assert_allclose(p, sm.softmax(z / t), rtol=1e-9, atol=1e-300)


@given(logit_vectors, st.floats(-100, 100))
def test_softmax_ignores_a_constant_shift(z, shift):
    np.testing.assert_allclose(sm.softmax(z + shift), sm.softmax(z), rtol=1e-9, atol=1e-15)


def test_softmax_broadcasts_over_rows():
    z = np.array([[0.0, 1.0, 2.0], [2.0, 2.0, -1.0]])
    out = sm.softmax(z, 0.7)
    for i in range(2):
        np.testing.assert_array_equal(out[i], sm.softmax(z[i], 0.7))


# ---- total variation, mixtures, entropy, top-1 agreement -------------------------------

def test_tv_distance_known_values():
    assert sm.tv_distance([0.5, 0.5], [0.9, 0.1]) == pytest.approx(0.4)
    assert sm.tv_distance([1.0, 0.0], [0.0, 1.0]) == 1.0
    assert sm.tv_distance([1.0], [1.0]) == 0.0


@given(distribution_pairs())
def test_tv_distance_is_a_symmetric_number_in_0_1(pq):
    p, q = pq
    d = sm.tv_distance(p, q)
    assert isinstance(d, float) and 0.0 <= d <= 1.0 + 1e-15
    assert d == sm.tv_distance(q, p)
    assert sm.tv_distance(p, p) == 0.0
    # TV is the largest gap P(A) − Q(A) over events: attained at A = {p > q}
    assert d == pytest.approx(p[p > q].sum() - q[p > q].sum(), abs=1e-12)


def test_mix_endpoints_and_sweep_broadcasting():
    p, q = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.1, 0.8])
    np.testing.assert_array_equal(sm.mix(p, q, 0.0), q)
    np.testing.assert_array_equal(sm.mix(p, q, 1.0), p)
    w = np.linspace(0, 1, 6)
    m = sm.mix(p, q, w[:, None])
    assert m.shape == (6, 3)
    np.testing.assert_allclose(m.sum(axis=-1), 1.0)
    # moving the draft toward the target raises α linearly: α(w) = α(0) + w (1 − α(0))
    a = sm.acceptance_probability(np.broadcast_to(p, m.shape), m)
    a0 = sm.acceptance_probability(p, q)
    np.testing.assert_allclose(a, a0 + w * (1 - a0), rtol=1e-12)


def test_entropy_known_values():
    assert sm.entropy([0.25] * 4) == pytest.approx(2.0)
    assert sm.entropy([1.0, 0.0, 0.0]) == 0.0  # 0 log 0 = 0, no NaN
    assert sm.entropy([0.5, 0.5], base=math.e) == pytest.approx(math.log(2))
    np.testing.assert_allclose(sm.entropy([[0.5, 0.5], [1.0, 0.0]]), [1.0, 0.0])


def test_top1_agreement_ties_go_to_lowest_index():
    assert sm.top1_agreement([0.5, 0.5], [0.6, 0.4]) == 1.0
    assert sm.top1_agreement([0.4, 0.6], [0.6, 0.4]) == 0.0
    np.testing.assert_array_equal(
        sm.top1_agreement([[0.4, 0.6], [0.9, 0.1]], [[0.3, 0.7], [0.2, 0.8]]), [1.0, 0.0])


def test_temperature_to_zero_acceptance_tends_to_top1_agreement_not_one():
    """Errata: as T → 0, α tends to whether the top tokens agree, not to 1."""
    zp = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]])
    zq = np.array([[1.5, 1.0, 0.0], [2.0, 1.0, 0.0]])
    a = sm.acceptance_probability(sm.softmax(zp, 1e-3), sm.softmax(zq, 1e-3))
    np.testing.assert_allclose(a, sm.top1_agreement(sm.softmax(zp), sm.softmax(zq)), atol=1e-12)
