"""The exact multi-draft ceiling and deterministic top-m candidates on the real pair (ch. 10).

Usage (from the repository root)::

    .venv/bin/python benchmarks/multidraft_ceiling.py           # CPU, about 15 minutes
    .venv/bin/python benchmarks/multidraft_ceiling.py --quick   # 2 prompts, 8 tokens

Same prompts, seeds and teacher-forced rows as ``benchmarks/multidraft_realmodel.py``
(whose recorded file keeps per-position summaries, not the rows): the target samples a
text at T = 1, both models score it, and at every position t the script records

* ``alpha``: Σ min(p_t, q_t), to check that the rows reproduce ``multidraft_cpu.json``;
* ``ceiling_m``: the exact optimal-transport ceiling OT_m(p_t, q_t) for m i.i.d.
  candidates, by ``specmath.multidraft_ot_ceiling_sorted`` (theorem ch10-thm-sorted: the
  subset minimum is reached on a prefix of the tokens sorted by p/q, so O(V log V));
* ``upper_m``: the looser bound U_m = Σ_y min(p_t(y), 1 − (1 − q_t(y))^m);
* ``accept_m``: recursive rejection with m i.i.d. candidates (``multidraft_acceptance``);
* ``topk_m``: p_t(top-m tokens of q_t), the chance that one of the draft's m most likely
  tokens, verified one-hot candidate by candidate, is kept (``topk_keep_probability``).

m = 1 … 4. Writes ``specmath/data/results/multidraft_ceiling_cpu.json`` with provenance.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

import specmath as sm
from specmath import llm
from specmath import multidraft as md

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from multidraft_realmodel import DTYPE, provenance  # noqa: E402
from record_traces import PROMPTS, _logits, encode, generate_text  # noqa: E402

MS = (1, 2, 3, 4)


def position_rows(p: np.ndarray, q: np.ndarray) -> dict:
    """Per-position α, exact ceiling, U_m, recursive rejection and top-m, rows (L, V)."""
    out: dict = {"alpha": np.minimum(p, q).sum(-1).tolist()}
    for key, fn in (("ceiling_m", md.multidraft_ot_ceiling_sorted),
                    ("topk_m", md.topk_keep_probability)):
        out[key] = {str(m): np.atleast_1d(fn(p, q, m)).tolist() for m in MS}
    out["upper_m"] = {str(m): np.minimum(p, 1 - (1 - q) ** m).sum(-1).tolist() for m in MS}
    out["accept_m"] = {str(m): np.atleast_1d(sm.multidraft_acceptance(p, q, m)).tolist()
                       for m in MS}
    return out


def main(argv=None, models=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--prompts-per-task", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, to test the script")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.new_tokens = 8
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if models is None:
        target, draft, tok = llm.load_pair()
        prompts = {f"{task}-{i}": (task, encode(tok, spec))
                   for task, specs in PROMPTS.items()
                   for i, spec in enumerate(specs[:args.prompts_per_task])}
        if args.quick:
            prompts = dict(list(prompts.items())[:2])
        eos = sorted({i for i in (tok.eos_token_id, tok.pad_token_id) if i is not None})
    else:  # tests: tiny in-process models; prompts {id: (task, token ids)}
        target, draft, prompts = models
        eos = []
    rows = []
    for j, (pid, (task, ids)) in enumerate(prompts.items()):
        text = generate_text(target, ids, args.new_tokens, 1.0, args.seed * 1000 + j, eos)
        p = torch.softmax(_logits(target, ids, text), -1).numpy()
        q = torch.softmax(_logits(draft, ids, text), -1).numpy()
        r = {"prompt": pid, "task": task, "L": len(text), "seed": args.seed * 1000 + j}
        r.update(position_rows(p, q))
        rows.append(r)
        print(f"[{time.perf_counter() - t0:6.1f}s] {pid}: α = {np.mean(r['alpha']):.3f}, "
              f"OT_2 = {np.mean(r['ceiling_m']['2']):.3f}", flush=True)
    prov = provenance(args, dtype=DTYPE, temperature=1.0, shared_machine=True,
                      method="exact from teacher-forced rows; see the docstring")
    R = {"provenance": prov, "ms": list(MS), "quick": bool(args.quick),
         "runtime_s": time.perf_counter() - t0, "prompts": rows}
    out = (Path(args.out) if args.out
           else ROOT / "specmath" / "data" / "results" / "multidraft_ceiling_cpu.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(R, indent=1))
    return R


if __name__ == "__main__":
    main()
