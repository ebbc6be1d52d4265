"""A roofline-style cost model of one forward pass, and the course's cost conventions.

Chapter 1 (why speculation can be fast). At small batch, one forward pass of a decoder
that scores ``n`` new tokens must read every weight from memory once and do about two
floating-point operations per weight per token, so it takes about

    T(n) ≈ max(bytes_moved / bandwidth, flops / peak),
    bytes_moved ≈ parameters × bytes per parameter (+ KV cache),
    flops ≈ (2 × parameters + attention FLOPs per token) × n

(Williams, Waterman & Patterson 2009, the *roofline* model). While ``n`` is below the
*ridge point* n* = peak × bytes per parameter / (2 × bandwidth) the memory term wins and
T(n) = T(1): scoring k + 1 tokens costs one step. At long context the KV cache adds bytes
and attention adds FLOPs per token, and the ridge moves (:func:`ridge_point`). The hardware
numbers below are **illustrative**: the GPUs' are published datasheet peaks, which real
kernels reach only a fraction of; the CPU's peak is not a datasheet figure but computed from
stated assumptions (:data:`EPYC_9654_ASSUMPTIONS`).

Conventions: c = target time per token ÷ draft time per token (how many times faster the
draft is). Leviathan et al. (2023) write c for the inverse, draft time ÷ target time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_count, as_positive, as_probability, scalar_or_array

__all__ = [
    "Hardware",
    "tensor_parallel",
    "fits_in_memory",
    "A100_SXM",
    "H100_SXM",
    "H200_SXM",
    "ILLUSTRATIVE_GPUS",
    "EPYC_9654",
    "EPYC_9654_ASSUMPTIONS",
    "attention_flops",
    "bytes_moved",
    "forward_flops",
    "memory_time",
    "compute_time",
    "forward_time",
    "arithmetic_intensity",
    "ridge_point",
    "verify_cost",
    "speed_ratio",
    "iteration_time",
    "modelled_speedup",
    "kv_cache_bytes",
    "c_from_leviathan",
    "leviathan_c_from_c",
    "c_from_times",
]


@dataclass(frozen=True)
class Hardware:
    """An accelerator as the roofline model sees it: memory bandwidth and peak compute.

    Attributes
    ----------
    name : str
        Label for figures (say "illustrative" when the numbers are datasheet peaks).
    bandwidth : float
        Bytes per second the weights can be streamed from memory (> 0).
    peak_flops : float
        Floating-point operations per second at the weights' precision (> 0).
    source : str
        Where the numbers come from.
    memory : float or None
        Bytes of accelerator memory (datasheet capacity), or None when not stated. Only
        :func:`fits_in_memory` reads it: the roofline itself ignores capacity.
    """

    name: str
    bandwidth: float
    peak_flops: float
    source: str = ""
    memory: float | None = None

    def __post_init__(self):
        as_positive(self.bandwidth, "bandwidth", allow_inf=False)
        as_positive(self.peak_flops, "peak_flops", allow_inf=False)
        if self.memory is not None:
            as_positive(self.memory, "memory", allow_inf=False)


#: Illustrative: NVIDIA A100 SXM 80 GB datasheet, HBM2e 2.039 TB/s, dense BF16 312 TFLOP/s.
A100_SXM = Hardware("A100 SXM (illustrative)", 2.039e12, 312e12,
                    "NVIDIA A100 datasheet: 2,039 GB/s HBM2e; 312 TFLOP/s dense BF16; "
                    "80 GB", memory=80e9)
#: Illustrative: NVIDIA H100 SXM datasheet, HBM3 3.35 TB/s, dense BF16 989 TFLOP/s.
H100_SXM = Hardware("H100 SXM (illustrative)", 3.35e12, 989e12,
                    "NVIDIA H100 datasheet: 3.35 TB/s HBM3; 989 TFLOP/s dense BF16 "
                    "(1,979 with sparsity); 80 GB", memory=80e9)
#: Illustrative: NVIDIA H200 SXM datasheet, HBM3e 4.8 TB/s, dense BF16 989 TFLOP/s.
H200_SXM = Hardware("H200 SXM (illustrative)", 4.8e12, 989e12,
                    "NVIDIA H200 datasheet: 4.8 TB/s HBM3e; 989 TFLOP/s dense BF16 "
                    "(1,979 with sparsity); 141 GB", memory=141e9)
ILLUSTRATIVE_GPUS = (A100_SXM, H100_SXM, H200_SXM)
#: The assumptions behind :data:`EPYC_9654`'s peak, which is **not** a datasheet figure:
#: cores and base clock from AMD's datasheet; 32 FP32 FLOP per cycle per core assumes both
#: 256-bit FMA pipes of Zen 4 busy every cycle (2 pipes × 8 lanes × 2 FLOP) at the base
#: clock. Real all-core clocks and kernels differ: the result is an illustration.
EPYC_9654_ASSUMPTIONS = {"cores": 96, "clock_hz": 2.4e9, "fp32_flop_per_cycle": 32}
#: Illustrative server CPU: AMD EPYC 9654 (Zen 4), 12 channels of DDR5-4800 (460.8 GB/s per
#: socket, datasheet); FP32 peak *computed* as cores × clock × 32, about 7.4 TFLOP/s.
EPYC_9654 = Hardware("EPYC 9654 CPU (illustrative)", 460.8e9,
                     EPYC_9654_ASSUMPTIONS["cores"] * EPYC_9654_ASSUMPTIONS["clock_hz"]
                     * EPYC_9654_ASSUMPTIONS["fp32_flop_per_cycle"],
                     "AMD EPYC 9654 datasheet: 96 cores, 2.4 GHz base, 12 x DDR5-4800 = "
                     "460.8 GB/s per socket. FP32 peak not from the datasheet: computed "
                     "as 96 x 2.4 GHz x 32 FLOP/cycle (assumes Zen 4's two 256-bit FMA "
                     "pipes busy every cycle at base clock)")


def _hardware(hardware) -> Hardware:
    if not isinstance(hardware, Hardware):
        raise ValueError(f"hardware must be a specmath.costmodel.Hardware (e.g. H100_SXM); got "
                         f"{type(hardware).__name__}")
    return hardware


def _tokens(n_tokens) -> np.ndarray:
    n = as_count(n_tokens, "n_tokens", minimum=1)
    return n.astype(float)


def tensor_parallel(hardware: Hardware, n_devices: int) -> Hardware:
    """``n_devices`` copies of ``hardware`` splitting every weight matrix (ch. 1).

    Under tensor parallelism each device holds and reads 1/n of every weight matrix and
    does 1/n of the arithmetic, so in the roofline model the group acts as one device with
    n × the bandwidth, n × the peak and n × the memory. The communication between the
    devices (an all-reduce per layer in real engines) is **not** modelled: the times are
    lower bounds in that respect. The ridge point (a ratio of peak to bandwidth) is
    unchanged.
    """
    hw = _hardware(hardware)
    n = int(as_count(n_devices, "n_devices", minimum=1))
    mem = None if hw.memory is None else n * hw.memory
    return Hardware(f"{n} x {hw.name}", n * hw.bandwidth, n * hw.peak_flops,
                    f"{n} x ({hw.source}); tensor parallel, communication neglected", mem)


def fits_in_memory(n_params, hardware: Hardware, bytes_per_param: float = 2.0,
                   kv_bytes=0.0) -> bool:
    """Whether the weights and the KV cache fit in the device's memory (ch. 1).

    Tests P·b + B_KV ≤ memory, the capacity condition the roofline times assume
    (activations, the engine and the runtime's own allocations are neglected, so this is
    necessary, not sufficient). Raises ValueError when ``hardware.memory`` is not stated.
    """
    hw = _hardware(hardware)
    if hw.memory is None:
        raise ValueError(f"hardware must state its memory to test capacity; "
                         f"{hw.name} has memory=None")
    return bool(bytes_moved(n_params, bytes_per_param, kv_bytes) <= hw.memory)


def bytes_moved(n_params, bytes_per_param: float = 2.0, kv_bytes=0.0):
    """Bytes read from memory by one forward pass: parameters × bytes per parameter + KV cache.

    Chapter 1, eq. ch1-bytes. Activations are neglected (tiny at small batch).
    """
    P = as_positive(n_params, "n_params", allow_inf=False)
    b = as_positive(bytes_per_param, "bytes_per_param", allow_inf=False)
    kv = np.asarray(kv_bytes, dtype=float)
    if np.isnan(kv).any() or (kv < 0).any() or np.isinf(kv).any():
        raise ValueError(f"kv_bytes must be a finite number ≥ 0; got {kv_bytes!r}")
    return scalar_or_array(P * b + kv)


def _nonneg(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or np.isinf(a).any():
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}")
    return a


def attention_flops(context, layers: int, q_heads: int, head_dim: int):
    """FLOPs of attention for one new token over ``context`` cached tokens (ch. 1, eq. ch1-attn).

    4 × layers × q_heads × head_dim × context: per layer and query head, the scores q·kᵀ
    against every cached key (2 × head_dim × context) and the weighted sum of the values
    (the same again). Grouped-query attention shares keys and values between query heads,
    which saves bytes (:func:`kv_cache_bytes`), not FLOPs. The few new tokens' attention to
    each other is neglected (n ≪ context); so is the softmax.
    """
    ctx = as_count(context, "context")
    L = as_count(layers, "layers", minimum=1)
    h = as_count(q_heads, "q_heads", minimum=1)
    d = as_count(head_dim, "head_dim", minimum=1)
    return scalar_or_array(4.0 * L * h * d * ctx.astype(float))


def forward_flops(n_params, n_tokens, attn_flops=0.0):
    """Floating-point operations of one forward pass over n tokens: (2 × parameters + A) × n.

    Chapter 1, eq. ch1-flops: one multiply and one add per weight per token, plus ``A =
    attn_flops`` per token for attention over the context (:func:`attention_flops`; 0, the
    default, neglects it, which is fair at short context).
    """
    P = as_positive(n_params, "n_params", allow_inf=False)
    A = _nonneg(attn_flops, "attn_flops")
    return scalar_or_array((2.0 * P + A) * _tokens(n_tokens))


def memory_time(n_params, hardware: Hardware = H100_SXM, bytes_per_param: float = 2.0,
                kv_bytes=0.0):
    """Seconds to stream the weights (and KV cache) once: bytes_moved / bandwidth."""
    hw = _hardware(hardware)
    return scalar_or_array(np.asarray(bytes_moved(n_params, bytes_per_param, kv_bytes))
                           / hw.bandwidth)


def compute_time(n_tokens, n_params, hardware: Hardware = H100_SXM, attn_flops=0.0):
    """Seconds of arithmetic at peak: (2 × parameters + attn_flops) × n / peak_flops."""
    hw = _hardware(hardware)
    return scalar_or_array(np.asarray(forward_flops(n_params, n_tokens, attn_flops))
                           / hw.peak_flops)


def forward_time(n_tokens, n_params, hardware: Hardware = H100_SXM,
                 bytes_per_param: float = 2.0, kv_bytes=0.0, attn_flops=0.0):
    """Roofline time of one forward pass scoring ``n_tokens`` tokens (ch. 1, eq. ch1-roofline).

    T(n) = max(bytes_moved / bandwidth, (2 × parameters + attn_flops) × n / peak_flops).

    Parameters
    ----------
    n_tokens : int or array of int ≥ 1
        Tokens scored in the pass (k + 1 when verifying k drafted tokens).
    n_params : float > 0
        Number of model parameters.
    hardware : Hardware
        Bandwidth and peak (illustrative datasheet numbers by default).
    bytes_per_param : float > 0
        2 for bf16/fp16 weights, 1 for int8, 0.5 for 4-bit.
    kv_bytes : float ≥ 0
        Bytes of KV cache read in the pass (see :func:`kv_cache_bytes`).
    attn_flops : float ≥ 0
        Attention FLOPs per scored token over the context (see :func:`attention_flops`).
    """
    mem = np.asarray(memory_time(n_params, hardware, bytes_per_param, kv_bytes))
    comp = np.asarray(compute_time(n_tokens, n_params, hardware, attn_flops))
    return scalar_or_array(np.maximum(mem, comp))


def arithmetic_intensity(n_tokens, bytes_per_param: float = 2.0):
    """FLOPs per byte of weights read when scoring n tokens: 2n / bytes_per_param (ch. 1).

    The parameter count cancels; the KV cache is neglected.
    """
    b = as_positive(bytes_per_param, "bytes_per_param", allow_inf=False)
    return scalar_or_array(2.0 * _tokens(n_tokens) / b)


def ridge_point(hardware: Hardware = H100_SXM, bytes_per_param: float = 2.0,
                n_params=None, kv_bytes=0.0, attn_flops=0.0) -> float:
    """Tokens per pass at which compute catches up with memory (ch. 1, eqs. ch1-ridge, ch1-ridge-kv).

    Without context: n* = peak_flops × bytes_per_param / (2 × bandwidth), whatever the
    model size. With a KV cache of ``kv_bytes`` and ``attn_flops`` attention FLOPs per token
    (both need ``n_params``): n* = peak × (P b + B_KV) / (bandwidth × (2P + A)); the cache
    moves the ridge right, attention moves it left. Below n*, T(n) = T(1). A real number;
    the largest free batch of tokens is floor(n*).
    """
    hw = _hardware(hardware)
    b = float(as_positive(bytes_per_param, "bytes_per_param", allow_inf=False))
    kv = _nonneg(kv_bytes, "kv_bytes")
    A = _nonneg(attn_flops, "attn_flops")
    if n_params is None:
        if (kv != 0).any() or (A != 0).any():
            raise ValueError("n_params is needed when kv_bytes or attn_flops is given (the "
                             "parameter count no longer cancels)")
        return hw.peak_flops * b / (2.0 * hw.bandwidth)
    P = as_positive(n_params, "n_params", allow_inf=False)
    return scalar_or_array(hw.peak_flops * (P * b + kv) / (hw.bandwidth * (2.0 * P + A)))


def verify_cost(k, n_params, hardware: Hardware = H100_SXM, bytes_per_param: float = 2.0,
                kv_bytes=0.0, attn_flops=0.0):
    """Cost of scoring k + 1 tokens in one pass, in units of one ordinary step: T(k+1)/T(1).

    Equal to 1 while k + 1 ≤ n* (the one-step-cost assumption of chapter 1).
    """
    kk = as_count(k, "k")
    t1 = np.asarray(forward_time(1, n_params, hardware, bytes_per_param, kv_bytes,
                                 attn_flops))
    tk = np.asarray(forward_time(kk + 1, n_params, hardware, bytes_per_param, kv_bytes,
                                 attn_flops))
    return scalar_or_array(tk / t1)


def speed_ratio(target_params, draft_params, hardware: Hardware = H100_SXM,
                bytes_per_param: float = 2.0, draft_bytes_per_param: float | None = None):
    """c = target time per token ÷ draft time per token under the cost model (ch. 1).

    With both models memory-bound and stored alike this is the parameter ratio.
    """
    db = bytes_per_param if draft_bytes_per_param is None else draft_bytes_per_param
    tt = np.asarray(forward_time(1, target_params, hardware, bytes_per_param))
    td = np.asarray(forward_time(1, draft_params, hardware, db))
    return scalar_or_array(tt / td)


def iteration_time(k, target_params, draft_params, hardware: Hardware = H100_SXM,
                   bytes_per_param: float = 2.0, kv_bytes=0.0):
    """Seconds of one draft-then-verify iteration: k draft steps plus one target pass of k+1.

    k · T_draft(1) + T_target(k + 1) (ch. 1, eq. ch1-iteration). KV cache on the target only.
    """
    kk = as_count(k, "k")
    td = np.asarray(forward_time(1, draft_params, hardware, bytes_per_param))
    tt = np.asarray(forward_time(kk + 1, target_params, hardware, bytes_per_param, kv_bytes))
    return scalar_or_array(kk * td + tt)


def modelled_speedup(alpha, k, target_params, draft_params, hardware: Hardware = H100_SXM,
                     bytes_per_param: float = 2.0, kv_bytes=0.0):
    """Speedup over plain decoding predicted by the cost model (ch. 1; ch. 5 for the algebra).

    E[N] · T_target(1) / (k · T_draft(1) + T_target(k + 1)) with E[N] = (1 − α^(k+1))/(1 − α).
    When T_target(k+1) = T_target(1) this is E[N] / (1 + k/c), the formula of chapter 5.
    """
    from .speedup import expected_tokens

    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    en = np.asarray(expected_tokens(a, kk))
    t1 = np.asarray(forward_time(1, target_params, hardware, bytes_per_param, kv_bytes))
    it = np.asarray(iteration_time(kk, target_params, draft_params, hardware, bytes_per_param,
                                   kv_bytes))
    return scalar_or_array(en * t1 / it)


def kv_cache_bytes(context, layers: int, kv_heads: int, head_dim: int,
                   bytes_per_value: float = 2.0, batch: int = 1):
    """Bytes of keys and values cached for ``context`` tokens: 2 × layers × kv_heads × head_dim × context.

    Times bytes per value and batch size. The factor 2 counts keys and values.
    """
    ctx = as_count(context, "context")
    L = as_count(layers, "layers", minimum=1)
    h = as_count(kv_heads, "kv_heads", minimum=1)
    d = as_count(head_dim, "head_dim", minimum=1)
    b = as_positive(bytes_per_value, "bytes_per_value", allow_inf=False)
    bs = as_count(batch, "batch", minimum=1)
    return scalar_or_array(2.0 * L * h * d * ctx.astype(float) * b * bs)


def c_from_leviathan(c_leviathan):
    """Our c from Leviathan et al.'s cost coefficient (draft time ÷ target time): 1 / c_L.

    Leviathan et al.'s c = 0 (a free draft) is our c = inf.
    """
    cl = np.asarray(c_leviathan, dtype=float)
    if np.isnan(cl).any() or (cl < 0).any() or np.isinf(cl).any():
        raise ValueError(f"c_leviathan must be a finite number ≥ 0 (draft time ÷ target "
                         f"time); got {c_leviathan!r}")
    with np.errstate(divide="ignore"):
        return scalar_or_array(np.where(cl > 0, 1.0 / np.where(cl > 0, cl, 1.0), np.inf))


def leviathan_c_from_c(c):
    """Leviathan et al.'s cost coefficient from our c: 1 / c (our c = inf gives 0)."""
    cc = as_positive(c, "c")
    return scalar_or_array(1.0 / cc)


def c_from_times(target_time, draft_time):
    """Our c from measured times per token: target_time / draft_time."""
    t = as_positive(target_time, "target_time", allow_inf=False)
    d = as_positive(draft_time, "draft_time", allow_inf=False)
    return scalar_or_array(t / d)
