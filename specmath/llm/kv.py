"""Forward passes with a KV cache, the same on transformers 4.57 to 5.x (caches, rollback, devices).

Chapter 7's loops (eager and on the device) and the benchmarks call models only through it.
"""

from __future__ import annotations

import functools
import inspect

import torch


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _new_cache(model):
    from transformers import DynamicCache
    return DynamicCache(config=model.config)


@functools.cache
def _cache_kwarg_of(forward_owner: type) -> str:
    params = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_kwarg(model) -> str:
    """The keyword a model's forward takes its KV cache under: ``past_key_values`` up to
    transformers 5.2x, ``cache`` after the rename. Every forward here goes through it."""
    return _cache_kwarg_of(type(model))


def cached_forward(model, cache, *, forward=None, **inputs):
    """One forward pass of ``model`` reading and extending the KV cache ``cache``.

    Works across the declared range ``transformers>=4.57,<6``: the cache goes in under
    :func:`_cache_kwarg` and comes back from ``out.cache`` or ``out.past_key_values``.
    ``forward`` replaces ``model.forward`` (a compiled version of it, say). Returns
    ``(output, cache)``: the model's output object and the cache it returned.
    """
    fwd = model if forward is None else forward
    out = fwd(**inputs, **{_cache_kwarg(model): cache}, use_cache=True)
    new = getattr(out, "cache", None)
    if new is None:
        new = getattr(out, "past_key_values", None)
    return out, (cache if new is None else new)


def _truncate(cache, n_keep: int) -> None:
    """Roll a cache back so it holds the first ``n_keep`` tokens (negative crop drops)."""
    extra = cache.get_seq_length() - n_keep
    if extra > 0:
        cache.crop(-extra)


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Next-token distributions after temperature, in float64 (temperature > 0)."""
    return torch.softmax(logits.double() / temperature, dim=-1)


def _probs32(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The same in float32 (the device path; see ``speculative_generate``'s ``path``)."""
    return torch.softmax(logits.float() / temperature, dim=-1)
