"""Several candidates at the first draft position on the real pair, exactly (chapter 10).

Usage (from the repository root)::

    .venv/bin/python benchmarks/multidraft_realmodel.py           # CPU, a few minutes
    .venv/bin/python benchmarks/multidraft_realmodel.py --quick   # 2 prompts, 8 tokens

Not a timed decode: the gain of a second candidate is **computed exactly** from
teacher-forced rows, which on one CPU core is cheaper and far less noisy than running both
decoders. For each prompt (the first ``--prompts-per-task`` of each task of
``benchmarks/record_traces.py``) the target samples a text at T = 1 (seeded, EOS banned);
each model then scores prompt + text in one forward pass, giving p_t and q_t (T = 1) at
every text position t: the contexts that speculative decoding visits, since its output
follows the target. Per position the script records

* ``alpha``: Σ min(p_t, q_t), the chance one candidate is kept (m = 1);
* ``accept_m``: P(some of m i.i.d. candidates is kept) under recursive rejection,
  ``specmath.multidraft_acceptance``, m = 1 … 4 (exact given the context);
* ``upper_m``: Σ_y min(p_t(y), 1 − (1 − q_t(y))^m), an upper bound U_m on the
  optimal-transport ceiling. The linear program is too large at V = 151,936, but the
  exact ceiling is a sort (chapter 10, theorem ch10-thm-sorted):
  ``benchmarks/multidraft_ceiling.py`` re-scores the same texts and records it.

E[N] for a chain of k drafts started at position t is 1 + α_t (1 + α_{t+1} + α_{t+1} α_{t+2}
+ …) (k − 1 factors after the first); with a second candidate at the first position (a tree:
two children at the root, the chain below the first) it gains a₂ = A_t^{(2)} − α_t, the
chance that the second candidate is the one kept (then a leaf: a bonus token follows). The
later factors are evaluated on the text's own context, not on the context that follows the
kept candidate (whose law given acceptance is min(p, q)/α, not p), the approximation
chapter 7 also makes. Interval (key ``bootstrap_nominal95``): a percentile bootstrap over
the prompts at a nominal level of 95 %. With 6 prompts the percentile bootstrap covers
well below its nominal level (tests/test_block.py simulates it at 12 prompts), so it is a
spread, not a confidence interval; chapter 10 quotes the range over prompts instead.
Writes ``specmath/data/results/multidraft_cpu.json`` with provenance.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from _common import parser, prompt_ids, provenance, start, write_result
from record_traces import _logits, generate_text

import specmath as sm
from specmath import llm

MS = (1, 2, 3, 4)
DTYPE = "float32 weights, probabilities in float64"
METHOD = "exact from teacher-forced rows (no timed decode); see the docstring"
KS = (1, 2, 3, 4, 5)


def position_rows(p: np.ndarray, q: np.ndarray) -> dict:
    """Per-position acceptance with m candidates, and the upper bound, rows (L, V)."""
    acc = {str(m): np.atleast_1d(sm.multidraft_acceptance(p, q, m)).tolist() for m in MS}
    up = {str(m): np.minimum(p, 1 - (1 - q) ** m).sum(axis=-1).tolist() for m in MS}
    return {"accept_m": acc, "upper_m": up}


def chain_EN(alpha: np.ndarray, k: int, second=None) -> np.ndarray:
    """E[N] of a k-draft chain started at each position t (eq. ch10-tree-value).

    With ``second`` (P(two candidates kept) per position): the tree with two candidates
    at the first position, the chain of k − 1 further drafts below the first candidate only,
    so E[N] = 1 + a₁ (1 + α_{t+1} + α_{t+1} α_{t+2} + …) + a₂ with a₁ = α_t and
    a₂ = second_t − α_t (the second candidate kept: a leaf, no further drafts).
    """
    L = alpha.size
    out = []
    for t in range(L - k + 1):
        tail, prod = 1.0, 1.0
        for j in range(1, k):
            prod *= alpha[t + j]
            tail += prod
        en = 1.0 + alpha[t] * tail
        if second is not None:
            en += second[t] - alpha[t]
        out.append(en)
    return np.asarray(out)


def bootstrap(x, n: int = 10_000, seed: int = 0) -> list[float]:
    """Percentile bootstrap of the mean, nominal 95 % (not a 95 % interval at 6 prompts)."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    s = x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)
    return [float(np.percentile(s, 2.5)), float(np.percentile(s, 97.5))]


def summarise(rows: list[dict]) -> dict:
    """Means over positions per prompt, then over prompts, with bootstrap intervals."""
    S: dict = {"per_prompt": {}, "overall": {}}
    per = {}
    for r in rows:
        a = np.asarray(r["accept_m"]["1"])
        d = {f"accept_{m}": float(np.mean(r["accept_m"][str(m)])) for m in MS}
        d.update({f"upper_{m}": float(np.mean(r["upper_m"][str(m)])) for m in MS})
        for k in KS:
            if a.size < k:
                continue
            e1 = chain_EN(a, k)
            e2 = chain_EN(a, k, second=np.asarray(r["accept_m"]["2"]))
            d[f"EN_k{k}_m1"], d[f"EN_k{k}_m2"] = float(e1.mean()), float(e2.mean())
            d[f"gain_k{k}"] = float((e2 - e1).mean())
        per[r["prompt"]] = d
    S["per_prompt"] = per
    keys = sorted({k for d in per.values() for k in d})
    for key in keys:
        vals = [d[key] for d in per.values() if key in d]
        S["overall"][key] = {"mean": float(np.mean(vals)),
                             "bootstrap_nominal95": bootstrap(vals)}
    return S


def parse(doc: str, argv=None):
    """The arguments of this script and of ``multidraft_ceiling.py`` (same texts)."""
    ap = parser(doc)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--prompts-per-task", type=int, default=2)
    args = ap.parse_args(argv)
    if args.quick:
        args.new_tokens = 8
    return args


def pair_and_prompts(args, models=None):
    """(target, draft, prompts {id: (task, ids)}, EOS ids): the offline pair and the first
    ``--prompts-per-task`` prompts of each task (two in all with --quick), or the tests'
    tiny models ``(target, draft, prompts)``."""
    if models is not None:
        return (*models, [])
    target, draft, tok = llm.load_pair()
    prompts = prompt_ids(tok, args.prompts_per_task)
    if args.quick:
        prompts = dict(list(prompts.items())[:2])
    return target, draft, prompts, sorted({i for i in (tok.eos_token_id, tok.pad_token_id)
                                           if i is not None})


def scored_rows(doc: str, argv, models, fields, describe):
    """Parse the arguments, load the pair and, per prompt j, let the target write a text
    at T = 1 (seed 1000·--seed + j, EOS banned) and score it with both models:
    ``fields(p, q)`` per text, ``describe(row)`` logged. Returns (args, rows, t0)."""
    args = parse(doc, argv)
    log = start(args)
    target, draft, prompts, eos = pair_and_prompts(args, models)
    rows = []
    for j, (pid, (task, ids)) in enumerate(prompts.items()):
        seed = args.seed * 1000 + j
        text = generate_text(target, ids, args.new_tokens, 1.0, seed, eos)
        p = torch.softmax(_logits(target, ids, text), -1).numpy()
        q = torch.softmax(_logits(draft, ids, text), -1).numpy()
        rows.append({"prompt": pid, "task": task, "L": len(text), "seed": seed,
                     **fields(p, q)})
        log(f"{pid}: {describe(rows[-1])}")
    return args, rows, log.t0


def main(argv=None, models=None) -> dict:
    args, rows, t0 = scored_rows(__doc__, argv, models, position_rows, lambda r: (
        f"α = {np.mean(r['accept_m']['1']):.3f}, m = 2: {np.mean(r['accept_m']['2']):.3f}"))
    R = {"provenance": provenance(args, dtype=DTYPE, temperature=1.0, shared_machine=True,
                                  method=METHOD), "ms": list(MS), "ks": list(KS),
         "quick": bool(args.quick), "runtime_s": time.perf_counter() - t0,
         "prompts": rows, "summary": summarise(rows)}
    write_result(R, args.out, "multidraft_cpu.json")
    return R


if __name__ == "__main__":
    main()
