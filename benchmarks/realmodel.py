"""Real-model speculative decoding measured against the course's formulas (chapter 7).

Usage (from the repository root)::

    .venv/bin/python benchmarks/realmodel.py                   # CPU, ≈ 20 min here
    python benchmarks/realmodel.py --device cuda               # GPU, a few minutes
    python benchmarks/realmodel.py --quick                     # smoke test, ~2 min

Writes ``book/results/realmodel_<device>.json`` (override with ``--out``) holding every
measurement and its provenance: device name, torch/transformers versions, dtype, pair,
settings, date, load average. What it measures, on the pair from ``specmath.llm.load_pair``:

1. per-call cost of each model: one-token step times (→ c = target ÷ draft) and the cost of
   scoring m = 1 … 9 tokens in one target pass (→ V(k) = t(k+1) ÷ t(1));
2. α two ways — Σ min(p, q) along the generated text and accepted ÷ drafted converted with
   ``specmath.alpha_from_acceptance_rate`` — by task (code, chat, story), by temperature
   (0, 0.3, 0.7, 1.0) and by draft position, with the histogram of N;
3. a k sweep 0 … 8 (code, greedy): tokens/s and speedup over our own autoregressive loop,
   against ``speedup`` (one-step verification) and ``speedup_with_verification_cost``
   (measured V(k)), and the measured best k against ``optimal_k``;
4. Hugging Face ``generate``: plain, assisted (``assistant_model``, constant schedule of
   ``num_assistant_tokens = k``, dynamic threshold off — set on the *draft's*
   ``generation_config``, where transformers reads them), and prompt lookup
   (``prompt_lookup_num_tokens``) on an input-grounded task, next to our loop.

GPU note: eager small models on a big GPU are bound by kernel-launch overhead, so c can be
near 1 there. A static KV cache with CUDA graphs (as gpt-fast does) is the known way past
that; it is not implemented here (``--compile`` is left for a later session).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers

import specmath as sm
from specmath import llm

ROOT = Path(__file__).resolve().parents[1]

CODE_PREFIX = '''import heapq


def dijkstra(graph, source):
    """Shortest distances from source in a graph given as {node: [(neighbour, weight)]}."""
    dist = {source: 0}
    queue = [(0, source)]
    while queue:
'''
TASKS = {
    # raw code completion: no chat template, the model continues a Python file
    "code": {"raw": CODE_PREFIX},
    "chat": {"user": "Explain to a new programmer what a hash table is and why lookups in it "
                     "are fast on average. Answer in plain prose."},
    "story": {"user": "Write a short story about a lighthouse keeper who finds a message in a "
                      "bottle."},
}
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


@torch.inference_mode()
def step_costs(target, draft, ids, repeats: int, max_m: int = 9) -> dict:
    """Median seconds of one cached forward pass scoring m tokens, m = 1 … max_m."""
    out = {}
    for role, model in (("target", target), ("draft", draft)):
        cache = llm._new_cache(model)
        model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
        n0 = cache.get_seq_length()
        extra = ids[:, -max_m:]  # realistic token ids to score
        times = {}
        for m in range(1, max_m + 1) if role == "target" else [1]:
            ts = []
            for _ in range(repeats):
                sync(ids.device)
                t0 = time.perf_counter()
                model(input_ids=extra[:, :m], cache=cache, use_cache=True, logits_to_keep=m)
                sync(ids.device)
                ts.append(time.perf_counter() - t0)
                llm._truncate(cache, n0)
            times[m] = statistics.median(ts)
        out[role] = times
    return out


def position_stats(results, k: int) -> dict:
    """Per draft position: Σ min(p, q) averaged, and P(accept at i | reached i)."""
    full = [(a, al) for r in results for a, d, al in zip(r.accepted, r.drafted,
                                                          r.alpha_by_position, strict=True)
            if d == k]
    reached = [sum(1 for a, _ in full if a >= i) for i in range(k)]
    kept = [sum(1 for a, _ in full if a > i) for i in range(k)]
    summin = [float(np.mean([al[i] for _, al in full])) if full else None for i in range(k)]
    counts = np.bincount([a + 1 for a, _ in full], minlength=k + 2)[1:].tolist()
    return {"reached": reached, "accepted": kept,
            "accept_given_reached": [kp / r if r else None for kp, r in zip(kept, reached,
                                                                            strict=True)],
            "sum_min_by_position": summin, "N_counts": counts, "iterations": len(full)}


def summarize(res: llm.GenerationResult, tok=None) -> dict:
    d = {"new_tokens": len(res.tokens), "time_s": res.time_s,
         "tokens_per_s": res.tokens_per_second, "target_calls": res.target_calls,
         "draft_calls": res.draft_calls, "target_time_s": res.target_time_s,
         "draft_time_s": res.draft_time_s}
    if res.drafted:
        d.update(accepted=sum(res.accepted), drafted=sum(res.drafted),
                 acceptance_rate=res.acceptance_rate, alpha_sum_min=res.alpha_sum_min,
                 mean_N=float(np.mean(res.tokens_per_iteration)),
                 iterations=len(res.accepted))
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
    sync(ids.device)
    t0 = time.perf_counter()
    try:
        with torch.inference_mode():
            out = target.generate(ids, **kw)
    finally:
        if saved is not None:
            for n_, v_ in saved.items():
                setattr(draft.generation_config, n_, v_)
    sync(ids.device)
    t = time.perf_counter() - t0
    new = out.shape[1] - ids.shape[1]
    return {"new_tokens": int(new), "time_s": t, "tokens_per_s": new / t,
            "tokens": out[0, ids.shape[1]:].tolist()}


def provenance(device, dtype, args, pair_name) -> dict:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": str(device), "device_name": name, "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(), "dtype": str(dtype).replace("torch.", ""),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "python": platform.python_version(), "platform": platform.platform(),
        "specmath": sm.__version__, "pair": pair_name,
        "target": "Qwen2.5-Coder-1.5B-Instruct", "draft": "Qwen2.5-Coder-0.5B-Instruct",
        "loadavg_start": os.getloadavg(), "settings": vars(args),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default=llm.OFFLINE_PAIR)
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is steadier)")
    ap.add_argument("--new-tokens", type=int, default=None, help="48 on CPU, 128 on GPU")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats: 1 CPU, 3 GPU")
    ap.add_argument("--k-alpha", type=int, default=4, help="k of the α-measuring runs")
    ap.add_argument("--k-max", type=int, default=8)
    ap.add_argument("--lookup", type=int, default=10, help="prompt_lookup_num_tokens")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, to test the script")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    device, dtype = llm.pick_device(args.device, args.dtype)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    gpu = device.type == "cuda"
    n = args.new_tokens or (128 if gpu else 48)
    reps = args.repeats or (3 if gpu else 1)
    if args.quick:
        n, reps = 8, 1
    t0 = time.perf_counter()
    target, draft, tok = llm.load_pair(args.pair, device, dtype)
    load_s = time.perf_counter() - t0
    R = {"provenance": provenance(device, dtype, args, args.pair), "load_s": load_s,
         "new_tokens": n, "repeats": reps}
    ids = {name: encode(tok, t, device) for name, t in TASKS.items()}
    ids["grounded"] = encode(tok, GROUNDED, device)
    R["prompt_tokens"] = {name: int(x.shape[1]) for name, x in ids.items()}

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def log(*a):
        print(f"[{time.perf_counter() - t0:7.1f}s]", *a, flush=True)

    # warm-up (first calls allocate)
    llm.speculative_generate(target, draft, ids["code"], k=2, temperature=0, max_new_tokens=4)

    # 1. costs
    costs = step_costs(target, draft, ids["code"], repeats=3 if args.quick else 11)
    t1, d1 = costs["target"][1], costs["draft"][1]
    R["costs"] = {"target_step_s": t1, "draft_step_s": d1, "c": t1 / d1,
                  "target_m_tokens_s": {str(m): v for m, v in costs["target"].items()},
                  "V": {str(kk): costs["target"][kk + 1] / t1 for kk in range(args.k_max + 1)}}
    log("costs", json.dumps({k: v for k, v in R["costs"].items() if k != "target_m_tokens_s"}))

    # 2. α by task and temperature (k = k_alpha), by position
    K = args.k_alpha
    R["alpha"] = {"k": K, "runs": {}}
    by_task: dict[str, list] = {}
    for task in TASKS:
        for T in TEMPERATURES:
            res = llm.speculative_generate(target, draft, ids[task], k=K, temperature=T,
                                           max_new_tokens=n, generator=gen(args.seed))
            s = summarize(res, tok)
            s["alpha_from_rate"] = float(sm.alpha_from_acceptance_rate(
                min(s["acceptance_rate"], 1.0), K))
            s["positions"] = position_stats([res], K)
            R["alpha"]["runs"][f"{task}@{T}"] = s
            by_task.setdefault(task, []).append(res)
            log("alpha", task, T, round(s["alpha_sum_min"], 3), round(s["alpha_from_rate"], 3))
    R["alpha"]["positions_all"] = position_stats([r for v in by_task.values() for r in v], K)

    # 3. k sweep on code, greedy, against our own autoregressive loop
    sweep, sweep_logs = {}, {}
    for kk in range(args.k_max + 1):
        runs = []
        for r in range(reps):
            if kk == 0:
                res = llm.autoregressive_generate(target, ids["code"], temperature=0,
                                                  max_new_tokens=n)
            else:
                res = llm.speculative_generate(target, draft, ids["code"], k=kk, temperature=0,
                                               max_new_tokens=n, generator=gen(r))
            runs.append(res)
        sweep_logs[kk] = ([x for r_ in runs for x in r_.target_log[1:]],  # no prefills
                          [x for r_ in runs for x in r_.draft_log[1:]])
        s = summarize(runs[0])
        s["time_s_all"] = [x.time_s for x in runs]
        s["time_s"] = statistics.median(s["time_s_all"])
        s["tokens_per_s"] = len(runs[0].tokens) / s["time_s"]
        if kk:
            s["N_counts"] = position_stats(runs, kk)["N_counts"]
        sweep[str(kk)] = s
        log("sweep k", kk, round(s["tokens_per_s"], 2), "tok/s")
    # the same costs measured inside the sweep's own runs (same load, same moment): median
    # seconds of the target's passes in the k-run (prefill excluded) ÷ its one-token passes
    # in the plain run; c from the draft's one-token passes pooled over the sweep
    t_one = statistics.median(t for n_, t in sweep_logs[0][0])
    d_one = statistics.median(t for kk in range(1, args.k_max + 1)
                              for n_, t in sweep_logs[kk][1] if n_ == 1)
    R["costs_in_run"] = {
        "target_step_s": t_one, "draft_step_s": d_one, "c": t_one / d_one,
        "V": {str(kk): (statistics.median(t for n_, t in sweep_logs[kk][0] if n_ == kk + 1)
                        / t_one if kk else 1.0) for kk in range(args.k_max + 1)},
        "note": "medians over the forward passes of the k sweep itself (prompt prefills "
                "excluded); a verification pass of the k-run feeds k+1 tokens (the pending "
                "token and k drafts)"}
    log("in-run costs", json.dumps(R["costs_in_run"]))
    base = sweep["0"]["time_s"]
    alpha_sweep = R["alpha"]["runs"]["code@0.0"]["alpha_sum_min"]
    ks = np.arange(args.k_max + 1)
    c = R["costs_in_run"]["c"]
    Vk = np.array([R["costs_in_run"]["V"][str(kk)] for kk in ks])
    measured = np.array([base / sweep[str(kk)]["time_s"] for kk in ks])
    pred1 = sm.speedup(alpha_sweep, ks, c)
    pred2 = sm.speedup_with_verification_cost(alpha_sweep, ks, c, Vk)
    R["sweep"] = {"task": "code", "temperature": 0.0, "alpha": alpha_sweep, "runs": sweep,
                  "costs": "costs_in_run",
                  "k": ks.tolist(), "speedup_measured": measured.tolist(),
                  "speedup_predicted_one_step": np.asarray(pred1).tolist(),
                  "speedup_predicted_measured_V": np.asarray(pred2).tolist(),
                  "best_k_measured": int(np.argmax(measured)),
                  "best_k_optimal_k": int(sm.optimal_k(alpha_sweep, c)),
                  "best_k_refined": int(np.argmax(pred2))}
    log("sweep", json.dumps({k: v for k, v in R["sweep"].items() if k != "runs"}))

    # 4. Hugging Face: plain, assisted, prompt lookup — next to our loop
    kb = max(1, R["sweep"]["best_k_measured"])
    hf = {"k": kb, "runs": {}}
    for task in ("code", "chat"):
        for T in (0.0, 1.0):
            row = {}
            row["hf_plain"] = hf_generate(target, ids[task], n, temperature=T, seed=args.seed)
            row["hf_assisted"] = hf_generate(target, ids[task], n, temperature=T,
                                             seed=args.seed, draft=draft, k=kb)
            ours = llm.speculative_generate(target, draft, ids[task], k=kb, temperature=T,
                                            max_new_tokens=n, generator=gen(args.seed))
            ar = llm.autoregressive_generate(target, ids[task], temperature=T,
                                             max_new_tokens=n, generator=gen(args.seed))
            row["ours_speculative"] = summarize(ours)
            row["ours_autoregressive"] = summarize(ar)
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
    plain = hf_generate(target, ids["grounded"], n, temperature=0, seed=args.seed)
    look = hf_generate(target, ids["grounded"], n, temperature=0, seed=args.seed,
                       lookup=args.lookup)
    hf["prompt_lookup"] = {"num_tokens": args.lookup, "task": "grounded", "temperature": 0.0,
                           "hf_plain": {k: v for k, v in plain.items() if k != "tokens"},
                           "hf_prompt_lookup": {k: v for k, v in look.items() if k != "tokens"},
                           "identical": plain["tokens"] == look["tokens"],
                           "speedup": plain["time_s"] / look["time_s"]}
    R["hf"] = hf
    log("lookup speedup", round(hf["prompt_lookup"]["speedup"], 3))
    R["provenance"]["loadavg_end"] = os.getloadavg()
    R["total_s"] = time.perf_counter() - t0

    out = Path(args.out) if args.out else ROOT / "book" / "results" / (
        f"realmodel_{'gpu' if gpu else 'cpu'}{'_quick' if args.quick else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(R, indent=1, default=float) + "\n")
    log("wrote", out)
    return R


if __name__ == "__main__":
    main(sys.argv[1:])
