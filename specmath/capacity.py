"""The largest batch that fits in memory, with and without the draft (chapter 11).

A serving engine keeps every model's weights and every request's key–value cache in the
accelerator's memory. Speculation adds the draft's weights and the draft's own cache, so
less memory is left for the target's cache and fewer requests fit (eq. ch11-bmax). numpy
only; the model shapes are chapter 11's :class:`specmath.batching.ModelShape`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from . import costmodel as cm
from ._validate import as_count, as_positive, scalar_or_array
from .batching import ModelShape

__all__ = ["params_from_config", "shape_from_config", "kv_bytes_per_request", "max_batch"]


def params_from_config(cfg: dict) -> float:
    """Parameters of a Llama/Qwen2-style decoder from its ``config.json`` fields (ch. 11).

    Per layer: the query and output projections (h × h each), key and value projections
    (h × n_kv d each, d = h / n_q), biases on q, k, v when ``model_type`` is ``qwen2``,
    the gated MLP (3 h × intermediate) and two norms (h each); plus the embedding
    (vocab × h), the output matrix unless ``tie_word_embeddings`` and the final norm.
    """
    try:
        h = int(cfg["hidden_size"])
        inter = int(cfg["intermediate_size"])
        layers = int(cfg["num_hidden_layers"])
        nq = int(cfg["num_attention_heads"])
        nkv = int(cfg["num_key_value_heads"])
        vocab = int(cfg["vocab_size"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"cfg must hold the decoder's integer shape fields; {err}") from err
    if min(h, inter, layers, nq, nkv, vocab) < 1 or h % nq:
        raise ValueError("cfg's sizes must be ≥ 1 and hidden_size a multiple of "
                         "num_attention_heads")
    d = h // nq
    kv = nkv * d
    bias = (h + 2 * kv) if cfg.get("model_type") == "qwen2" else 0
    per_layer = 2 * h * h + 2 * h * kv + bias + 3 * h * inter + 2 * h
    heads = vocab * h * (1 if cfg.get("tie_word_embeddings", False) else 2)
    return float(layers * per_layer + heads + h)


def shape_from_config(cfg: dict) -> ModelShape:
    """The :class:`~specmath.batching.ModelShape` of a decoder's ``config.json`` (ch. 11)."""
    h, nq = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return ModelShape(params_from_config(cfg), int(cfg["num_hidden_layers"]), nq,
                      int(cfg["num_key_value_heads"]), h // nq)


def kv_bytes_per_request(model: ModelShape, context: ArrayLike,
                         bytes_per_value: float = 2.0) -> float | np.ndarray:
    """Bytes of key–value cache one request of ``context`` tokens holds (ch. 1's formula)."""
    if not isinstance(model, ModelShape):
        raise ValueError("model must be a specmath.batching.ModelShape")
    ctx = as_count(context, "context", minimum=1)
    if model.kv_window is not None:
        ctx = np.minimum(ctx, model.kv_window)
    return scalar_or_array(cm.kv_cache_bytes(ctx, model.layers, model.kv_heads,
                                             model.head_dim, bytes_per_value, 1))


def max_batch(memory_bytes: ArrayLike, context: ArrayLike, target: ModelShape,
              draft: ModelShape | None = None, bytes_per_param: float = 2.0,
              bytes_per_value: float = 2.0) -> int | np.ndarray:
    """Largest batch whose weights and caches fit in memory (ch. 11, eq. ch11-bmax).

    B_max = ⌊(Mem − b Σ P) / Σ KV(L_ctx)⌋, the sums over the target and, when given, the
    draft: each model stores its weights once and a cache for every request. Activations,
    the engine's reserve and fragmentation are left out, so this is an upper bound.
    Broadcasts over memory and context.

    Parameters
    ----------
    memory_bytes : array_like
        Mem, the accelerator's memory in bytes.
    context : array_like
        L_ctx, tokens of context per request (≥ 1).
    target, draft : ModelShape
        The models; ``draft=None`` is plain decoding.
    bytes_per_param, bytes_per_value : float
        Bytes per stored weight and per cached key or value.

    Returns
    -------
    int or ndarray
        B_max.

    Raises
    ------
    ValueError
        If the weights alone do not fit, or an argument has the wrong type or sign.
    """
    mem = as_positive(memory_bytes, "memory_bytes", allow_inf=False)
    models = [target] if draft is None else [target, draft]
    for m_, name in zip(models, ("target", "draft")[:len(models)], strict=True):
        if not isinstance(m_, ModelShape):
            raise ValueError(f"{name} must be a specmath.batching.ModelShape")
    weights = sum(m_.params for m_ in models) * float(as_positive(bytes_per_param,
                                                                  "bytes_per_param"))
    if (mem <= weights).any():
        raise ValueError("memory_bytes must exceed the weights' bytes (the models must fit)")
    kv = sum(np.asarray(kv_bytes_per_request(m_, context, bytes_per_value), float)
             for m_ in models)
    return scalar_or_array(np.floor((mem - weights) / kv).astype(np.int64))
