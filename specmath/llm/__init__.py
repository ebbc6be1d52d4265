"""Speculative decoding with real Hugging Face causal language models (``pip install specmath[llm]``).

Chapter 7 (and the benchmarks of chapters 7–11); the only part of specmath that imports torch.

One module per job; each imports only modules listed above it (no cycles)::

    result   GenerationResult: what one generation did, and its statistics
    kv       forward passes with a KV cache on transformers 4.57 to 5.x, rollback, devices
    verify   the verification rules (token-wise, block) and VERIFIERS, where rules register
    fast     the device paths: decisions on the accelerator, static cache, CUDA graphs
    loop     speculative_generate and autoregressive_generate (the eager reference loop)
    models   load_pair: the offline Qwen2.5-Coder pair, hub pairs, any two models

Conventions as in the course: ``p`` is the **target**'s next-token distribution, ``q`` the
**draft**'s, both *after* temperature; ``k`` draft tokens per iteration.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401  (import check: the error below names the extra)
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "specmath.llm needs torch and transformers (plus gguf and accelerate for the offline "
        "pair): pip install 'specmath[llm]'"
    ) from _err

from . import fast, kv, loop, models, result, verify  # noqa: F401
from .fast import PATHS, _OnDevice  # noqa: F401
from .kv import _device_of, _new_cache, _truncate, cached_forward  # noqa: F401
from .loop import _Timed, autoregressive_generate, speculative_generate  # noqa: F401
from .models import (  # noqa: F401
    HUB_PAIR,
    OFFLINE_PAIR,
    PAIRS,
    assemble_gguf,
    cache_dir,
    load_pair,
    pick_device,
)
from .result import GenerationResult
from .verify import VERIFIERS, _verify_block, _verify_greedy, _verify_tokenwise, register  # noqa: F401

__all__ = [
    "GenerationResult",
    "speculative_generate",
    "autoregressive_generate",
    "load_pair",
    "pick_device",
    "cached_forward",
    "register",
    "OFFLINE_PAIR",
    "HUB_PAIR",
    "PAIRS",
    "VERIFIERS",
    "PATHS",
]
