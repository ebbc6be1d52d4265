"""What the benchmark scripts share: the prompts, provenance, common arguments, writing results.

Every script in benchmarks/ (chapters 7–11) imports it and keeps only what it measures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
import transformers

import specmath as sm
from specmath.notebook import RESULTS_DIR

ROOT = Path(__file__).resolve().parents[1]
#: where recorded results go (and the chapters read them): specmath's package data
RESULTS = RESULTS_DIR
TARGET, DRAFT = "Qwen2.5-Coder-1.5B-Instruct", "Qwen2.5-Coder-0.5B-Instruct"

# Four prompts per task; code prompts are raw completions (no chat template), the others
# go through the chat template. Long answers are asked for, so that ≥ 96 tokens is inside
# the natural answer.
PROMPTS = {
    "code": [
        {"raw": 'import heapq\n\n\ndef dijkstra(graph, source):\n    """Shortest distances '
                'from source in a graph given as {node: [(neighbour, weight)]}."""\n    '
                'dist = {source: 0}\n    queue = [(0, source)]\n    while queue:\n'},
        {"raw": 'class LRUCache:\n    """A least-recently-used cache with a fixed capacity."""'
                '\n\n    def __init__(self, capacity: int):\n'},
        {"raw": 'import csv\nfrom collections import defaultdict\n\n\ndef total_by_category'
                '(path):\n    """Read a CSV file with columns category, amount and return '
                'the total amount per category."""\n'},
        {"raw": 'def merge_sort(items: list[int]) -> list[int]:\n    """Sort a list of '
                'integers with merge sort and return a new list."""\n'},
    ],
    "chat": [
        {"user": "Explain to a new programmer what a hash table is and why lookups in it are "
                 "fast on average. Answer in plain prose, in about three paragraphs."},
        {"user": "What is the difference between a process and a thread? Explain it in detail "
                 "for a student, with an example."},
        {"user": "How does a garbage collector decide which objects it can free? Describe "
                 "mark-and-sweep and reference counting in a few paragraphs."},
        {"user": "Explain what recursion is, when it is a good idea, and when it is a bad "
                 "idea. Give a detailed answer in prose."},
    ],
    "story": [
        {"user": "Write a short story about a lighthouse keeper who finds a message in a "
                 "bottle."},
        {"user": "Write a short story about a robot that learns to bake bread in a small "
                 "village."},
        {"user": "Write a short story about two friends who get lost in a forest at night."},
        {"user": "Write a short story about an old clockmaker and a clock that runs "
                 "backwards."},
    ],
}


def split_of(index: int) -> str:
    """Prompts 0, 2 of each task are "train", 1, 3 "test" (split by prompt)."""
    return "train" if index % 2 == 0 else "test"


def encode(tok, spec: dict) -> list[int]:
    """Token ids of one prompt: raw text, or a user message through the chat template."""
    if "raw" in spec:
        return tok(spec["raw"]).input_ids
    msgs = [{"role": "user", "content": spec["user"]}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    return tok(text).input_ids


def prompt_ids(tok, per_task: int = 4) -> dict[str, tuple[str, list[int]]]:
    """``{"<task>-<i>": (task, token ids)}`` for the first ``per_task`` prompts per task."""
    return {f"{task}-{i}": (task, encode(tok, spec))
            for task, specs in PROMPTS.items() for i, spec in enumerate(specs[:per_task])}


def eos_ids(tok) -> list[int]:
    """Every id that ends a Qwen answer (banned when the target writes a text)."""
    return sorted({t for t in (tok.eos_token_id, tok.pad_token_id,
                               tok.convert_tokens_to_ids("<|im_end|>"),
                               tok.convert_tokens_to_ids("<|endoftext|>"))
                   if isinstance(t, int) and t >= 0})


def device_name(device=None) -> str:
    """The GPU's name, or the CPU's model name from /proc/cpuinfo."""
    device = torch.device(device or "cpu")
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance(args, *, device="cpu", dtype=None, **fields) -> dict:
    """Date, machine, versions, the pair and the settings of a run, plus ``fields``."""
    device = torch.device(device)
    d = {"date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
         "device": str(device), "device_name": device_name(device),
         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
         "torch": torch.__version__, "transformers": transformers.__version__,
         "numpy": np.__version__, "python": platform.python_version(),
         "platform": platform.platform(), "specmath": sm.__version__,
         "target": TARGET, "draft": DRAFT,
         "loadavg_start": list(os.getloadavg()), "settings": dict(vars(args))}
    if dtype is not None:
        d["dtype"] = str(dtype).replace("torch.", "")
    d.update(fields)
    return d


def parser(doc: str, *, quick: str = "tiny sizes, to test the script") -> argparse.ArgumentParser:
    """The arguments every measuring script takes: --threads, --seed, --quick, --out."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: CPU time "
                    "then counts all the work)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--out", default=None, help=f"JSON to write (default: in {RESULTS})")
    return ap


def start(args):
    """Set the thread count; return a ``log(*parts)`` that prefixes the elapsed time."""
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()

    def log(*parts):
        print(f"[{time.perf_counter() - t0:7.1f}s]", *parts, flush=True)
    log.t0 = t0
    return log


def _jsonable(o):
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, np.generic):
        return o.item()
    return float(o)


def write_json(path: Path, record: dict, *, compact: bool = False) -> Path:
    """Write ``record`` atomically (a run cut short never leaves half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    text = (json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=_jsonable)
            + "\n" if compact else json.dumps(record, indent=1, default=_jsonable))
    tmp.write_text(text)
    tmp.replace(path)
    return path


def write_result(record: dict, out: str | Path | None, name: str, *,
                 compact: bool = False) -> Path:
    """Write a run's record to ``out``, or to ``RESULTS / name``; say where."""
    path = write_json(Path(out) if out else RESULTS / name, record, compact=compact)
    print(f"wrote {path}")
    return path
