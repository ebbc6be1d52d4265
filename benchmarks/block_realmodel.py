"""Block against token-wise verification on the real pair at temperature 1 (chapter 9).

Usage (from the repository root)::

    .venv/bin/python benchmarks/block_realmodel.py            # CPU, ≈ 10 CPU-minutes
    .venv/bin/python benchmarks/block_realmodel.py --quick    # smoke test (a minute)

Writes ``specmath/data/results/block_cpu.json`` (``--out`` to override) with every run and its
provenance. Design:

* **Pairs.** For every prompt of ``benchmarks/record_traces.py`` (3 tasks × 4 prompts) and
  every repetition, one generation with ``verify="tokenwise"`` and one with
  ``verify="block"``, same k, temperature, length and generator seed, run back to back in
  a random order; the (prompt, repetition) pairs themselves run in a shuffled order, so
  slow drift of the shared machine hits both rules alike.
* **Two estimates of the gain in E[N].** (a) *Measured*: tokens per iteration N = accepted
  + 1, averaged over the iterations that drafted the full k, per prompt and rule; the gain
  is the paired difference per prompt. (b) *Prefix-conditional* (the JSON keys say
  ``exact_…`` for historical reasons): in every iteration of both arms that drafted the
  full k, from the p, q rows and the draft the loop computed anyway, Σᵢ Π_{j≤i}
  min(1, pⱼ(xⱼ)/qⱼ(xⱼ)) token-wise, which is E[τ | x] for that draft block, and Σᵢ aᵢ
  for block, which is *not* E[τ | x]: aᵢ = P(τ ≥ i | first i drafts) averages over the
  later drafts (chapter 9, lemma ch9-lem-weights), so Σᵢ aᵢ has mean E[τ] in that context
  but a single draft's E[τ | x] under block can be above or below it. The difference of
  the two sums is ≥ 0 iteration by iteration (aᵢ ≥ Π_{j≤i} min(1, rⱼ) term by term);
  given the past, its mean is the gain in that context, with far less noise than (a).
  It compares the rules on the pooled contexts both arms visited; it is not the gain
  over each rule's own contexts (iterations start at different places under the two
  rules), which (a) estimates.
* **Speed.** Tokens per CPU-second (``time.process_time``, one torch thread: on the
  shared 2-core machine the wall clock also counts waiting for a core); wall clock beside
  it. The ratio block/token-wise per prompt, geometric mean over prompts.
* **Intervals** (keys ``*_ci95``): percentile bootstrap over prompts (prompts resampled,
  pairs kept) at nominal 95 %. With 12 prompts the percentile bootstrap covers less than
  95 % (tests/test_block.py simulates it), so these are not 95 % confidence intervals;
  chapter 9 quotes none of them.
  The rule plug-ins are wrapped by the same bookkeeping (so both arms pay it).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from _common import parser, prompt_ids, provenance, start, write_result

from specmath import llm

RULES = ("tokenwise", "block")
CLOCK = "process CPU time (time.process_time), one torch thread; wall clock beside"


def exact_given_draft(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor):
    """([Π_{j≤i} min(1, rⱼ)]ᵢ, [aᵢ]ᵢ), i = 1 … k, one iteration (chapter 9).

    Token-wise, Π_{j≤i} min(1, rⱼ) = P(ℓ ≥ i | draft). For block, aᵢ = P(ℓ ≥ i | first i
    drafts) conditions on the prefix only and averages over the later drafts (lemma
    ch9-lem-weights); P(ℓ ≥ i | whole draft) = 1 − Π_{j≥i}(1 − hⱼ) differs, so Σᵢ aᵢ is an
    unbiased, prefix-conditional estimate of E[ℓ] in this context, not E[ℓ | draft]. The
    difference of the two returned sums is ≥ 0 for every draft (aᵢ ≥ Π_{j≤i} min(1, rⱼ)
    term by term); the difference of E[ℓ | draft] between the rules can have either sign.
    A prefix of length k' < k gives the same for draft length k'.
    """
    k = draft.shape[0]
    if k == 0:
        return [], []
    idx = draft.view(k, 1)
    px = p[:k].gather(1, idx)[:, 0].double()
    qx = q.gather(1, idx)[:, 0].double()
    tw, a, tws, As = 1.0, 1.0, [], []
    for i in range(k):
        r = float(px[i]) / float(qx[i]) if float(qx[i]) > 0 else float("inf")
        tw *= min(1.0, r)
        a = min(1.0, a * r) if a * float(px[i]) > 0 else 0.0
        tws.append(tw)
        As.append(a)
    return tws, As


def _wrapped(rule: str, log: list):
    fn = llm.VERIFIERS[rule]

    def verify(p, q, draft, u):
        log.append((int(draft.shape[0]), *exact_given_draft(p, q, draft)))
        return fn(p, q, draft, u)
    verify.reads = fn.reads  # the eager loop draws only the uniforms the rule reads
    return verify


def bootstrap(x: np.ndarray, stat=np.mean, n: int = 10_000, seed: int = 0) -> list[float]:
    """Percentile bootstrap interval of stat(x) over the rows of x, nominal level 95 %.

    Nominal only: with few rows (12 prompts here) its coverage is below 95 %.
    """
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n, len(x)))
    s = np.array([stat(x[i]) for i in idx])
    return [float(np.percentile(s, 2.5)), float(np.percentile(s, 97.5))]


def summarize(runs: list[dict], k: int) -> dict:
    prompts = sorted({r["prompt"] for r in runs})
    per = {}
    for pid in prompts:
        row = {"task": next(r["task"] for r in runs if r["prompt"] == pid)}
        for rule in RULES:
            rs = [r for r in runs if r["prompt"] == pid and r["rule"] == rule]
            full = [a + 1 for r in rs for a, d in zip(r["accepted"], r["drafted"], strict=True) if d == k]
            row[f"N_{rule}"] = float(np.mean(full)) if full else float("nan")
            row[f"iterations_{rule}"] = len(full)
            tok = sum(len(r["tokens"]) for r in rs)
            row[f"tps_cpu_{rule}"] = tok / sum(r["cpu_s"] for r in rs)
            row[f"tps_wall_{rule}"] = tok / sum(r["wall_s"] for r in rs)
        ex = [e for r in runs if r["prompt"] == pid for e in r["exact"] if e[0] == k]
        tw = np.array([e[1] for e in ex]).reshape(-1, k)   # P(τ ≥ i | draft), token-wise
        bl = np.array([e[2] for e in ex]).reshape(-1, k)   # aᵢ, block
        row["exact_tau_tokenwise"] = float(tw.sum(1).mean())
        row["exact_tau_block"] = float(bl.sum(1).mean())
        row["exact_gain"] = row["exact_tau_block"] - row["exact_tau_tokenwise"]
        # draft length k' ≤ k from the same draft prefixes (aᵢ depends on x₁ … xᵢ only)
        row["exact_gain_by_k"] = (bl - tw).cumsum(1).mean(0).tolist()
        row["exact_tau_tokenwise_by_k"] = tw.cumsum(1).mean(0).tolist()
        row["exact_iterations"] = len(ex)
        row["min_exact_gain_iteration"] = float((bl - tw).sum(1).min())
        row["measured_gain"] = row["N_block"] - row["N_tokenwise"]
        row["speed_ratio_cpu"] = row["tps_cpu_block"] / row["tps_cpu_tokenwise"]
        row["speed_ratio_wall"] = row["tps_wall_block"] / row["tps_wall_tokenwise"]
        per[pid] = row

    def agg(ids: list[str]) -> dict:
        g = {key: np.array([per[i][key] for i in ids]) for key in
             ("measured_gain", "exact_gain", "N_tokenwise", "N_block", "exact_tau_tokenwise",
              "exact_tau_block", "speed_ratio_cpu", "speed_ratio_wall")}
        out = {"n_prompts": len(ids)}
        for key in ("measured_gain", "exact_gain", "N_tokenwise", "N_block",
                    "exact_tau_tokenwise", "exact_tau_block"):
            out[key] = float(g[key].mean())
            out[key + "_ci95"] = bootstrap(g[key])
        for key in ("speed_ratio_cpu", "speed_ratio_wall"):
            lg = np.log(g[key])
            out[key] = float(np.exp(lg.mean()))
            out[key + "_ci95"] = [float(np.exp(v)) for v in bootstrap(lg)]
        for key in ("exact_gain_by_k", "exact_tau_tokenwise_by_k"):
            m = np.array([per[i][key] for i in ids])
            out[key] = m.mean(0).tolist()
            out[key + "_ci95"] = [bootstrap(m[:, j]) for j in range(m.shape[1])]
        out["exact_relative_gain_EN"] = float(
            (g["exact_tau_block"] + 1).mean() / (g["exact_tau_tokenwise"] + 1).mean() - 1)
        return out

    tasks = sorted({per[i]["task"] for i in prompts})
    return {"per_prompt": per, "all": agg(prompts),
            "by_task": {t: agg([i for i in prompts if per[i]["task"] == t]) for t in tasks}}


def main(argv=None, models=None) -> dict:
    ap = parser(__doc__)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--reps", type=int, default=1, help="generations per (prompt, rule)")
    args = ap.parse_args(argv)
    if args.quick:
        args.new_tokens, args.reps = 8, 1
    log = start(args)
    t0 = log.t0
    if models is None:
        target, draft, tok = llm.load_pair()
        prompts = prompt_ids(tok)
        if args.quick:
            prompts = dict(list(prompts.items())[:2])
    else:  # tests: tiny in-process models; prompts {id: (task, token ids)}
        target, draft, prompts = models
    R = {"provenance": provenance(args, clock=CLOCK, shared_machine=True), "k": args.k,
         "temperature": args.temperature,
         "new_tokens": args.new_tokens, "reps": args.reps, "quick": bool(args.quick),
         "prompt_tokens": {pid: len(ids) for pid, (_, ids) in prompts.items()}}
    rng = np.random.default_rng(args.seed)
    jobs = [(pid, rep) for pid in prompts for rep in range(args.reps)]
    order = rng.permutation(len(jobs))
    runs = []
    pid0 = next(iter(prompts))
    llm.speculative_generate(target, draft, torch.tensor([prompts[pid0][1]]), k=args.k,
                             temperature=args.temperature, max_new_tokens=4,
                             generator=torch.Generator().manual_seed(0))  # warm-up
    for j, o in enumerate(order):
        pid, rep = jobs[o]
        task, ids = prompts[pid]
        seed = args.seed * 100_003 + int(o)
        for rule in (RULES if rng.random() < 0.5 else RULES[::-1]):
            exact: list = []
            name = f"_bench_{rule}"
            llm.VERIFIERS[name] = _wrapped(rule, exact)
            try:
                c0, w0 = time.process_time(), time.perf_counter()
                res = llm.speculative_generate(
                    target, draft, torch.tensor([ids]), k=args.k,
                    temperature=args.temperature, max_new_tokens=args.new_tokens,
                    generator=torch.Generator().manual_seed(seed), verify=name)
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            finally:
                del llm.VERIFIERS[name]
            runs.append({"prompt": pid, "task": task, "rep": rep, "rule": rule, "seed": seed,
                         "tokens": res.tokens, "accepted": res.accepted,
                         "drafted": res.drafted, "cpu_s": cpu, "wall_s": wall,
                         "target_time_s": res.target_time_s,
                         "draft_time_s": res.draft_time_s,
                         "exact": [[kk, np.round(a, 6).tolist(), np.round(b, 6).tolist()]
                                   for kk, a, b in exact]})
            n_mean = np.mean(res.tokens_per_iteration)
            log(f"{j + 1}/{len(jobs)} {pid} rep {rep} {rule:9s} N̄ = {n_mean:.3f} "
                f"cpu {cpu:.1f}s wall {wall:.1f}s")
    R["runs"] = runs
    R["summary"] = summarize(runs, args.k)
    R["provenance"]["loadavg_end"] = os.getloadavg()
    R["provenance"]["total_wall_s"] = time.perf_counter() - t0
    out = write_result(R, args.out, "block_cpu_quick.json" if args.quick else "block_cpu.json")
    a = R["summary"]["all"]
    log(f"exact gain in E[N] {a['exact_gain']:.4f} {a['exact_gain_ci95']}, measured "
        f"{a['measured_gain']:.4f} {a['measured_gain_ci95']}, speed ratio (cpu) "
        f"{a['speed_ratio_cpu']:.3f} {a['speed_ratio_cpu_ci95']} → {out}")
    return R


if __name__ == "__main__":
    main()
