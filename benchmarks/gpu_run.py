"""The GPU run of the course, in one command (issue 12; chapter 7, section "On a GPU").

The exact GPU command (from the repository root; it stops by itself before 540 s)::

    PYTHONPATH=. python3 benchmarks/gpu_run.py --out $OUT/gpu_run.json

On CPU, the same code with tiny models (``make gpu-rehearsal`` runs it in a fresh
environment with only numpy, torch and transformers, as the GPU machine has)::

    PYTHONPATH=. python3 benchmarks/gpu_run.py --smoke --out /tmp/gpu_smoke.json

The GPU machine receives the working tree only (no network, no model weights), so every
model here is built from a committed configuration with **random weights**; what the real
weights decide — which drafts are accepted — comes from the traces recorded on CPU with
the real pair (``specmath/data/results/traces_cpu.json``) and is **replayed**. Sections:

1. exactness of :mod:`specmath.llm` on the device, tiny random models: greedy identity
   (every path) and the two-token G-test at T = 1 (false-alarm rate 1e-3, power against
   the broken correction computed and recorded), for each path of the loop;
2. cost side, the real architectures (``benchmarks/configs/``: Qwen2.5-Coder-0.5B and
   1.5B), random weights, bf16: one forward pass scoring m tokens after a context, for
   each model, eager (dynamic cache) and fast (static cache + CUDA graphs), interleaved and
   repeated → c = t_target(1)/t_draft(1), V(k) = t_target(k+1)/t_target(1), k = 0 … 8;
3. trace replay: the greedy accept/reject pattern of each recorded text driven through the
   loop (``_replay``), eager and fast, against plain decoding in the same mode: measured
   speedup vs E[N]/(1 + k/c) and E[N]/(k/c + V(k)) with section 2's c and V(k);
4. per-iteration overhead: our loop against transformers' assisted generation with the
   draft a copy of the target (every draft accepted, so both do the same passes).

It prints its plan (the expected duration of each section) first. Every section is
guarded: an error is recorded and the run goes on; the JSON is rewritten after each
section, so a run cut short still leaves its results. ``--budget-s`` caps the sections
(they shrink or are skipped, and say so); a hard stop at 540 s after the start ends the run
cleanly wherever it is, with what it measured written.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

T_START = time.perf_counter()  # before the heavy imports: the hard stop counts from here

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import RESULTS, device_name, write_json  # noqa: E402

from specmath import llm  # noqa: E402
from specmath import traces as tr  # noqa: E402
from specmath.stats import g_test  # noqa: E402

#: The GPU machine runs one command for at most 600 s; the run ends itself before this.
HARD_STOP_S = 540.0
BUDGET_S = 420.0   # default wall-clock cap of the sections (chapter 7 glues both)

CONFIGS = ROOT / "benchmarks" / "configs"
LEVEL = 1e-3  # false-alarm rate of each G-test of section 1


# ---- plumbing ------------------------------------------------------------------------------


class Budget:
    """Wall-clock budget of the run: sections ask how much is left before starting work."""

    def __init__(self, seconds: float, t0: float | None = None):
        self.t0 = time.perf_counter() if t0 is None else t0
        self.seconds = seconds

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.t0)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def quantiles(xs) -> dict:
    xs = sorted(float(x) for x in xs)
    if not xs:
        return {"n": 0}
    q = np.quantile(xs, [0.25, 0.5, 0.75])
    return {"median": float(q[1]), "q25": float(q[0]), "q75": float(q[2]), "n": len(xs)}


class OutOfTime(BaseException):
    """The hard stop: raised by a timer wherever the run is (not an Exception, so no
    section's own error handling swallows it)."""


def _out_of_time(signum, frame):
    raise OutOfTime("hard stop")


def guarded(rec: dict, name: str, fn, *args, **kw):
    """Run one section; record its result, or its error, under ``rec[name]``."""
    t0 = time.perf_counter()
    try:
        rec[name] = fn(*args, **kw)
    except OutOfTime as err:
        rec[name] = {"stopped": f"{err} after {time.perf_counter() - t0:.1f} s in this section",
                     "section_seconds": time.perf_counter() - t0}
        raise
    except Exception as err:  # noqa: BLE001 - a GPU run must report, not stop
        rec[name] = {"error": f"{type(err).__name__}: {err}",
                     "traceback": traceback.format_exc()[-4000:]}
    if isinstance(rec[name], dict):
        rec[name]["section_seconds"] = time.perf_counter() - t0
    return rec[name]


def driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def provenance(device, dtype, args) -> dict:
    d = {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": device.type,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dtype": str(dtype).replace("torch.", ""),
        "smoke": bool(args.smoke),
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "weights": "random (initialised from the committed configs; no real weights travel "
                   "to the GPU machine)",
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        d.update(gpu_name=torch.cuda.get_device_name(device), driver=driver_version(),
                 cuda=torch.version.cuda, gpu_memory_gib=props.total_memory / 2**30,
                 multiprocessors=props.multi_processor_count)
    else:
        d.update(cpu=device_name("cpu"), cpu_count=os.cpu_count(),
                 torch_threads=torch.get_num_threads(),
                 note="CPU smoke run: tiny configurations, timings meaningless")
    return d


def load_config(name: str, smoke: bool):
    raw = json.loads((CONFIGS / f"{name}.json").read_text())
    raw = {k: v for k, v in raw.items() if not k.startswith("specmath_")}
    if smoke:  # same family, tiny sizes: the same code paths in seconds on a CPU
        scale = 2 if "1.5b" in name else 1
        raw.update(hidden_size=32 * scale, intermediate_size=64 * scale,
                   num_hidden_layers=1 + scale, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=512, max_position_embeddings=1024,
                   layer_types=None, bos_token_id=1, eos_token_id=2, pad_token_id=0)
        raw.pop("layer_types")
    return transformers.Qwen2Config(**raw)


def build(config, device, dtype, seed: int):
    torch.manual_seed(seed)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval()
    w = model.get_input_embeddings().weight.detach()
    if float(w.float().std()) == 0.0:
        raise RuntimeError("random initialisation produced zero weights; timings on zeros "
                           "are not representative")
    return model


# ---- section 1: exactness on the device ----------------------------------------------------

V_TINY = 8
PROMPTS = [[1, 2, 3], [5], [7, 0, 7, 0, 2, 6]]


def tiny(seed: int, device):
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=V_TINY, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        initializer_range=0.25, tie_word_embeddings=False)
    return transformers.Qwen2ForCausalLM(cfg).double().eval().to(device)


@torch.inference_mode()
def next_probs(model, prefix, temperature):
    x = torch.tensor([prefix], device=llm._device_of(model))
    logits = model(x).logits[0, -1].double()
    return torch.softmax(logits / temperature, -1).cpu().numpy()


def two_token_law(model, prompt, temperature):
    p1 = next_probs(model, prompt, temperature)
    return np.stack([p1[a] * next_probs(model, prompt + [a], temperature)
                     for a in range(V_TINY)])


def g_test_power(p, q, n):
    """Power of the first-token G-test at LEVEL against the broken correction (p instead of
    the residual), non-central χ² approximation; None without scipy."""
    try:
        from scipy import stats
    except ImportError:
        return None
    m = np.minimum(p, q)
    broken = m + (1.0 - m.sum()) * p
    nc = 2 * n * float(np.sum(broken * np.log(broken / p)))
    crit = stats.chi2.isf(LEVEL, V_TINY - 1)
    return float(stats.ncx2.sf(crit, V_TINY - 1, nc))


PATH_SPECS = {  # name -> speculative_generate/autoregressive_generate keyword arguments
    "eager": dict(path="eager"),
    "device": dict(path="device"),
    "static": dict(path="static"),
    "static+graphs": dict(path="static", compile="graphs"),
    "static+graphs, block": dict(path="static", compile="graphs", verify="block"),
    "static+cudagraphs": dict(path="static", compile="cudagraphs"),
    "static+reduce-overhead": dict(path="static", compile="reduce-overhead"),
}


def exactness(device, paths, n_samples, budget: Budget, seconds_per_path: float) -> dict:
    target, draft = tiny(0, device), tiny(1, device)
    prompt = PROMPTS[0]
    law = two_token_law(target, prompt, 1.0)
    p1, q1 = next_probs(target, prompt, 1.0), next_probs(draft, prompt, 1.0)
    out = {"label": "tiny random models (vocabulary 8), float64 weights",
           "level": LEVEL, "n_samples": n_samples,
           "power_vs_broken_correction": g_test_power(p1, q1, n_samples),
           "alpha_first_position": float(np.minimum(p1, q1).sum()), "paths": {}}
    refs = {tuple(pr): llm.autoregressive_generate(
        target, torch.tensor([pr], device=device), temperature=0, max_new_tokens=16).tokens
        for pr in PROMPTS}
    for name in paths:
        spec = PATH_SPECS[name]
        r = out["paths"][name] = {}
        if budget.left() < seconds_per_path:
            r["skipped"] = f"time budget ({budget.left():.0f} s left)"
            continue
        t0 = time.perf_counter()
        try:
            ok, rejected = True, 0
            for pr, ref in refs.items():
                x = torch.tensor([pr], device=device)
                base = llm.autoregressive_generate(
                    target, x, temperature=0, max_new_tokens=16,
                    **{k_: v_ for k_, v_ in spec.items() if k_ != "verify"})
                ok &= base.tokens == ref
                for d in (draft, target):  # rejections, and draft = target (all accepted)
                    s = llm.speculative_generate(target, d, x, k=2, temperature=0,
                                                 max_new_tokens=16, **spec)
                    ok &= s.tokens == ref
                    rejected += sum(s.drafted) - sum(s.accepted)
            r["greedy_identity"] = bool(ok)
            r["greedy_rejections"] = int(rejected)
            r["path_used"] = s.path
            g = torch.Generator(device=device).manual_seed(1234)
            counts = np.zeros((V_TINY, V_TINY))
            x = torch.tensor([prompt], device=device)
            n_done = 0
            for _ in range(n_samples):
                if time.perf_counter() - t0 > seconds_per_path:
                    break
                s = llm.speculative_generate(target, draft, x, k=2, temperature=1.0,
                                             max_new_tokens=3, generator=g, **spec)
                counts[s.tokens[0], s.tokens[1]] += 1
                n_done += 1
            r["samples"] = n_done
            if n_done == n_samples:
                r["g_joint_pvalue"] = g_test(counts.ravel(), law.ravel()).pvalue
                r["g_first_pvalue"] = g_test(counts.sum(1), law.sum(1)).pvalue
                r["sampling_passes"] = bool(r["g_joint_pvalue"] > LEVEL
                                            and r["g_first_pvalue"] > LEVEL)
            else:
                r["sampling_passes"] = None
                r["note"] = "sampling cut short by the per-path time cap: no G-test"
        except Exception as err:  # noqa: BLE001
            r["error"] = f"{type(err).__name__}: {err}"
            r["traceback"] = traceback.format_exc()[-3000:]
        r["seconds"] = time.perf_counter() - t0
    return out


# ---- section 2: cost side --------------------------------------------------------------------


def mode_kwargs(mode: str) -> dict:
    return {"eager": dict(path="eager"), "device": dict(path="device"),
            "fast": dict(path="static", compile="graphs")}[mode]


def _runner(model, mode, role, max_len):
    if mode in ("eager", "device"):  # the same forward passes (dynamic cache, eager kernels)
        return llm._OnDevice(model, static=False, max_len=max_len, role=role)
    return llm._OnDevice(model, static=True, max_len=max_len, compile="graphs", role=role)


@torch.inference_mode()
def step_times(models: dict, modes, ms, context, reps, device, vocab) -> dict:
    """Median seconds of one forward pass scoring m tokens after ``context`` tokens, for
    each (model, mode, m); reps interleaved across every combination."""
    g = torch.Generator(device="cpu").manual_seed(0)
    runners, times = {}, {}
    for (mname, model), mode in [(mm, md) for mm in models.items() for md in modes]:
        run = _runner(model, mode, f"cost-{mname}", context + max(ms) + 8)
        ctx = torch.randint(0, vocab, (1, context), generator=g).to(device)
        run(ctx, 1)  # prefill (the first pass also initialises a static cache)
        runners[mname, mode] = run
    xs = {m: torch.randint(0, vocab, (1, m), generator=g).to(device) for m in ms}
    for key in runners:  # warm-up: graph capture, allocator, kernels
        for m in ms:
            if m in ms_for(key[0], ms):
                for _ in range(2):
                    runners[key](xs[m], m)
                    runners[key].rollback(context)
    sync(device)
    for _ in range(reps):
        for key, run in runners.items():
            for m in ms_for(key[0], ms):
                sync(device)
                t0 = time.perf_counter()
                run(xs[m], m)
                sync(device)
                times.setdefault((*key, m), []).append(time.perf_counter() - t0)
                run.rollback(context)
    return times


def ms_for(mname: str, ms):
    return ms if mname == "target" else [1, 2]


def cost_side(target, draft, device, reps, context, kmax, modes, vocab) -> dict:
    ms = list(range(1, kmax + 2))
    out = {"label": "random weights, real architectures (Qwen2.5-Coder 1.5B target, 0.5B "
                    "draft), batch 1", "context_tokens": context, "reps": reps, "modes": {},
           "errors": {}}
    times, ok = {}, []
    for mode in modes:  # one mode at a time, so that a failing fast path keeps eager's data
        try:
            times.update(step_times({"target": target, "draft": draft}, [mode], ms, context,
                                    reps, device, vocab))
            ok.append(mode)
        except Exception as err:  # noqa: BLE001
            out["errors"][mode] = f"{type(err).__name__}: {err}\n{traceback.format_exc()[-2000:]}"
    for mode in ok:
        t_t = {m: quantiles(times["target", mode, m]) for m in ms}
        t_d = {m: quantiles(times["draft", mode, m]) for m in (1, 2)}
        c_reps = [a / b for a, b in zip(times["target", mode, 1], times["draft", mode, 1],
                                        strict=True)]
        v = {k: t_t[k + 1]["median"] / t_t[1]["median"] for k in range(kmax + 1)}
        out["modes"][mode] = {
            "target_step_s": t_t, "draft_step_s": t_d,
            "c": t_t[1]["median"] / t_d[1]["median"], "c_per_rep": quantiles(c_reps),
            "V": v,
        }
    return out


# ---- section 3: trace replay -------------------------------------------------------------------


def synthetic_traces(seed=0, L=96) -> dict:
    """A stand-in of specmath/data/results/traces_cpu.json's shape (agreement strings only)."""
    rng = np.random.default_rng(seed)
    prompts = []
    for task, stay in (("code", 0.85), ("chat", 0.7), ("story", 0.6)):
        for j in range(4):
            a, s = [], 1
            for _ in range(L):  # a sticky two-state chain: runs of agreement, as in text
                s = s if rng.random() < stay else 1 - s
                a.append(int(s if rng.random() < 0.9 else 1 - s))
            prompts.append({"id": f"{task}-{j}", "task": task,
                            "split": "train" if j < 2 else "test", "text_temperature": 0,
                            "L": L, "agree": a})
    return {"provenance": {"note": "SYNTHETIC stand-in: specmath/data/results/traces_cpu.json was "
                                   "absent when this run started"},
            "temperatures": [], "prompts": prompts}


def pick_replay_prompts(traces, per_task: int, max_len: int):
    chosen = []
    by_task: dict = {}
    for p in traces["prompts"]:
        if int(p.get("text_temperature", 0)) != 0:
            continue  # greedy agreement strings describe greedy texts only
        by_task.setdefault(p["task"], []).append(p)
    for task, ps in by_task.items():
        ps = sorted(ps, key=lambda p: (p.get("split") != "test", p["id"]))
        n = per_task * 2 if task == "code" else per_task
        for p in ps[:n]:
            chosen.append({**p, "agree": list(p["agree"])[:max_len]})
    return chosen


@torch.inference_mode()
def replay(target, draft, device, traces, ks, modes, cost, per_task, max_len, reps,
           budget: Budget, vocab, reserve_s: float) -> dict:
    chosen = pick_replay_prompts(traces, per_task, max_len)
    g = torch.Generator(device="cpu").manual_seed(1)
    out = {"label": "REPLAYED: accept/reject pattern recorded on CPU with the real weights, "
                    "timed with random weights of the real architectures",
           "traces_source": traces.get("source", "?"),
           "traces_provenance": {k: v for k, v in traces.get("provenance", {}).items()
                                 if isinstance(v, str | int | float)},
           "prompts": [p["id"] for p in chosen], "ks": ks, "reps": reps, "runs": [],
           "skipped": []}
    for rep in range(reps):
        for p in chosen:
            ctx = torch.randint(0, vocab, (1, 32), generator=g).to(device)
            for mode in modes:
                kw = mode_kwargs(mode)
                if budget.left() < reserve_s:
                    out["skipped"].append({"rep": rep, "prompt": p["id"], "mode": mode})
                    continue
                try:
                    replay_one(out, target, draft, device, ctx, p, mode, kw, ks, rep)
                except Exception as err:  # noqa: BLE001
                    out.setdefault("errors", []).append(
                        {"rep": rep, "prompt": p["id"], "mode": mode,
                         "error": f"{type(err).__name__}: {err}",
                         "traceback": traceback.format_exc()[-2000:]})
    summarise_replay(out, chosen, ks, modes, cost)
    return out


def replay_one(out, target, draft, device, ctx, p, mode, kw, ks, rep):
    """Plain decoding of len(agree) tokens, then the loop replaying the pattern at each k."""
    L = len(p["agree"])
    sync(device)
    t0 = time.perf_counter()
    base = llm.autoregressive_generate(target, ctx, temperature=0, max_new_tokens=L, **kw)
    sync(device)
    t_plain = time.perf_counter() - t0
    for k in ks:
        N, d = tr.greedy_iterations(p["agree"], k)
        sync(device)
        t0 = time.perf_counter()
        res = llm.speculative_generate(target, draft, ctx, k=k, temperature=0,
                                       max_new_tokens=L, _replay=[int(n) - 1 for n in N],
                                       **kw)
        sync(device)
        t_spec = time.perf_counter() - t0
        assert res.drafted == [int(x) for x in d if x > 0], "replay misaligned"
        out["runs"].append({"rep": rep, "prompt": p["id"], "task": p["task"], "mode": mode,
                            "k": k, "L": L, "t_plain_s": t_plain, "t_spec_s": t_spec,
                            "speedup": t_plain / t_spec, "iterations": len(N),
                            "plain_tokens": len(base.tokens)})


def summarise_replay(out, chosen, ks, modes, cost):
    """Per (task, mode, k): ratio of summed times, and the predictions."""
    out["summary"] = []
    tasks = sorted({r["task"] for r in out["runs"]})
    for task in tasks + ["all"]:
        agrees = [p["agree"] for p in chosen if task in ("all", p["task"])]
        for mode in modes:
            cm = cost.get("modes", {}).get(mode) if isinstance(cost, dict) else None
            for k in ks:
                rs = [r for r in out["runs"] if r["mode"] == mode and r["k"] == k
                      and task in ("all", r["task"])]
                if not rs:
                    continue
                Ns = np.concatenate([tr.tokens_per_iteration_greedy(a, k) for a in agrees])
                EN = float(Ns.mean()) if Ns.size else float("nan")
                row = {"task": task, "mode": mode, "k": k, "E_N": EN,
                       "measured_speedup": sum(r["t_plain_s"] for r in rs)
                       / sum(r["t_spec_s"] for r in rs),
                       "speedups": quantiles([r["speedup"] for r in rs])}
                if cm:
                    c, V = cm["c"], cm["V"]
                    Vk = V.get(k, V.get(str(k)))
                    row["predicted_one_step"] = EN / (1 + k / c)
                    row["predicted_with_V"] = EN / (k / c + Vk)
                    # the same prediction step by step along each text (no E[N] averaging)
                    steps = sum(sum(dd / c + V.get(int(dd), V.get(str(int(dd)))) for dd in
                                    tr.greedy_iterations(a, k)[1]) for a in agrees)
                    row["predicted_plan"] = sum(len(a) for a in agrees) / steps
                    row["relative_error_with_V"] = (row["predicted_with_V"]
                                                    / row["measured_speedup"] - 1)
                out["summary"].append(row)
    return out


# ---- section 4: per-iteration overhead against transformers' assisted generation -----------


@torch.inference_mode()
def overhead(target, device, k, n_new, reps, cost, vocab, modes) -> dict:
    copy_ = copy.deepcopy(target)  # the draft: a copy of the target, so all drafts accepted
    calls = {"n": 0}
    hook = target.register_forward_hook(lambda *a: calls.__setitem__("n", calls["n"] + 1))
    g = torch.Generator(device="cpu").manual_seed(2)
    ids = torch.randint(0, vocab, (1, 32), generator=g).to(device)
    gc = copy_.generation_config
    gc.num_assistant_tokens = k
    gc.num_assistant_tokens_schedule = "constant"
    gc.assistant_confidence_threshold = 0.0
    # exactly n_new tokens: no end-of-sequence stop (transformers 5.0 refuses min_new_tokens
    # together with an assistant model, so EOS is switched off instead)
    gen_kw = dict(max_new_tokens=n_new, eos_token_id=[], do_sample=False,
                  attention_mask=torch.ones_like(ids), assistant_model=copy_,
                  num_assistant_tokens=k, num_assistant_tokens_schedule="constant",
                  pad_token_id=0)
    runs: dict = {}
    iters = {}

    def hf():
        calls["n"] = 0
        target.generate(ids, **gen_kw)
        return calls["n"]  # target passes: one per iteration (the first scores the prompt)

    def ours(kw):
        def f():
            r = llm.speculative_generate(target, copy_, ids, k=k, temperature=0,
                                         max_new_tokens=n_new, **kw)
            assert r.accepted == r.drafted, "a copy of the target must accept everything"
            # target passes per iteration: the device paths add one prompt prefill pass
            return r.target_calls - (0 if kw.get("path", "eager") == "eager" else 1)
        return f

    fns = {"hf_assisted": hf, "ours_eager": ours(dict(path="eager")),
           "ours_device": ours(dict(path="device"))}
    if "fast" in modes:
        fns["ours_fast"] = ours(mode_kwargs("fast"))
    try:
        for name, f in fns.items():  # warm-up (graph capture, first-call costs)
            iters[name] = f()
        for _ in range(reps):
            for name, f in fns.items():
                sync(device)
                t0 = time.perf_counter()
                iters[name] = f()
                sync(device)
                runs.setdefault(name, []).append(time.perf_counter() - t0)
    finally:
        hook.remove()
    out = {"label": "random weights, Qwen2.5-Coder 1.5B architecture; draft = a copy of the "
                    "target (every draft accepted), greedy", "k": k, "new_tokens": n_new,
           "reps": reps, "loops": {}}
    eager = cost.get("modes", {}).get("eager") if isinstance(cost, dict) else None
    fast = cost.get("modes", {}).get("fast") if isinstance(cost, dict) else None
    for name, ts in runs.items():
        n_it = max(int(iters[name]), 1)
        row = {"total_s": quantiles(ts), "iterations": n_it,
               "per_iteration_s": statistics.median(ts) / n_it}
        # the model passes one iteration needs (the draft is the target's architecture):
        # k one-token passes + one pass of k + 1 tokens, from section 2 in the same mode
        ref = fast if name == "ours_fast" else eager
        if ref:
            t1 = ref["target_step_s"]["1"]["median"] if "1" in ref["target_step_s"] else \
                ref["target_step_s"][1]["median"]
            tk = ref["target_step_s"].get(k + 1, ref["target_step_s"].get(str(k + 1)))
            forward = k * t1 + tk["median"]
            row["forward_s_per_iteration"] = forward
            row["overhead_per_iteration_s"] = row["per_iteration_s"] - forward
        out["loops"][name] = row
    return out


# ---- main ----------------------------------------------------------------------------------------


def write(path: Path, record: dict) -> None:
    write_json(path, record)


def summary_lines(rec: dict) -> list[str]:
    lines = [f"device: {rec['provenance'].get('gpu_name', rec['provenance']['device'])}  "
             f"elapsed {rec.get('elapsed_s', float('nan')):.0f} s"]
    ex = rec.get("exactness", {})
    for name, r in ex.get("paths", {}).items():
        lines.append(f"  exactness {name:24s} greedy={r.get('greedy_identity')} "
                     f"sampling={r.get('sampling_passes')} "
                     f"{r.get('error', r.get('skipped', ''))[:60]}")
    cost = rec.get("cost", {})
    for mode, m in cost.get("modes", {}).items():
        V = m["V"]
        lines.append(f"  cost {mode:6s} c={m['c']:.2f}  V(1)={V[1]:.2f} V(4)={V[4]:.2f} "
                     f"V(8)={V[len(V) - 1]:.2f}  t_target(1)="
                     f"{m['target_step_s'][1]['median'] * 1e3:.2f} ms")
    for row in rec.get("replay", {}).get("summary", []):
        if row["task"] in ("code", "all"):
            lines.append(f"  replay {row['task']:5s} {row['mode']:6s} k={row['k']} "
                         f"measured {row['measured_speedup']:.2f} "
                         f"pred(V) {row.get('predicted_with_V', float('nan')):.2f}")
    for name, r in rec.get("overhead", {}).get("loops", {}).items():
        lines.append(f"  overhead {name:12s} per iteration {r['per_iteration_s'] * 1e3:.2f} ms"
                     f" (overhead {r.get('overhead_per_iteration_s', float('nan')) * 1e3:.2f}"
                     " ms)")
    for sec in ("exactness", "cost", "replay", "overhead", "exactness_compiled"):
        if isinstance(rec.get(sec), dict) and "error" in rec[sec]:
            lines.append(f"  {sec}: ERROR {rec[sec]['error'][:100]}")
    if rec.get("stopped"):
        lines.append(f"  STOPPED: {rec['stopped']}")
    return lines


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON to write (default specmath/data/results/gpu_run.json; with --smoke "
                         "/tmp/gpu_run_smoke.json, never the book's)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny configurations on CPU, seconds: checks the code, not the GPU")
    ap.add_argument("--device", default=None)
    ap.add_argument("--budget-s", type=float, default=None,
                    help=f"wall-clock cap of the sections (default {BUDGET_S:.0f} s; smoke 240 s, "
                         "normally done in 30)")
    ap.add_argument("--hard-stop-s", type=float, default=HARD_STOP_S,
                    help="end the run here, whatever it is doing, with its results written")
    ap.add_argument("--traces", type=Path, default=None,
                    help="traces JSON (default specmath/data/results/traces_cpu.json, else synthetic)")
    ap.add_argument("--compiled-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.compiled_only:  # child process of section 1b (so a slow compile can be cut off)
        dev = torch.device(args.device or "cuda")
        r = exactness(dev, ["static+cudagraphs", "static+reduce-overhead"], 1500,
                      Budget(1e9), 60.0)
        write(args.compiled_only, r)
        return r
    smoke = args.smoke
    if args.out is None:
        args.out = Path("/tmp/gpu_run_smoke.json") if smoke else RESULTS / "gpu_run.json"
    t0 = T_START if argv is None else time.perf_counter()  # a script counts its imports
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() and not smoke
                                          else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(1)
    budget = Budget(min(args.budget_s or (240.0 if smoke else BUDGET_S), args.hard_stop_s - 30),
                    t0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    rec: dict = {"provenance": provenance(device, dtype, args)}
    P = dict(  # sizes of the work: GPU run, and the smoke run's
        n_samples=60 if smoke else 1500, sec_per_path=8 if smoke else 45,
        reps=3 if smoke else 40, context=16 if smoke else 256, kmax=8,
        replay_ks=[1, 2, 4] if smoke else list(range(1, 9)), per_task=1,
        replay_len=24 if smoke else 128, replay_reps=1 if smoke else 2,
        ov_reps=1 if smoke else 5, ov_new=12 if smoke else 64, ov_k=4)
    rec["provenance"]["work"] = P
    paths = ["eager", "device", "static", "static+graphs"]
    if "block" in llm.VERIFIERS:  # chapter 9's rule, on the fast path
        paths.append("static+graphs, block")
    rec["plan"] = plan(P, paths, budget.seconds, args.hard_stop_s, device)
    print("\n".join(["plan (seconds; the JSON is rewritten after each section):"]
                    + [f"  {k:20s} {v}" for k, v in rec["plan"].items()]), flush=True)
    signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(1.0, args.hard_stop_s
                                             - (time.perf_counter() - t0)))
    try:
        sections(rec, args, device, dtype, P, paths, budget, smoke)
    except OutOfTime:
        rec["stopped"] = (f"hard stop at {args.hard_stop_s:.0f} s: the sections before the "
                          "stopped one finished and are kept")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        rec["elapsed_s"] = budget.elapsed()
        write(args.out, rec)
    print("\n".join(summary_lines(rec)))
    return rec


def plan(P: dict, paths: list[str], budget_s: float, hard_stop_s: float, device) -> dict:
    """Expected seconds of each section, printed before anything runs: caps where the
    section has one, else an estimate from its size (CPU smoke: a few seconds each)."""
    gpu = device.type == "cuda"
    n = len(paths)
    return {
        "1 exactness": f"at most {n} paths x {P['sec_per_path']} s = {n * P['sec_per_path']}",
        "2 cost": "about 60 (graph capture, then interleaved timing)" if gpu else "about 5",
        "3 replay": f"until {0.75 * budget_s:.0f} s into the run at the latest",
        "4 overhead": "about 30" if gpu else "about 5",
        "1b compiled paths": (f"what is left until {budget_s - 20:.0f} s (child process, "
                              "CUDA only)" if gpu else "skipped on CPU"),
        "budget": f"{budget_s:.0f} for the sections; hard stop at {hard_stop_s:.0f}",
    }


def sections(rec, args, device, dtype, P, paths, budget, smoke) -> None:
    """The four sections (and 1b), the JSON rewritten after each."""
    # 1. exactness (the compiled-by-torch.compile paths come last, if time is left)
    guarded(rec, "exactness", exactness, device, paths, P["n_samples"], budget,
            P["sec_per_path"])
    write(args.out, rec)

    # 2. cost side with the real architectures (random weights)
    target = build(load_config("qwen2.5-coder-1.5b", smoke), device, dtype, seed=0)
    draft = build(load_config("qwen2.5-coder-0.5b", smoke), device, dtype, seed=1)
    vocab = target.config.vocab_size
    fast_ok = rec["exactness"].get("paths", {}).get("static+graphs", {}).get(
        "greedy_identity", False) if isinstance(rec["exactness"], dict) else False
    modes = ["eager", "fast"] if fast_ok else ["eager", "device"]
    rec["provenance"]["fast_path"] = ("static KV cache + CUDA graphs (compile='graphs')"
                                      if fast_ok else "disabled: failed the exactness check")
    guarded(rec, "cost", cost_side, target, draft, device, P["reps"], P["context"], P["kmax"],
            modes, vocab)
    write(args.out, rec)

    # 3. trace replay
    traces_file = args.traces or tr.traces_path("cpu")
    if Path(traces_file).is_file():
        traces = tr.load_traces(traces_file, download=False)
        traces["source"] = str(Path(traces_file).resolve().relative_to(ROOT)
                               if Path(traces_file).resolve().is_relative_to(ROOT)
                               else traces_file)
    else:
        traces = synthetic_traces()
        traces["source"] = "SYNTHETIC (no traces file): replay results are not meaningful"

    guarded(rec, "replay", replay, target, draft, device, traces, P["replay_ks"], modes,
            rec["cost"], P["per_task"], P["replay_len"], P["replay_reps"], budget, vocab,
            reserve_s=0.25 * budget.seconds)
    write(args.out, rec)

    # 4. overhead against transformers' assisted generation
    if budget.left() > 0.1 * budget.seconds:
        guarded(rec, "overhead", overhead, target, device, P["ov_k"], P["ov_new"],
                P["ov_reps"], rec["cost"], vocab, modes)
    else:
        rec["overhead"] = {"skipped": f"time budget ({budget.left():.0f} s left)"}
    write(args.out, rec)
    del target, draft

    # 1b. exactness of the torch.compile paths (slow to compile: last, only on CUDA, in a
    # child process that is stopped when the budget runs out)
    if device.type == "cuda" and budget.left() > 90:
        tmp = Path("/tmp") / f"gpu_run_compiled_{os.getpid()}.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--compiled-only", str(tmp),
               "--device", str(device)]
        try:
            subprocess.run(cmd, timeout=budget.left() - 20, check=False)
            rec["exactness_compiled"] = (json.loads(tmp.read_text()) if tmp.is_file() else
                                         {"error": "the child process wrote no result"})
        except subprocess.TimeoutExpired:
            rec["exactness_compiled"] = {"skipped": "stopped at the time budget"}
    else:
        rec["exactness_compiled"] = {"skipped": f"CPU run or time budget ({budget.left():.0f}"
                                                " s left)"}


if __name__ == "__main__":
    main()
