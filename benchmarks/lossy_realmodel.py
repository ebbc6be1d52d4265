"""Lossy acceptance on the real pair, exactly per position (chapter 8).

Usage (from the repository root)::

    .venv/bin/python benchmarks/lossy_realmodel.py            # CPU, about 10 min, 1 core
    .venv/bin/python benchmarks/lossy_realmodel.py --quick    # 1 prompt, 8 tokens

Teacher forcing, as in ``benchmarks/record_traces.py`` (whose prompts and helpers it
reuses): for every prompt of ``_common.PROMPTS`` (``--per-task`` of each task; the
texts are a demonstration, not a sample from a stated population) the **target**
samples a text at temperature 1 (seeded, EOS banned); then each model scores prompt +
text in one forward pass, which gives the target's p_t and the draft's q_t at every
position t of that text. At T = 1 the script computes per position, exactly (no
sampling):

* ``alpha``: Σ min(p_t, q_t), the exact rule's acceptance;
* ``alpha_greedy``: p_t(argmax q_t), a one-hot (greedy) draft's acceptance;
* ``lenient[l]``: (β, TV) of the lenient rule min(1, p/(l·q)) with residual
  norm(max(0, p − q)), for each l of ``--lenience``;
* ``typical[eps]``: (β, TV) of typical acceptance p(x) > min(ε, δ·e^{−H(p)}) with the
  best residual, for each ε of ``--eps`` and δ = ``--delta``.

Writes ``specmath/data/results/lossy_cpu.json`` with provenance (floats rounded to 5 digits).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from _common import PROMPTS, encode, eos_ids, parser, start, write_result
from record_traces import _logits, generate_text

import specmath as sm

LENIENCE = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1)
EPS = (0.001, 0.01, 0.03, 0.09, 0.3)
DELTA = 0.3
DIGITS = 5


def _r(a) -> list:
    return np.round(np.asarray(a, dtype=float), DIGITS).tolist()


def position_fields(p: np.ndarray, q: np.ndarray, lenience, eps, delta) -> dict:
    """Exact per-position quantities from (L, V) target and draft rows at T = 1."""
    out = {"alpha": _r(sm.acceptance_probability(p, q)),
           "alpha_greedy": _r(sm.greedy_draft_acceptance(p, q)),
           "lenient": {}, "typical": {}}
    for l in lenience:
        b = sm.lenient_acceptance(p, q, l)
        tv = sm.tv_distance(sm.lenient_output_distribution(p, q, l), p)
        out["lenient"][f"{l:g}"] = {"beta": _r(b), "tv": _r(tv)}
    for e in eps:
        b = sm.typical_acceptance(p, q, e, delta)
        tv = sm.tv_distance(sm.typical_output_distribution(p, q, e, delta), p)
        out["typical"][f"{e:g}"] = {"beta": _r(b), "tv": _r(tv)}
    return out


def main(argv=None, models=None) -> dict:
    """Run; ``models`` = (target, draft, prompts as token-id lists) injects tiny models."""
    ap = parser(__doc__, quick="1 prompt, 8 tokens")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--delta", type=float, default=DELTA)
    ap.add_argument("--per-task", type=int, default=None,
                    help="prompts per task (default: all of _common.PROMPTS)")
    args = ap.parse_args(argv)
    if args.per_task is not None and args.per_task < 1:
        raise ValueError(f"--per-task must be at least 1, got {args.per_task}")
    if args.quick:
        args.new_tokens = 8
    t0 = start(args).t0
    load0 = list(os.getloadavg())
    if models is None:
        from specmath import llm
        target, draft, tok = llm.load_pair(llm.OFFLINE_PAIR, "cpu")
        names = {"target": "Qwen2.5-Coder-1.5B-Instruct",
                 "draft": "Qwen2.5-Coder-0.5B-Instruct", "pair": llm.OFFLINE_PAIR}
        tasks = list(PROMPTS)[:1] if args.quick else list(PROMPTS)
        per = 1 if args.quick else args.per_task
        prompts = [{"id": f"{t}-{j}", "task": t, "ids": encode(tok, spec)}
                   for t in tasks for j, spec in enumerate(PROMPTS[t][:per])]
        eos = eos_ids(tok)
    else:
        target, draft, ids = models
        names = {"target": "tiny-target", "draft": "tiny-draft", "pair": "in-process"}
        prompts = [{"id": f"tiny-{i}", "task": "tiny", "ids": list(x)} for i, x in enumerate(ids)]
        eos = []
    recs = []
    for i, pr in enumerate(prompts):
        text = generate_text(target, pr["ids"], args.new_tokens, 1.0,
                                args.seed + 1000 * i, eos)
        p = torch.softmax(_logits(target, pr["ids"], text), -1).numpy()
        q = torch.softmax(_logits(draft, pr["ids"], text), -1).numpy()
        rec = {"id": pr["id"], "task": pr["task"], "L": len(text), "tokens": text}
        rec.update(position_fields(p, q, LENIENCE, EPS, args.delta))
        recs.append(rec)
        print(f"[{time.perf_counter() - t0:6.1f}s] {pr['id']}: α = "
              f"{np.mean(rec['alpha']):.3f}", flush=True)
    R = {"provenance": {
            "hardware": "cpu (shared 2-core machine; only probabilities are recorded, no "
                        "timings)", "threads": torch.get_num_threads(),
            "torch": torch.__version__, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                              time.gmtime()),
            "models": names, "n_new_tokens": args.new_tokens, "temperature": 1.0,
            "seed": args.seed, "text": "sampled from the target at T = 1 (torch.Generator "
            "seed + 1000·prompt index), EOS banned; one forward pass per model scores it",
            "dtype": "float32 forward, float64 softmax", "delta": args.delta,
            "lenience": list(LENIENCE), "eps": list(EPS), "quick": bool(args.quick),
            "n_prompts": len(prompts),
            "loadavg_start": load0, "loadavg_end": list(os.getloadavg()),
            "total_s": round(time.perf_counter() - t0, 1)},
         "prompts": recs}
    write_result(R, args.out, f"lossy_cpu{'_quick' if args.quick else ''}.json")
    return R


if __name__ == "__main__":
    main()
