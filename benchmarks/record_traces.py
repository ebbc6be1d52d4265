"""Record per-position acceptance traces of the real pair (shared data, chapters 7, 8, 11).

Usage (from the repository root)::

    .venv/bin/python benchmarks/record_traces.py            # CPU, ≈ 15 min on one core
    .venv/bin/python benchmarks/record_traces.py --quick    # 1 prompt per task, 8 tokens

Teacher forcing. For each prompt the **target** generates a text — greedily, and separately
by sampling at temperature 1 (seeded) — with end-of-sequence suppressed so every text has
exactly ``--new-tokens`` tokens. Then each model scores prompt + text in **one** forward
pass, which gives the target's p_t and the draft's q_t at every generated position t on the
same contexts: the target's own text, which is what speculative decoding visits, since its
output is the target's. Per position the file keeps (lists over t = 0 … L−1):

* ``agree``: argmax q_t = argmax p_t (greedy acceptance);
* ``alpha[T]``: Σ_x min(p_t^T(x), q_t^T(x)) (sampled-draft acceptance probability at T);
* ``alpha_greedy_draft[T]``: p_t^T(argmax q_t) (a greedy draft verified at temperature T);
* ``q_top``: max_x q_t(x) at T = 1 (the draft's confidence);
* ``draws``: m draws x ~ q_t (T = 1), each as (q_t(x), min(1, p_t(x)/q_t(x)));
* ``tokens``: the text's token ids (``prompt_ids`` too), so the GPU script can replay it.

Writes ``specmath/data/results/traces_cpu.json`` (floats rounded to 4 digits) with provenance. The
loader and the helpers that consume it are in :mod:`specmath.traces`. Split: prompts 0 and
2 of each task are "train", 1 and 3 "test" (by prompt, never by position).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from _common import (  # noqa: F401  (PROMPTS, encode, split_of: imported from here too)
    PROMPTS,
    RESULTS,
    device_name,
    encode,
    eos_ids,
    parser,
    split_of,
    start,
    write_json,
    write_result,
)

from specmath import llm

TEMPERATURES = (0.3, 0.7, 1.0)
M_DRAWS = 4
DIGITS = 4

def _round(a, digits: int = DIGITS) -> list:
    return np.round(np.asarray(a, dtype=float), digits).tolist()


@torch.inference_mode()
def generate_text(target, prompt_ids: list[int], n: int, temperature: float, seed: int,
                  eos_ids: list[int]) -> list[int]:
    """n new tokens from the target (greedy at T = 0, else pure sampling at T), EOS banned.

    A plain cached loop (not ``generate``) so that no generation_config default — top-k,
    top-p, repetition penalty — can sneak in: tokens are argmax or draws from
    softmax(logits / T) with the EOS ids' probability set to zero.
    """
    dev = next(target.parameters()).device
    g = torch.Generator().manual_seed(seed)
    cache = llm._new_cache(target)
    ids = list(prompt_ids)
    pending = list(prompt_ids)
    out: list[int] = []
    for _ in range(n):
        x = torch.tensor([pending], dtype=torch.long, device=dev)
        res, cache = llm.cached_forward(target, cache, input_ids=x, logits_to_keep=1)
        logits = res.logits[0, -1].double().cpu()
        if eos_ids:
            logits[eos_ids] = -float("inf")
        if temperature == 0:
            t = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / temperature, -1)
            t = int(torch.multinomial(probs, 1, generator=g)[0])
        out.append(t)
        ids.append(t)
        pending = [t]
    return out


@torch.inference_mode()
def _logits(model, prompt_ids: list[int], text: list[int]) -> torch.Tensor:
    """Next-token logits at each text position t (context prompt + text[:t]), float64."""
    dev = next(model.parameters()).device
    x = torch.tensor([prompt_ids + text], dtype=torch.long, device=dev)
    L = len(text)
    lg = model(input_ids=x, use_cache=False, logits_to_keep=L + 1).logits[0, :L]
    return lg.double().cpu()


def trace_fields(p_logits: torch.Tensor, q_logits: torch.Tensor, rng: np.random.Generator,
                 temperatures=TEMPERATURES, m: int = M_DRAWS) -> dict:
    """Per-position fields from target and draft logits of shape (L, V) on the same contexts."""
    p_top = torch.argmax(p_logits, -1)
    q_top_id = torch.argmax(q_logits, -1)
    rows = torch.arange(p_logits.shape[0])
    out = {"agree": (p_top == q_top_id).long().tolist(), "alpha": {},
           "alpha_greedy_draft": {}}
    for T in temperatures:
        p = torch.softmax(p_logits / T, -1)
        q = torch.softmax(q_logits / T, -1)
        out["alpha"][str(float(T))] = _round(torch.minimum(p, q).sum(-1).numpy())
        out["alpha_greedy_draft"][str(float(T))] = _round(p[rows, q_top_id].numpy())
    p1 = torch.softmax(p_logits, -1).numpy()
    q1 = torch.softmax(q_logits, -1).numpy()
    out["q_top"] = _round(q1.max(-1))
    cdf = np.cumsum(q1, -1)
    u = rng.random((q1.shape[0], m)) * cdf[:, -1:]
    draws = []
    for t in range(q1.shape[0]):
        xs = np.minimum(np.searchsorted(cdf[t], u[t], side="right"), q1.shape[1] - 1)
        qx, px = q1[t, xs], p1[t, xs]
        a = np.minimum(1.0, px / qx)
        draws.append([[round(float(qx[j]), DIGITS), round(float(a[j]), DIGITS)]
                      for j in range(m)])
    out["draws"] = draws
    return out


@torch.inference_mode()
def generate_batch(target, prompt_ids: list[list[int]], n: int, temperature: float,
                   seed: int, eos_ids: list[int], pad_id: int) -> list[list[int]]:
    """n new tokens for every prompt at once (left-padded batch), EOS banned.

    Same law per row as :func:`generate_text` — greedy, or pure sampling from
    softmax(logits / T) — through ``generate`` with every generation_config default that
    could change the law switched off (top-k, top-p, repetition penalty); EOS is banned by
    ``min_new_tokens = n``. One batched pass per step costs a few one-row passes on a CPU
    instead of one per prompt.
    """
    dev = next(target.parameters()).device
    L = max(len(p) for p in prompt_ids)
    x = torch.full((len(prompt_ids), L), pad_id, dtype=torch.long)
    mask = torch.zeros_like(x)
    for i, p in enumerate(prompt_ids):
        x[i, L - len(p):] = torch.tensor(p)
        mask[i, L - len(p):] = 1
    kw = dict(max_new_tokens=n, min_new_tokens=n, attention_mask=mask.to(dev),
              pad_token_id=pad_id, repetition_penalty=1.0)
    if eos_ids:
        kw["eos_token_id"] = list(eos_ids)
    if temperature == 0:
        kw.update(do_sample=False, top_k=None, top_p=None, temperature=None)
    else:
        kw.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
    torch.manual_seed(seed)
    out = target.generate(x.to(dev), **kw)
    return [row[L:].tolist() for row in out]


def record(target, draft, prompts: list[dict], n: int, *, seed: int = 0,
           eos_ids=(), temperatures=TEMPERATURES, m: int = M_DRAWS, log=print,
           batch: bool = False, pad_id: int = 0, text_temps=(0, 1)) -> list[dict]:
    """Traces for every prompt (dicts with id, task, split, ids), greedy and T = 1 texts."""
    rng = np.random.default_rng(seed + 7 * sum(text_temps))
    texts = {}
    if batch:
        for text_T in text_temps:
            t0 = time.perf_counter()
            outs = generate_batch(target, [pr["ids"] for pr in prompts], n, float(text_T),
                                  seed + 1000 * text_T, list(eos_ids), pad_id)
            for i, o in enumerate(outs):
                texts[i, text_T] = o
            log(f"batch T={text_T}: {len(outs)} texts in {time.perf_counter() - t0:.1f}s")
    out = []
    for i, pr in enumerate(prompts):
        for text_T in text_temps:
            t0 = time.perf_counter()
            text = texts.get((i, text_T)) or generate_text(
                target, pr["ids"], n, float(text_T), seed + 1000 * i, list(eos_ids))
            t_gen = time.perf_counter() - t0
            pl = _logits(target, pr["ids"], text)
            ql = _logits(draft, pr["ids"], text)
            rec = {"id": pr["id"], "task": pr["task"], "split": pr["split"],
                   "text_temperature": text_T, "L": len(text)}
            rec.update(trace_fields(pl, ql, rng, temperatures, m))
            # sanity: at T = 0 the text is the target's argmax (up to fp ties / EOS ban)
            rec["text_is_target_argmax"] = _round(
                (torch.argmax(pl, -1) == torch.tensor(text)).double().mean().item())
            rec["tokens"] = text
            rec["prompt_ids"] = list(pr["ids"])
            if "prompt" in pr:
                rec["prompt"] = pr["prompt"]
            if "text" in pr:
                rec["text"] = pr["text"](text)
            out.append(rec)
            log(f"{pr['id']} T={text_T}: L={len(text)} gen {t_gen:.1f}s "
                f"agree {np.mean(rec['agree']):.3f} α(1) {np.mean(rec['alpha']['1.0']):.3f}")
    return out


def dt_now() -> str:
    import datetime as dt
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def provenance(args, models: dict, note: str) -> dict:
    import platform
    return {"hardware": "cpu", "cpu": device_name("cpu"), "cpu_count": os.cpu_count(),
            "threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__, "python": platform.python_version(),
            "dtype": "float32 forward, float64 softmax",
            "date": dt_now(),
            "models": models, "n_new_tokens": args.new_tokens, "seeds": {
                "base": args.seed, "text_T1": ("torch.manual_seed(seed + 1000) before one "
                                                "batched generate" if not args.no_batch else
                                                "seed + 1000 * prompt_index (torch.Generator)"),
                "draws": "numpy default_rng(seed + 7 × Σ text temperatures recorded by the "
                         "process), in the process's prompt order"},
            "loadavg_start": list(os.getloadavg()), "note": note}


NOTE = ("Teacher-forced traces: the target's own text (greedy, and sampled at T = 1 with "
        "EOS suppressed; all prompts generated as one left-padded batch per temperature, so a "
        "near-tie can resolve differently than in an unbatched run: text_is_target_argmax "
        "gives the share of greedy positions equal to the unbatched argmax), scored in one "
        "forward pass by each model. Per position t: agree = "
        "argmax q_t == argmax p_t; alpha[T] = Σ min(p_t^T, q_t^T); alpha_greedy_draft[T] = "
        "p_t^T(argmax q_t); q_top = max q_t (T = 1); draws = m draws x ~ q_t (T = 1) as "
        "(q_t(x), min(1, p_t(x)/q_t(x))). Floats rounded to 4 digits. Shared 2-core machine "
        "(timings are not recorded here, only probabilities).")


def main(argv=None, models=None) -> dict:
    """Run the recording; ``models`` = (target, draft, tok or None, prompts) injects tiny
    in-process models for the tests (prompts then given as token ids)."""
    ap = parser(__doc__, quick="1 prompt per task, 8 tokens")
    ap.add_argument("--new-tokens", type=int, default=96)
    ap.add_argument("--per-task", type=int, default=4, help="prompts per task (≤ 4)")
    ap.add_argument("--no-batch", action="store_true", help="generate prompt by prompt")
    ap.add_argument("--text-temps", default="0,1", help="which texts: 0 (greedy), 1 (T = 1)")
    ap.add_argument("--merge", nargs="+", default=None,
                    help="merge partial files (one per --text-temps) into --out, then stop")
    args = ap.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    if args.quick:
        args.new_tokens, args.per_task = 8, 1
    log = start(args)
    t0 = log.t0

    if models is None:
        target, draft, tok = llm.load_pair(llm.OFFLINE_PAIR, "cpu")
        names = {"target": "Qwen2.5-Coder-1.5B-Instruct",
                 "draft": "Qwen2.5-Coder-0.5B-Instruct", "pair": llm.OFFLINE_PAIR}
        prompts = []
        for task, specs in PROMPTS.items():
            for i, spec in enumerate(specs[:args.per_task]):
                prompts.append({"id": f"{task}-{i}", "task": task, "split": split_of(i),
                                "ids": encode(tok, spec), "prompt": spec,
                                "text": lambda ids: tok.decode(ids)})
        eos = eos_ids(tok)
    else:
        target, draft, tok, prompts = models
        names = {"target": "tiny-target", "draft": "tiny-draft", "pair": "in-process"}
        eos = []
    log(f"loaded; {len(prompts)} prompts, {args.new_tokens} tokens each, EOS banned: {eos}")
    pad = (tok.pad_token_id if tok is not None and tok.pad_token_id is not None
           else 0)
    # date and load average at the START, read before the recording runs (until
    # 2026-12-01 they were read after it: traces_cpu.json's are end-of-run values)
    prov = provenance(args, names, NOTE)
    prov["read_at"] = "date and loadavg_start before the recording, loadavg_end after"
    traces = record(target, draft, prompts, args.new_tokens, seed=args.seed, eos_ids=eos,
                    log=log, batch=not args.no_batch, pad_id=pad,
                    text_temps=tuple(int(x) for x in args.text_temps.split(",")))
    R = {"provenance": prov,
         "temperatures": [float(T) for T in TEMPERATURES], "m_draws": M_DRAWS,
         "prompts": traces}
    R["provenance"]["loadavg_end"] = list(os.getloadavg())
    R["provenance"]["date_end"] = dt_now()
    R["provenance"]["eos_banned"] = eos
    R["provenance"]["total_s"] = round(time.perf_counter() - t0, 1)
    R["provenance"]["quick"] = bool(args.quick)
    write_result(R, args.out, f"traces_cpu{'_quick' if args.quick else ''}.json",
                 compact=True)
    return R


def merge(paths, out) -> dict:
    """One traces file from partial recordings of the same prompts (e.g. one process per
    text temperature): prompts in (id, text temperature) order, provenances kept."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    R = {"provenance": dict(parts[0]["provenance"]), "temperatures": parts[0]["temperatures"],
         "m_draws": parts[0]["m_draws"]}
    R["provenance"]["parts"] = [p["provenance"] for p in parts]
    R["provenance"]["loadavg_end"] = parts[-1]["provenance"]["loadavg_end"]
    order = {}
    for p in parts:
        for rec in p["prompts"]:
            order[rec["id"], rec["text_temperature"]] = rec
    task_order = list(PROMPTS)
    R["prompts"] = [order[k] for k in sorted(order, key=lambda k: (
        task_order.index(k[0].rsplit("-", 1)[0]) if k[0].rsplit("-", 1)[0] in task_order
        else 99, int(k[0].rsplit("-", 1)[1]), k[1]))]
    out = write_json(Path(out) if out else RESULTS / "traces_cpu.json", R, compact=True)
    print(f"merged {len(R['prompts'])} records into {out} ({out.stat().st_size / 1e3:.0f} kB)")
    return R


if __name__ == "__main__":
    main(sys.argv[1:])
