"""Cost of verifying B sequences in one target pass, measured on the CPU (chapter 11).

Usage (from the repository root)::

    .venv/bin/python benchmarks/batch_cost.py            # CPU, 10-30 min on a busy 2-core box
    .venv/bin/python benchmarks/batch_cost.py --quick    # smoke test

Writes ``specmath/data/results/batch_cpu.json`` (override with ``--out``). For each batch size
B = 1 … 4 it keeps a KV cache of B rows of ``--context`` tokens, then times one cached
forward pass of the target over B × m new tokens (m = k + 1, by default 1, 2, 3, 5, 9: the
verification pass of k drafted tokens per row) and one draft step over B × 1 tokens, cropping
the caches back after every pass. The configurations are timed in a fresh random order
in every repeat (interleaved, so drift on the shared machine hits all of them alike);
the file keeps every time, the medians and, for each median, the interval from the 2nd
smallest to the 2nd largest repeat with its coverage for independent, identically
distributed repeats, P(2 <= Bin(n, 1/2) <= n - 2) (0.875 at 7 repeats; no 95 % label).
Derived: V_B(k) = t(B, k+1) / t(B, 1) (verification cost in steps of the same batch) and
c_B = t_target(B, 1) / t_draft(B, 1).
"""

from __future__ import annotations

import math
import os
import statistics
import time

import numpy as np
import torch
from _common import parser, provenance, start, write_result

from specmath import llm

CODE = '''import heapq


def dijkstra(graph, source):
    """Shortest distances from source in a graph given as {node: [(neighbour, weight)]}."""
    dist = {source: 0}
    queue = [(0, source)]
    while queue:
        d, node = heapq.heappop(queue)
        if d > dist.get(node, float("inf")):
            continue
        for neighbour, weight in graph.get(node, []):
            nd = d + weight
            if nd < dist.get(neighbour, float("inf")):
                dist[neighbour] = nd
                heapq.heappush(queue, (nd, neighbour))
    return dist


class LRUCache:
    """A least-recently-used cache with a fixed capacity."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.data = {}
'''


NOTE = ("CPU, one torch thread, on a 2-core machine shared with other jobs: absolute times "
        "drift; configurations interleaved in random order per repeat.")


def median_interval(x) -> tuple[float, float, float]:
    """Order-statistic interval for the median of ``x``: (X(2), X(n-1), coverage).

    For n >= 4 independent, identically distributed values of any continuous law the
    interval [X(2), X(n-1)] covers the median with probability
    P(2 <= Bin(n, 1/2) <= n - 2), returned as ``coverage`` (chapter 11).
    """
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    if n < 4:
        raise ValueError(f"x: need at least 4 repeats for the interval, got {n}")
    cov = sum(math.comb(n, j) for j in range(2, n - 1)) / 2 ** n
    return float(x[1]), float(x[-2]), float(cov)


@torch.inference_mode()
def measure(target, draft, ids: torch.Tensor, batches, ms, repeats: int, seed: int = 0,
            log=print) -> dict:
    """Times of cached forward passes: target over (B, m) tokens, draft over (B, 1).

    ``ids``: (1, context + max(ms)) token ids; every row of a batch uses them (the time of a
    dense forward pass does not depend on which ids it reads).
    """
    m_max = max(ms)
    ctx = ids.shape[1] - m_max
    caches = {}
    for B in batches:
        for role, model in (("target", target), ("draft", draft)):
            c = llm._new_cache(model)
            llm.cached_forward(model, c, input_ids=ids[:, :ctx].expand(B, ctx),
                               logits_to_keep=1)
            caches[role, B] = c
    configs = [("target", B, m) for B in batches for m in ms]
    configs += [("draft", B, 1) for B in batches]
    times = {cfg: [] for cfg in configs}
    rng = np.random.default_rng(seed)
    # one untimed warm-up pass per configuration
    for rep in range(repeats + 1):
        for i in rng.permutation(len(configs)):
            role, B, m = configs[i]
            model = target if role == "target" else draft
            cache = caches[role, B]
            x = ids[:, ctx:ctx + m].expand(B, m)
            t0 = time.perf_counter()
            llm.cached_forward(model, cache, input_ids=x, logits_to_keep=m)
            dt_ = time.perf_counter() - t0
            llm._truncate(cache, ctx)
            if rep > 0:
                times[role, B, m].append(dt_)
        if rep > 0:
            log(f"repeat {rep}/{repeats} done")
    out = []
    for (role, B, m), ts in times.items():
        rec = {"role": role, "B": B, "m": m, "times_s": ts,
               "median_s": statistics.median(ts)}
        if len(ts) >= 4:
            lo, hi, cov = median_interval(ts)
            rec |= {"median_interval_s": [lo, hi], "median_interval_coverage": cov}
        out.append(rec)
    return {"context": int(ctx), "records": out}


def derived(meas: dict) -> dict:
    """V_B(k) = t(B, k+1)/t(B, 1), per-row cost t(B, 1)/(B t(1, 1)) and c_B."""
    med = {(r["role"], r["B"], r["m"]): r["median_s"] for r in meas["records"]}
    Bs = sorted({B for (_, B, _) in med})
    ms = sorted({m for (role, _, m) in med if role == "target"})
    t11 = med["target", 1, 1]
    return {
        "B": Bs, "m": ms,
        "verify_cost": {str(B): [med["target", B, m] / med["target", B, 1] for m in ms]
                        for B in Bs},
        "step_vs_B1": {str(B): med["target", B, 1] / t11 for B in Bs},
        "tokens_vs_single_step": {str(B): [med["target", B, m] / t11 for m in ms]
                                  for B in Bs},
        "c": {str(B): med["target", B, 1] / med["draft", B, 1] for B in Bs},
    }


def main(argv=None, models=None) -> dict:
    ap = parser(__doc__)
    ap.add_argument("--context", type=int, default=128, help="cached tokens per row")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 2, 3, 5, 9],
                    help="tokens per row in the verification pass (k + 1)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    if args.quick:
        args.context, args.batches, args.ms, args.repeats = 8, [1, 2], [1, 3], 2
    t0 = start(args).t0
    if models is None:
        target, draft, tok = llm.load_pair(llm.OFFLINE_PAIR, "cpu", None)
        ids = tok(CODE, return_tensors="pt").input_ids
    else:
        target, draft, tok = models
        g = torch.Generator().manual_seed(args.seed)
        ids = torch.randint(0, target.config.vocab_size, (1, 4096), generator=g)
    need = args.context + max(args.ms)
    if ids.shape[1] < need:
        ids = ids.repeat(1, need // ids.shape[1] + 1)
    ids = ids[:, :need]
    dtype = next(target.parameters()).dtype
    R = {"provenance": provenance(args, dtype=dtype, note=NOTE),
         "load_s": time.perf_counter() - t0, "quick": bool(args.quick)}
    R["measurements"] = measure(target, draft, ids, args.batches, args.ms, args.repeats,
                                args.seed)
    R["derived"] = derived(R["measurements"])
    R["provenance"]["loadavg_end"] = list(os.getloadavg())
    R["provenance"]["elapsed_s"] = time.perf_counter() - t0
    write_result(R, args.out, "batch_cpu.json")
    return R


if __name__ == "__main__":
    main()
