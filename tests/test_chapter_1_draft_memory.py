"""Chapter 1, exercise ch1-ex5 (review R9a finding 4) and the roofline caption (finding 3):
at 32k tokens of context the speculative set-up must hold the draft as well, its weights
and its own KV cache."""

from __future__ import annotations

import math

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
