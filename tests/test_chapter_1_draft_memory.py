"""Chapter 1, exercise ch1-ex5 (review R9a finding 4) and the roofline caption (finding 3):
at 32k tokens of context the speculative set-up must hold the draft as well, its weights
and its own KV cache."""

from __future__ import annotations

import math

import numpy as np

from specmath import costmodel as cm
from specmath.exercises.ch1 import DATA


def _caches() -> tuple[float, float]:
    ctx = DATA["context"]
    kv = cm.kv_cache_bytes(ctx, DATA["layers"], DATA["kv_heads"], DATA["head_dim"])
    kv_d = cm.kv_cache_bytes(ctx, DATA["draft_layers"], DATA["draft_kv_heads"],
                             DATA["draft_head_dim"])
    return kv, kv_d


def test_two_h100s_hold_target_and_one_32k_cache_but_not_with_the_draft_resident():
    kv, kv_d = _caches()
    P, P_d, b = DATA["target_params"], DATA["draft_params"], DATA["bf16"]
    two = cm.tensor_parallel(cm.H100_SXM, DATA["n_gpus"])
    assert cm.fits_in_memory(P, two, b, kv)                     # plain decoding fits
    assert cm.fits_in_memory(P + P_d, two, b)                   # both weights fit ...
    assert not cm.fits_in_memory(P + P_d, two, b, kv + kv_d)    # ... not with caches
    assert not cm.fits_in_memory(P + P_d, two, b, kv)           # not even target's alone
    three = cm.tensor_parallel(cm.H100_SXM, 3)
    assert cm.fits_in_memory(P + P_d, three, b, kv + kv_d)      # three GPUs suffice


def test_eight_h100s_hold_46_target_caches_45_with_draft_weights_32_with_draft_caches():
    kv, kv_d = _caches()
    P, P_d, b = DATA["target_params"], DATA["draft_params"], DATA["bf16"]
    srv = cm.tensor_parallel(cm.H100_SXM, DATA["n_gpus_server"])

    def most(n_params: float, per_seq: float) -> int:
        B = math.floor((srv.memory - n_params * b) / per_seq)
        assert cm.fits_in_memory(n_params, srv, b, B * per_seq)
        assert not cm.fits_in_memory(n_params, srv, b, (B + 1) * per_seq)
        return B

    assert most(P, kv) == 46                 # target alone (the plain-decoding count)
    assert most(P + P_d, kv) == 45           # R9a's count: draft weights added
    assert most(P + P_d, kv + kv_d) == 32    # and the draft's own cache per sequence


def test_roofline_intensity_in_bf16_is_n_flops_per_byte_not_2n():
    for n in (1, 5, 300):
        assert cm.arithmetic_intensity(n, 2.0) == n
        assert cm.arithmetic_intensity(n, 2.0) != 2 * n


def test_exercise_ch1_ex6d_m_tokens_cost_one_step_at_every_batch_iff_m_at_most_m_max():
    """ch1-ex6(d): t(B, m) = t(B, 1) for all B ≥ 1 iff m ≤ m_max or m = 1, checked on
    ch1-ex5's data and on 50 random (F, W, P, B_KV, A) over B up to 10⁶; the integer
    just above max(1, m_max) fails at some batch."""
    rng = np.random.default_rng(61)
    kv, _ = _caches()
    h = cm.tensor_parallel(cm.H100_SXM, DATA["n_gpus"])
    A = cm.attention_flops(DATA["context"], DATA["layers"], DATA["q_heads"],
                           DATA["head_dim"])
    cases = [(h.peak_flops, h.bandwidth, DATA["target_params"], kv, A)]
    for _ in range(50):
        cases.append((10 ** rng.uniform(12, 16), 10 ** rng.uniform(11, 13),
                      10 ** rng.uniform(8, 11), 10 ** rng.uniform(6, 10),
                      10 ** rng.uniform(6, 11)))
    Bs = np.unique(np.geomspace(1, 1e6, 400).astype(int))
    for F, W, P, kvb, att in cases:
        def t(B, m, F=F, W=W, P=P, kvb=kvb, att=att):
            return np.maximum((2 * P + B * kvb) / W, B * m * (2 * P + att) / F)
        m_max = F * kvb / (W * (2 * P + att))
        for m in range(1, 1 + max(1, math.floor(m_max))):
            assert np.all(t(Bs, m) == t(Bs, 1))
        m_bad = max(1, math.floor(m_max)) + 1
        big = np.array([1e12])                           # a batch large enough
        assert np.any(t(np.concatenate([Bs, big]), m_bad) > t(np.concatenate([Bs, big]), 1))
