"""Test helpers: tiny random Qwen2 models built in-process (no downloads), one torch thread,
and loading a benchmark script as a module. Used by the tests of chapters 7–11's code."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tiny_qwen(seed: int, V: int = 8, *, initializer_range: float | None = 0.25,
              double: bool = True):
    """A 2-layer Qwen2 causal LM with vocabulary ``V``, initialised from ``seed``.

    Two seeds give two models that disagree often (α well below 1 with the wide default
    initialisation), so every output law of a few tokens can be enumerated exactly.
    ``initializer_range=None`` keeps transformers' default; ``double=False`` keeps float32.
    """
    import torch
    import transformers

    torch.manual_seed(seed)
    init = {} if initializer_range is None else {"initializer_range": initializer_range}
    cfg = transformers.Qwen2Config(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        tie_word_embeddings=False, **init)
    model = transformers.Qwen2ForCausalLM(cfg)
    return (model.double() if double else model).eval()


@contextlib.contextmanager
def torch_threads(n: int = 1):
    """Run with n torch threads (tiny models are dominated by thread-pool overhead on a
    busy 2-core CI box; the benchmarks also set their own), then restore the count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` imported as a module (the scripts are not a package)."""
    bench = str(ROOT / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: two tiny prompts {id: (task, token ids)}, as the benchmarks' quick modes take them
TINY_PROMPTS = {"a-0": ("a", [1, 2, 3]), "b-0": ("b", [5, 1])}


def run_quick(name: str, out, prompts=TINY_PROMPTS):
    """``benchmarks/<name>.py --quick --out <out>`` on tiny_qwen(0) (target) and
    tiny_qwen(1) (draft) with ``prompts``, one torch thread; returns its record."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    with torch_threads():
        return load_benchmark(name).main(["--quick", "--out", str(out)],
                                         models=(tiny_qwen(0), tiny_qwen(1), prompts))


def host_reads_counter():
    """A torch function mode that counts tensor → host reads (.item(), .tolist(), bool(),
    int(), float(), .numpy()): each one is a device synchronisation on a GPU. Used as
    ``with host_reads_counter() as reads: ...; reads.n``."""
    import torch

    class HostReads(torch.overrides.TorchFunctionMode):
        NAMES = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__",
                 "numpy"}

        def __init__(self):
            super().__init__()
            self.n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.n += getattr(func, "__name__", "") in self.NAMES
            return func(*args, **(kwargs or {}))

    return HostReads()
