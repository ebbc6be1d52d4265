"""Real-model speculative decoding measured against the course's formulas (chapter 7).

Usage (from the repository root)::

    .venv/bin/python benchmarks/realmodel.py                   # CPU, ≈ 25 CPU-minutes
    python benchmarks/realmodel.py --device cuda               # GPU
    python benchmarks/realmodel.py --quick                     # smoke test

Writes ``specmath/data/results/realmodel_<device>.json`` (override with ``--out``) holding every
measurement and its provenance (device, versions, dtype, settings, date, load average).

**Clock.** On a CPU every time below is the process's CPU time (``time.process_time``,
one torch thread, so all the work runs on the calling thread) next to the wall-clock time.
On a shared machine the wall clock also counts the time the process waits for a core —
here often more than half of it — and that waiting drifts from minute to minute; it made
a two-token pass look slower than two one-token passes. CPU time counts the work. On a
GPU the wall clock (with synchronisation) is used.

What it measures, on the pair from ``specmath.llm.load_pair``:

1. **costs**, in blocks interleaved with the k sweep (each block: every pass size once, in
   a shuffled order, after a warm-up pass of every size): the target's pass scoring m = 1 … 9
   tokens (→ V(k) = t(k+1)/t(1), per block, so pairs share a moment), the draft's 1- and
   2-token passes (→ c), each sweep prompt's prefill, and one bare matrix product of the
   target's MLP shape with m rows (the kernel behind V's shape);
2. **sweep**: greedy generations of ``--sweep-tokens`` tokens for k in ``--sweep-k`` on one
   prompt per task (the traces' prompts ``<task>-0``), each (prompt, k) once, in shuffled
   order spread over the cost blocks; the chapter predicts them from the costs (separate
   runs) and the exact N along the traces' agreement strings;
3. **alpha**: k = ``--k-alpha`` runs on three tasks at T = 0, 0.3, 0.7, 1, keeping every
   iteration's accepted count and Σ min(p, q) per drafted position (for the position test
   stratified by run, and α over reached positions only);
4. **hf**: Hugging Face ``generate``: plain, assisted (constant ``num_assistant_tokens = k``,
   set on the *draft's* ``generation_config``, where transformers reads it), and prompt
   lookup on an input-grounded task, next to our loop.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _common import PROMPTS, parser, provenance, start, write_json, write_result

import specmath as sm
from specmath import llm

CODE_PREFIX = PROMPTS["code"][0]["raw"]
TASKS = {"code": PROMPTS["code"][0], "chat": PROMPTS["chat"][0], "story": PROMPTS["story"][0]}
GROUNDED = {"user": "Add type hints and a docstring to this function, and return the whole "
                    "function:\n\n```python\n" + CODE_PREFIX
                    + "        d, node = heapq.heappop(queue)\n        if d > dist.get(node, "
                    "float('inf')):\n            continue\n        for nb, w in graph[node]:\n"
                    "            nd = d + w\n            if nd < dist.get(nb, float('inf')):\n"
                    "                dist[nb] = nd\n                heapq.heappush(queue, "
                    "(nd, nb))\n    return dist\n```"}
TEMPERATURES = [0.0, 0.3, 0.7, 1.0]


def encode(tok, task: dict, device) -> torch.Tensor:
    if "raw" in task:
        ids = tok(task["raw"], return_tensors="pt").input_ids
    else:
        msgs = [{"role": "user", "content": task["user"]}]
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        ids = tok(text, return_tensors="pt").input_ids
    return ids.to(device)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class Clock:
    """Times a block: CPU seconds of this process on CPU (wall on GPU), and wall seconds."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        sync(self.device)
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.wall = time.perf_counter() - self.w0
        cpu = time.process_time() - self.c0
        self.work = self.wall if self.device.type == "cuda" else cpu


class Passes:
    """Cached forward passes of one model scoring m tokens after a fixed prefix."""

    def __init__(self, model, prefix: torch.Tensor):
        self.model = model
        self.device = prefix.device
        self.cache = llm._new_cache(model)
        with torch.inference_mode():
            llm.cached_forward(model, self.cache, input_ids=prefix, logits_to_keep=1)
        self.n0 = self.cache.get_seq_length()
        self.extra = prefix[:, -16:]  # realistic token ids to score

    @torch.inference_mode()
    def time(self, m: int) -> tuple[float, float]:
        with Clock(self.device) as ck:
            llm.cached_forward(self.model, self.cache, input_ids=self.extra[:, :m],
                               logits_to_keep=m)
        llm._truncate(self.cache, self.n0)
        return ck.work, ck.wall


@torch.inference_mode()
def prefill_time(model, ids) -> tuple[float, float]:
    cache = llm._new_cache(model)
    with Clock(ids.device) as ck:
        llm.cached_forward(model, cache, input_ids=ids, logits_to_keep=1)
    return ck.work, ck.wall


def matmul_time(W: torch.Tensor, m: int, gen: torch.Generator) -> float:
    x = torch.randn(m, W.shape[1], generator=gen, dtype=W.dtype).to(W.device)
    with torch.inference_mode(), Clock(W.device) as ck:
        for _ in range(5):
            torch.nn.functional.linear(x, W)
    return ck.work / 5


def position_stats(results, k: int) -> dict:
    """Per draft position: reached / accepted counts, Σ min(p, q) over all drafted and over
    reached positions, the histogram of N (iterations that drafted all k tokens only)."""
    full = [(a, al) for r in results for a, d, al in zip(r.accepted, r.drafted,
                                                          r.alpha_by_position, strict=True)
            if d == k]
    reached = [sum(1 for a, _ in full if a >= i) for i in range(k)]
    kept = [sum(1 for a, _ in full if a > i) for i in range(k)]
    summin = [float(np.mean([al[i] for _, al in full])) if full else None for i in range(k)]
    summin_r = [float(np.mean([al[i] for a, al in full if a >= i]))
                if any(a >= i for a, _ in full) else None for i in range(k)]
    counts = np.bincount([a + 1 for a, _ in full], minlength=k + 2)[1:].tolist()
    return {"reached": reached, "accepted": kept,
            "accept_given_reached": [kp / r if r else None for kp, r in zip(kept, reached,
                                                                            strict=True)],
            "sum_min_by_position": summin, "sum_min_by_position_reached": summin_r,
            "N_counts": counts, "iterations": len(full)}


def summarize(res: llm.GenerationResult, tok=None) -> dict:
    d = {"new_tokens": len(res.tokens), "time_s": res.time_s,
         "tokens_per_s": res.tokens_per_second, "target_calls": res.target_calls,
         "draft_calls": res.draft_calls}
    if res.drafted:
        reached = [x for acc, row in zip(res.accepted, res.alpha_by_position, strict=True)
                   for x in row[:acc + 1]]
        d.update(accepted=sum(res.accepted), drafted=sum(res.drafted),
                 acceptance_rate=res.acceptance_rate, alpha_sum_min=res.alpha_sum_min,
                 alpha_sum_min_reached=float(np.mean(reached)),
                 mean_N=float(np.mean(res.tokens_per_iteration)),
                 iterations=len(res.accepted), accepted_list=list(res.accepted),
                 drafted_list=list(res.drafted),
                 alpha_by_position=[[round(x, 4) for x in row]
                                    for row in res.alpha_by_position])
    if tok is not None:
        d["text"] = tok.decode(res.tokens)
    return d


def hf_generate(target, ids, n, *, temperature, seed, draft=None, k=None, lookup=None):
    kw = dict(max_new_tokens=n, min_new_tokens=n, attention_mask=torch.ones_like(ids))
    if temperature == 0:
        kw.update(do_sample=False)
    else:
        kw.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
    kw.update(repetition_penalty=1.0)
    saved = None
    if draft is not None:
        # transformers 5.24 reads these three settings from the *assistant's*
        # generation_config; passed to generate() they are silently ignored (checked: the
        # draft then runs its defaults, 20 tokens with a dynamic confidence threshold)
        gc = draft.generation_config
        names = ("num_assistant_tokens", "num_assistant_tokens_schedule",
                 "assistant_confidence_threshold")
        saved = {n_: getattr(gc, n_, None) for n_ in names}
        gc.num_assistant_tokens = k
        gc.num_assistant_tokens_schedule = "constant"
        gc.assistant_confidence_threshold = 0.0
        kw.update(assistant_model=draft)
    if lookup is not None:
        kw.update(prompt_lookup_num_tokens=lookup)
    torch.manual_seed(seed)
    try:
        with torch.inference_mode(), Clock(ids.device) as ck:
            out = target.generate(ids, **kw)
    finally:
        if saved is not None:
            for n_, v_ in saved.items():
                setattr(draft.generation_config, n_, v_)
    new = out.shape[1] - ids.shape[1]
    return {"new_tokens": int(new), "time_s": ck.work, "wall_s": ck.wall,
            "tokens_per_s": new / ck.work, "tokens": out[0, ids.shape[1]:].tolist()}


def main(argv=None, models=None) -> dict:
    ap = parser(__doc__)
    ap.add_argument("--pair", default=llm.OFFLINE_PAIR)
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--new-tokens", type=int, default=48, help="tokens of the α and HF runs")
    ap.add_argument("--sweep-tokens", type=int, default=32)
    ap.add_argument("--sweep-k", default="0,1,2,3,4,6,8")
    ap.add_argument("--blocks", type=int, default=8, help="interleaved cost blocks")
    ap.add_argument("--k-alpha", type=int, default=4, help="k of the α-measuring runs")
    ap.add_argument("--max-m", type=int, default=9, help="largest pass size timed")
    ap.add_argument("--lookup", type=int, default=10, help="prompt_lookup_num_tokens")
    ap.add_argument("--temperatures", default="0,0.3,0.7,1", help="of the α runs")
    ap.add_argument("--sections", default="costs,sweep,alpha",
                    help="which of costs, sweep (timed k sweep), alpha to run")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--hf-from", default=None, help="skip section 4 and copy it (with its "
                    "provenance) from an earlier results file")
    args = ap.parse_args(argv)

    if models is None:
        device, dtype = llm.pick_device(args.device, args.dtype)
    else:
        device, dtype = torch.device("cpu"), torch.float64
    if device.type != "cpu":
        args.threads = torch.get_num_threads()
    gpu = device.type == "cuda"
    n, n_sw = args.new_tokens, args.sweep_tokens
    ks = [int(x) for x in args.sweep_k.split(",")]
    blocks = args.blocks
    if args.quick:
        n, n_sw, blocks, args.max_m = 6, 6, 2, 4
        ks = [0, 1, 2]
    sections = set(args.sections.split(","))
    if "sweep" not in sections:
        ks = []
    log = start(args)
    t0 = log.t0
    if models is None:
        target, draft, tok = llm.load_pair(args.pair, device, dtype)
        ids = {name: encode(tok, t, device) for name, t in TASKS.items()}
        ids["grounded"] = encode(tok, GROUNDED, device)
    else:  # tests: tiny in-process models, prompts as token ids
        target, draft, tok, ids = models
    load_s = time.perf_counter() - t0
    clock = ("wall clock with CUDA synchronisation" if gpu else "process CPU time "
             "(time.process_time), one torch thread; wall clock recorded beside it")
    R = {"provenance": provenance(args, device=device, dtype=dtype, pair=args.pair,
                                  clock=clock, shared_machine=not gpu), "load_s": load_s,
         "new_tokens": n, "quick": bool(args.quick)}
    R["prompt_tokens"] = {name: int(x.shape[1]) for name, x in ids.items()}
    sweep_prompts = [t for t in TASKS if t in ids]
    R["sweep_prompt_ids"] = {t: f"{t}-0" for t in sweep_prompts}

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    # warm-up: the first passes allocate
    llm.speculative_generate(target, draft, ids[sweep_prompts[0]], k=2, temperature=0,
                             max_new_tokens=4)

    # 1 + 2. cost blocks interleaved with the sweep runs
    rng = random.Random(args.seed)
    cost_on = "costs" in sections
    if not cost_on and not ks:
        blocks = 0
    ms = list(range(1, args.max_m + 1))
    tp, dp = Passes(target, ids[sweep_prompts[0]]), Passes(draft, ids[sweep_prompts[0]])
    for m in ms if cost_on else []:
        tp.time(m)
    dp.time(1), dp.time(2)
    mlp = next(mod for name, mod in target.named_modules() if name.endswith("mlp.up_proj"))
    W = mlp.weight.detach()
    g = torch.Generator().manual_seed(args.seed)
    for m in ms:
        matmul_time(W, m, g)
    C = {"target": {str(m): [] for m in ms}, "target_wall": {str(m): [] for m in ms},
         "draft": {"1": [], "2": []}, "draft_wall": {"1": [], "2": []},
         "matmul": {str(m): [] for m in ms}, "matmul_shape": list(W.shape),
         "prefill": {t: {"target": [], "draft": []} for t in sweep_prompts if ks}}
    jobs = [(t, kk) for t in sweep_prompts for kk in ks]
    rng.shuffle(jobs)
    per_block = [jobs[b::blocks] for b in range(blocks)] if blocks else []
    sweep = {t: {} for t in sweep_prompts}
    for b in range(blocks):
        items = ([("t", m) for m in ms] + [("d", 1), ("d", 2)] + [("mm", m) for m in ms]
                 if cost_on else []) + [("pre", t) for t in C["prefill"]]
        rng.shuffle(items)
        for kind, x in items:
            if kind == "t":
                w, wl = tp.time(x)
                C["target"][str(x)].append(w)
                C["target_wall"][str(x)].append(wl)
            elif kind == "d":
                w, wl = dp.time(x)
                C["draft"][str(x)].append(w)
                C["draft_wall"][str(x)].append(wl)
            elif kind == "mm":
                C["matmul"][str(x)].append(matmul_time(W, x, g))
            else:
                C["prefill"][x]["target"].append(prefill_time(target, ids[x])[0])
                C["prefill"][x]["draft"].append(prefill_time(draft, ids[x])[0])
        for t, kk in per_block[b]:
            with Clock(device) as ck:
                if kk == 0:
                    res = llm.autoregressive_generate(target, ids[t], temperature=0,
                                                      max_new_tokens=n_sw)
                else:
                    res = llm.speculative_generate(target, draft, ids[t], k=kk,
                                                   temperature=0, max_new_tokens=n_sw)
            sweep[t][str(kk)] = {"time_s": ck.work, "wall_s": ck.wall, "block": b,
                                 "tokens_per_iteration": res.tokens_per_iteration,
                                 "drafted": list(res.drafted), "tokens": res.tokens}
        log(f"block {b}: t(1) {C['target']['1'][-1] if cost_on else 0:.3f}s, sweep "
            f"{[(t, kk) for t, kk in per_block[b]]}")
    if cost_on:
        med = {m: statistics.median(C["target"][str(m)]) for m in ms}
        d1 = statistics.median(C["draft"]["1"])
    C["summary"] = {} if not cost_on else {
        "target_step_s": med[1], "draft_step_s": d1, "c": med[1] / d1,
        "draft_2_tokens_steps": statistics.median(C["draft"]["2"]) / d1,
        "V": {str(m - 1): med[m] / med[1] for m in ms},
        "V_wall": {str(m - 1): statistics.median(C["target_wall"][str(m)])
                   / statistics.median(C["target_wall"]["1"]) for m in ms},
        "note": "medians over the cost blocks; V(k) = t(k+1)/t(1); c = target ÷ draft "
                "one-token pass; the chapter computes intervals from the per-block lists"}
    if cost_on:
        R["costs"] = C
    if ks:
        R["sweep"] = {"task_prompts": sweep_prompts, "temperature": 0.0, "new_tokens": n_sw,
                      "k": ks, "runs": sweep,
                      "order": [[t, kk] for blk in per_block for t, kk in blk],
                      "prefill": C["prefill"]}
    log("costs", json.dumps({k: v for k, v in C["summary"].items() if k != "note"}))

    # 3. α by task and temperature (k = k_alpha), per iteration and by position
    K = args.k_alpha
    R["alpha"] = {"k": K, "runs": {}}
    allres = []
    for task in sweep_prompts if "alpha" in sections else []:
        for T in [float(x) for x in args.temperatures.split(",")]:
            res = llm.speculative_generate(target, draft, ids[task], k=K, temperature=T,
                                           max_new_tokens=n, generator=gen(args.seed))
            s = summarize(res, tok)
            s["alpha_from_rate"] = float(sm.alpha_from_acceptance_rate(
                min(s["acceptance_rate"], 1.0), K))
            s["positions"] = position_stats([res], K)
            R["alpha"]["runs"][f"{task}@{T}"] = s
            allres.append(res)
            log("alpha", task, T, round(s["alpha_sum_min"], 3),
                round(s["alpha_sum_min_reached"], 3), round(s["alpha_from_rate"], 3))
    if allres:
        R["alpha"]["positions_all"] = position_stats(allres, K)
    else:
        del R["alpha"]

    # 4. Hugging Face: plain, assisted, prompt lookup — next to our loop
    if args.hf_from:
        prev = json.loads(Path(args.hf_from).read_text())
        R["hf"] = prev["hf"]
        R["hf"]["copied_from"] = {"file": Path(args.hf_from).name, "new_tokens":
                                  prev.get("new_tokens"), "provenance": prev["provenance"],
                                  "clock": "wall clock (that recording timed wall seconds)"}
    elif not args.skip_hf and "grounded" in ids:
        kb = 4
        hf = {"k": kb, "runs": {}, "new_tokens": n_sw}
        for task in ("code", "chat"):
            for T in (0.0, 1.0):
                row = {}
                row["hf_plain"] = hf_generate(target, ids[task], n_sw, temperature=T,
                                              seed=args.seed)
                row["hf_assisted"] = hf_generate(target, ids[task], n_sw, temperature=T,
                                                 seed=args.seed, draft=draft, k=kb)
                with Clock(device) as ck:
                    ours = llm.speculative_generate(target, draft, ids[task], k=kb,
                                                    temperature=T, max_new_tokens=n_sw,
                                                    generator=gen(args.seed))
                row["ours_speculative"] = {"time_s": ck.work, "wall_s": ck.wall,
                                           "tokens_per_s": len(ours.tokens) / ck.work}
                with Clock(device) as ck:
                    ar = llm.autoregressive_generate(target, ids[task], temperature=T,
                                                     max_new_tokens=n_sw,
                                                     generator=gen(args.seed))
                row["ours_autoregressive"] = {"time_s": ck.work, "wall_s": ck.wall,
                                              "tokens_per_s": len(ar.tokens) / ck.work}
                if T == 0:
                    row["greedy_tokens_identical"] = {
                        "ours_spec_vs_ours_ar": ours.tokens == ar.tokens,
                        "ours_spec_vs_hf_plain": ours.tokens == row["hf_plain"]["tokens"],
                        "hf_assisted_vs_hf_plain":
                            row["hf_assisted"]["tokens"] == row["hf_plain"]["tokens"]}
                for v in row.values():
                    if isinstance(v, dict):
                        v.pop("tokens", None)
                row["ratio_ours_to_hf_assisted"] = (row["ours_speculative"]["tokens_per_s"]
                                                    / row["hf_assisted"]["tokens_per_s"])
                hf["runs"][f"{task}@{T}"] = row
                log("hf", task, T, round(row["ratio_ours_to_hf_assisted"], 3))
        plain = hf_generate(target, ids["grounded"], n_sw, temperature=0, seed=args.seed)
        look = hf_generate(target, ids["grounded"], n_sw, temperature=0, seed=args.seed,
                           lookup=args.lookup)
        hf["prompt_lookup"] = {
            "num_tokens": args.lookup, "task": "grounded", "temperature": 0.0,
            "hf_plain": {k: v for k, v in plain.items() if k != "tokens"},
            "hf_prompt_lookup": {k: v for k, v in look.items() if k != "tokens"},
            "identical": plain["tokens"] == look["tokens"],
            "speedup": plain["time_s"] / look["time_s"]}
        R["hf"] = hf
        log("lookup speedup", round(hf["prompt_lookup"]["speedup"], 3))
    R["provenance"]["loadavg_end"] = os.getloadavg()
    R["total_s"] = time.perf_counter() - t0

    write_result(R, args.out, f"realmodel_{'gpu' if gpu else 'cpu'}"
                 f"{'_quick' if args.quick else ''}.json", compact=True)
    return R


def merge(paths: list[str], out: str) -> dict:
    """One results file from recordings of separate sections (costs, sweep, alpha) run
    as separate processes: sections copied as they are, every provenance kept."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    R = {}
    for P in parts:
        for key, val in P.items():
            if key in ("costs", "sweep", "alpha") or key not in R:
                R[key] = val
    R["provenance"] = dict(parts[0]["provenance"])
    R["provenance"]["parts"] = {
        ",".join(k for k in ("costs", "sweep", "alpha") if k in P): P["provenance"]
        for P in parts}
    R["provenance"]["loadavg_end"] = max((P["provenance"]["loadavg_end"] for P in parts),
                                         key=lambda x: x[0])
    write_json(out, R, compact=True)
    return R


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--merge":
        merge(sys.argv[2:-1], sys.argv[-1])
        sys.exit(0)
    main(sys.argv[1:])
