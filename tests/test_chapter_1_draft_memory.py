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


def test_two_h100s_fail_for_speculation_only_through_the_engines_reserve():
    """ch1-ex5 (review R10a finding 2): fits_in_memory is a necessary condition with the
    datasheet's 80·10⁹ bytes per GPU. The device reports 81559 MiB (more), and two of
    those would hold weights and both caches (171.04 GB ≥ 169.03 GB); vLLM's default
    share up to version 0.19.1, 0.9, leaves 153.9 GB, short of it, and with that share three GPUs are the
    first that suffice, as with the datasheet's capacity and no share."""
    from specmath import published

    kv, kv_d = _caches()
    P, P_d, b = DATA["target_params"], DATA["draft_params"], DATA["bf16"]
    need = (P + P_d) * b + kv + kv_d
    rep = published.load("gpus_memory", gpu="H100 SXM",
                         quantity="memory_reported_mib")[0]["value"] * 2**20
    share = published.load("gpus_memory", quantity="engine_memory_fraction")[0]["value"]
    assert cm.H100_SXM.memory < rep < 80 * 2**30
    assert abs(need / 1e9 - 169.0324) < 1e-3
    assert 2 * rep >= need > share * 2 * rep
    first_share = next(n for n in range(1, 9) if share * n * rep >= need)
    first_sheet = next(n for n in range(1, 9)
                       if cm.fits_in_memory(P + P_d, cm.tensor_parallel(cm.H100_SXM, n),
                                            b, kv + kv_d))
    assert first_share == first_sheet == 3


def test_exercise_ch1_ex6d_only_if_bites_only_at_batches_that_do_not_fit():
    """ch1-ex6(d) (review R10a finding 3): on ch1-ex5's 8-GPU server, m = 15 (the first
    integer above m_max = 14.03) costs more than one step only for B > 189, while at
    most 46 caches fit (32 with the draft); for B ≤ 32, one step holds up to m = 19.75."""
    kv, _ = _caches()
    P, b = DATA["target_params"], DATA["bf16"]
    A = cm.attention_flops(DATA["context"], DATA["layers"], DATA["q_heads"],
                           DATA["head_dim"])
    srv = cm.tensor_parallel(cm.H100_SXM, DATA["n_gpus_server"])
    F, W, c = srv.peak_flops, srv.bandwidth, 2 * P + A

    def t(B, m):
        return max((P * b + B * kv) / W, B * m * c / F)

    m_max = F * kv / (W * c)
    assert math.floor(m_max) + 1 == 15
    over = [B for B in range(1, 400) if t(B, 15) > t(B, 1)]
    assert over[0] == 190 and over == list(range(190, 400))
    assert all(t(B, 19) == t(B, 1) for B in range(1, 33))
    assert t(32, 20) > t(32, 1)
    assert abs(F * (P * b + 32 * kv) / (W * 32 * c) - 19.75) < 0.01


def test_two_h100s_fall_short_under_either_vllm_default_share_of_any_total_up_to_80_gib():
    """ch1-ex5 (review R14a finding 2, P6): vLLM's default share is 0.9 up to 0.19.1 and
    0.92 since 0.20.0 (both recorded with their source), applied to the total CUDA
    reports, which is not recorded; bounded by 80 GiB per GPU, and with nvidia-smi's
    81559 MiB, every combination leaves two GPUs short of weights and caches
    (169.03 GB) and makes three the first that suffice. Within 0.92 of 80 GiB on the
    8-GPU server at most 45 target caches fit (31 with the draft), below the
    datasheet-capacity bounds 46 and 32."""
    from specmath import published

    kv, kv_d = _caches()
    P, P_d, b = DATA["target_params"], DATA["draft_params"], DATA["bf16"]
    need = (P + P_d) * b + kv + kv_d
    old = published.load("gpus_memory", quantity="engine_memory_fraction")
    now = published.load("gpus_memory", quantity="engine_memory_fraction_current")
    assert [r["value"] for r in old + now] == [0.9, 0.92]
    assert "0.19.1" in old[0]["version"] and "0.20.0" in now[0]["version"]
    assert all("mem_get_info" in r["note"] for r in old + now)
    rep = published.load("gpus_memory", gpu="H100 SXM",
                         quantity="memory_reported_mib")[0]["value"] * 2**20
    gib = published.load("gpus_memory", gpu="H100 SXM",
                         quantity="memory_capacity_gib")[0]["value"] * 2**30
    assert rep < gib
    for share in (old[0]["value"], now[0]["value"]):
        for total in (rep, gib):
            assert share * 2 * total < need
            assert next(n for n in range(1, 9) if share * n * total >= need) == 3
    mem = now[0]["value"] * DATA["n_gpus_server"] * gib
    b_max = math.floor((mem - P * b) / kv)
    b_spec = math.floor((mem - (P + P_d) * b) / (kv + kv_d))
    assert (b_max, b_spec) == (45, 31)
    srv = cm.tensor_parallel(cm.H100_SXM, DATA["n_gpus_server"])
    assert mem < srv.memory
    assert b_max <= math.floor((srv.memory - P * b) / kv) == 46


def test_vllm_tensor_parallelism_needs_four_h100s_where_memory_alone_allows_three():
    """ch1-ex5 (review R15a finding 5): three H100s are a memory lower bound. vLLM's
    tensor parallelism (version 0.20.0, ModelConfig.verify_with_parallel_config) needs
    the GPU count to divide the 64 attention heads of DATA's 70B-class model, and
    QKVParallelLinear splits its 8 key/value heads evenly: 3 is refused, 4 is the first
    count that both holds the memory and meets the rule."""
    kv, kv_d = _caches()
    P, P_d, b = DATA["target_params"], DATA["draft_params"], DATA["bf16"]
    need_fits = [cm.fits_in_memory(P + P_d, cm.tensor_parallel(cm.H100_SXM, n), b,
                                   kv + kv_d) for n in range(1, 9)]
    n_mem = need_fits.index(True) + 1
    heads, kv_heads = DATA["q_heads"], DATA["kv_heads"]
    assert (n_mem, heads, kv_heads) == (3, 64, 8)

    def vllm_tp_accepts(n: int) -> bool:
        return heads % n == 0 and (kv_heads % n == 0 or n % kv_heads == 0)

    assert not vllm_tp_accepts(n_mem)
    n_tp = next(n for n in range(n_mem, heads + 1) if vllm_tp_accepts(n))
    assert n_tp == 4 and need_fits[n_tp - 1]
    assert [n for n in range(1, 9) if vllm_tp_accepts(n)] == [1, 2, 4, 8]
