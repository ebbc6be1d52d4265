"""Speculation at batch size B: chapter 1's roofline for a batch, break-even, goodput (ch. 11).

One decoding step of a batch of B requests runs the target once over B new tokens; one
speculative iteration runs the draft k times over B tokens and the target once over
B (k + 1) tokens. Under chapter 1's roofline (``specmath.costmodel.forward_time``) a pass
over n tokens costs max(bytes / W, FLOPs / F): the weights are read once per pass whatever
n is, the KV cache of every request is read once per pass, and arithmetic grows with n.
So speculation rides free only while B (k + 1) stays below the ridge point. numpy only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import costmodel as cm
from ._validate import (
    as_count,
    as_existing_file,
    as_generator,
    as_int,
    as_positive,
    as_probability,
    scalar_or_array,
)
from .notebook import load_result
from .speedup import _expected_tokens

__all__ = [
    "ModelShape",
    "batch_pass_time",
    "batch_speedup",
    "break_even_batch",
    "break_even_batch_closed_form",
    "best_k_for_batch",
    "batch_goodput",
    "goodput_policies",
    "load_batch_cost",
]


@dataclass(frozen=True)
class ModelShape:
    """What the roofline needs of a model: parameters and attention shape (ch. 1's KV sizes).

    ``kv_window`` caps the context whose keys and values the model reads (None = all of it;
    a draft with a StreamingLLM-style window, as in MagicDec, reads at most that many).
    """

    params: float
    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    kv_window: int | None = None

    def __post_init__(self):
        as_positive(self.params, "params", allow_inf=False)
        for name in ("layers", "q_heads", "kv_heads", "head_dim"):
            as_int(getattr(self, name), name, minimum=1)
        if self.kv_window is not None:
            as_int(self.kv_window, "kv_window", minimum=1)

    def _ctx(self, context):
        ctx = as_count(context, "context")
        return ctx if self.kv_window is None else np.minimum(ctx, self.kv_window)

    def kv_bytes(self, context, batch, bytes_per_value: float = 2.0):
        """Bytes of KV cache the batch reads in one pass (chapter 1's kv_cache_bytes)."""
        return cm.kv_cache_bytes(self._ctx(context), self.layers, self.kv_heads,
                                 self.head_dim, bytes_per_value, 1) * np.asarray(batch, float)

    def attn_flops(self, context):
        """Attention FLOPs per scored token over the context (chapter 1's attention_flops)."""
        return cm.attention_flops(self._ctx(context), self.layers, self.q_heads,
                                  self.head_dim)


def _shape(m, name):
    if not isinstance(m, ModelShape):
        raise ValueError(f"{name} must be a specmath.batching.ModelShape; got "
                         f"{type(m).__name__}")
    return m


def batch_pass_time(model: ModelShape, B, m, hardware=cm.H100_SXM, context=0,
                    bytes_per_param: float = 2.0):
    """Seconds of one pass scoring m new tokens for each of B requests (ch. 11, eq. ch11-batch-pass).

    T = max((P b + B · KV(context)) / W, B m (2P + A(context)) / F), chapter 1's
    ``forward_time`` with n = B m tokens. Broadcasts over B, m and context.
    """
    mod = _shape(model, "model")
    BB = as_count(B, "B", minimum=1)
    mm = as_count(m, "m", minimum=1)
    kv = mod.kv_bytes(context, BB)
    A = mod.attn_flops(context)
    return cm.forward_time(BB * mm, mod.params, hardware, bytes_per_param, kv, A)


def batch_speedup(alpha, k, B, target: ModelShape, draft: ModelShape, hardware=cm.H100_SXM,
                  context=0, bytes_per_param: float = 2.0):
    """Speedup of speculation at batch B over plain decoding at batch B (ch. 11, eq. ch11-SB).

    S_B = E[N] T_t(B, 1) / (k T_d(B, 1) + T_t(B, k + 1)): every request of the batch gets
    E[N] tokens per iteration (the same α for all). Broadcasts over α, k, B and context.
    """
    _shape(target, "target")
    _shape(draft, "draft")
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    t1 = np.asarray(batch_pass_time(target, B, 1, hardware, context, bytes_per_param))
    tv = np.asarray(batch_pass_time(target, B, kk + 1, hardware, context, bytes_per_param))
    td = np.asarray(batch_pass_time(draft, B, 1, hardware, context, bytes_per_param))
    return scalar_or_array(_expected_tokens(a, kk) * t1 / (kk * td + tv))


def break_even_batch(alpha, k, target: ModelShape, draft: ModelShape, hardware=cm.H100_SXM,
                     context=0, bytes_per_param: float = 2.0, B_max: int = 1 << 16):
    """Smallest batch size at which speculation with draft length k is slower than plain.

    Searched over B = 1 … B_max; returns ``inf`` when speculation still wins at B_max.
    """
    kk = as_int(k, "k", minimum=1)
    Bs = np.arange(1, as_int(B_max, "B_max", minimum=1) + 1)
    s = np.asarray(batch_speedup(alpha, kk, Bs, target, draft, hardware, context,
                                 bytes_per_param))
    lose = np.flatnonzero(s < 1.0)
    return float(Bs[lose[0]]) if lose.size else float("inf")


def break_even_batch_closed_form(alpha, k, c, n_star):
    """B* = n* (E[N] − k/c) / (k + 1): the break-even batch without context (ch. 11, thm ch11-thm-breakeven).

    Valid when the plain and draft passes are memory-bound at B* (B* ≤ n*) and the
    verification pass is compute-bound (B*(k + 1) ≥ n*), i.e. when E[N] − k/c ≥ 1.
    Speculation loses for every B > B*. Broadcasts.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k", minimum=1)
    cc = as_positive(c, "c")
    ns = as_positive(n_star, "n_star", allow_inf=False)
    return scalar_or_array(ns * (_expected_tokens(a, kk) - kk / cc) / (kk + 1.0))


def best_k_for_batch(alpha, B, target: ModelShape, draft: ModelShape, hardware=cm.H100_SXM,
                     context=0, bytes_per_param: float = 2.0, k_max: int = 16):
    """The k in 0 … k_max maximising :func:`batch_speedup` at each B (0: do not speculate)."""
    BB = as_count(B, "B", minimum=1)
    ks = np.arange(as_int(k_max, "k_max", minimum=0) + 1)
    s = np.asarray(batch_speedup(alpha, ks, BB[..., None], target, draft, hardware,
                                 context, bytes_per_param))
    return scalar_or_array(np.argmax(s, axis=-1).astype(np.int64))


def batch_goodput(alphas, k, target: ModelShape, draft: ModelShape, hardware=cm.H100_SXM,
                  context=0, bytes_per_param: float = 2.0):
    """Expected tokens per second of a batch whose requests have acceptances α_i (ch. 11).

    Σ_i E[N](α_i, k) / (k T_d(B, 1) + T_t(B, k + 1)) with B = len(alphas); k = 0 is plain
    decoding (a goodput in the spirit of SmartSpec, with one k per batch). ``k`` may be an array.
    """
    _shape(target, "target")
    _shape(draft, "draft")
    a = as_probability(alphas, "alphas")
    if a.ndim != 1 or a.size == 0:
        raise ValueError("alphas must be a non-empty 1-D array (one α per request)")
    kk = as_count(k, "k")
    B = a.size
    tok = _expected_tokens(a[:, None], np.atleast_1d(kk)[None, :]).sum(0)
    t = (np.atleast_1d(kk) * np.asarray(batch_pass_time(draft, B, 1, hardware, context,
                                                        bytes_per_param))
         + np.asarray(batch_pass_time(target, B, np.atleast_1d(kk) + 1, hardware, context,
                                      bytes_per_param)))
    return scalar_or_array((tok / t).reshape(np.shape(kk)))


def goodput_policies(alpha_batches, target: ModelShape, draft: ModelShape, rng,
                     hardware=cm.H100_SXM, context=0, k_max: int = 8,
                     bytes_per_param: float = 2.0) -> dict:
    """Simulated goodput of three ways to pick k over a run of batch steps (ch. 11).

    ``alpha_batches``: a sequence of 1-D arrays, the acceptances α_i of the requests in the
    batch at each step (the batch size may change from step to step). Each step draws every
    request's accepted run A_i ~ Geometric(α_i), P(A_i ≥ a) = α_i^a (common random numbers
    for all policies); with draft length k the step emits Σ_i min(A_i, k) + 1 tokens in
    k T_d(B) + T_t(B(k + 1)) seconds. Policies: ``fixed`` — the one k best over the whole
    run in hindsight; ``per_batch`` — each step the k maximising expected goodput given the
    α_i (our per-batch form of SmartSpec's idea, k = 0 allowed); ``oracle`` — each step the k maximising that
    step's realised goodput. Each step stands for an equal slice of wall time spent at its
    batch composition (a load level), so a policy's goodput is the mean over steps of
    tokens ÷ seconds of the step. Returns that for each policy and for plain decoding, and
    the k's chosen.
    """
    _shape(target, "target")
    _shape(draft, "draft")
    if isinstance(alpha_batches, np.ndarray) and alpha_batches.ndim == 2:
        alpha_batches = list(alpha_batches)
    if not hasattr(alpha_batches, "__len__") or len(alpha_batches) == 0:
        raise ValueError("alpha_batches must be a non-empty sequence of 1-D arrays of α")
    rng = as_generator(rng)
    ks = np.arange(as_int(k_max, "k_max", minimum=0) + 1)
    tok, exp_tok, T = [], [], []
    for a_ in alpha_batches:
        a = as_probability(a_, "alpha_batches")
        if a.ndim != 1 or a.size == 0:
            raise ValueError("alpha_batches must hold non-empty 1-D arrays (one α per "
                             "request)")
        B = a.size
        T.append(ks * np.asarray(batch_pass_time(draft, B, 1, hardware, context,
                                                 bytes_per_param))
                 + np.asarray(batch_pass_time(target, B, ks + 1, hardware, context,
                                              bytes_per_param)))
        u = rng.random(B)
        with np.errstate(divide="ignore"):
            A = np.where(a < 1, np.floor(np.log(u) / np.log(np.where(a < 1, a, 0.5))), 1e9)
        tok.append((np.minimum(A[:, None], ks) + 1).sum(0))
        exp_tok.append(_expected_tokens(a[:, None], ks).sum(0))
    tok, exp_tok, T = np.array(tok), np.array(exp_tok), np.array(T)   # (steps, k)
    steps = len(T)
    r = np.arange(steps)
    k_fixed = int(np.argmax((tok / T).mean(0)))
    k_batch = np.argmax(exp_tok / T, axis=1)
    k_orac = np.argmax(tok / T, axis=1)

    def rate(kc):
        return float((tok[r, kc] / T[r, kc]).mean())
    return {"plain": rate(np.zeros(steps, int)),
            "fixed": rate(np.full(steps, k_fixed)), "k_fixed": k_fixed,
            "per_batch": rate(k_batch), "k_per_batch": k_batch,
            "oracle": rate(k_orac), "k_oracle": k_orac}


def load_batch_cost(path=None) -> dict:
    """The CPU measurements of ``benchmarks/batch_cost.py`` (ch. 11).

    Default: the recorded ``batch_cpu.json`` shipped with the package
    (:func:`specmath.notebook.load_result`, read locally; ``FileNotFoundError`` naming the
    file when it is absent).
    """
    p = as_existing_file(path)
    R = load_result("batch_cpu.json") if p is None else json.loads(p.read_text())
    if not isinstance(R, dict) or "measurements" not in R or "derived" not in R:
        raise ValueError("path must hold a batch_cost result (with 'measurements' and "
                         "'derived')")
    return R
