"""Benchmark: vectorized Monte Carlo of N against a plain per-iteration Python loop.

Times ``specmath.simulate_tokens_per_iteration`` and the baseline
``specmath.simulation.simulate_tokens_per_iteration_loop`` on the same α and k, in the same
run, on one thread. Prints the ratio of time per iteration and the simulated draft tokens
per second (k draft tokens per iteration). Targets (issue 2): at least 100× the loop and
at least 10 million simulated draft tokens per second on one core.

Usage: python benchmarks/bench_simulation.py [--alpha 0.8] [--k 5] [--json PATH]
"""

from __future__ import annotations

import os

# One thread, set before numpy is imported (its BLAS/OpenMP pools read these at start).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import specmath  # noqa: E402
from specmath.simulation import simulate_tokens_per_iteration_loop  # noqa: E402

TARGET_RATIO = 100.0
TARGET_TOKENS_PER_S = 10e6


def best_time(fn, repeats: int) -> float:
    """Smallest wall time of ``repeats`` calls (the least disturbed by other processes)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(alpha: float, k: int, n_vec: int, n_loop: int, repeats: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    # warm up both paths (imports, allocator, first-call overheads)
    specmath.simulate_tokens_per_iteration(alpha, k, 1000, rng)
    simulate_tokens_per_iteration_loop(alpha, k, 1000, rng)
    t_vec = best_time(lambda: specmath.simulate_tokens_per_iteration(alpha, k, n_vec, rng),
                      repeats)
    t_loop = best_time(lambda: simulate_tokens_per_iteration_loop(alpha, k, n_loop, rng),
                       repeats)
    per_it_vec, per_it_loop = t_vec / n_vec, t_loop / n_loop
    # sanity: both estimate E[N]
    mean_vec = float(specmath.simulate_tokens_per_iteration(alpha, k, n_vec, rng).mean())
    return {
        "alpha": alpha,
        "k": k,
        "vectorized": {"iterations": n_vec, "seconds": t_vec, "ns_per_iteration": per_it_vec * 1e9,
                       "draft_tokens_per_s": k / per_it_vec},
        "loop": {"iterations": n_loop, "seconds": t_loop, "ns_per_iteration": per_it_loop * 1e9,
                 "draft_tokens_per_s": k / per_it_loop},
        "ratio": per_it_loop / per_it_vec,
        "mean_N_vectorized": mean_vec,
        "expected_N": specmath.expected_tokens(alpha, k),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.8)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--n-vectorized", type=int, default=2_000_000)
    ap.add_argument("--n-loop", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.k < 1:
        ap.error("--k must be ≥ 1 (draft tokens per second counts k per iteration)")

    r = run(args.alpha, args.k, args.n_vectorized, args.n_loop, args.repeats, args.seed)
    r["environment"] = {
        "python": platform.python_version(), "numpy": np.__version__,
        "specmath": specmath.__version__, "machine": platform.machine(),
        "processor": platform.processor() or "unknown", "system": platform.system(),
        "threads": 1, "repeats": args.repeats, "timing": "best of repeats, time.perf_counter",
    }
    v, lp = r["vectorized"], r["loop"]
    print(f"simulate_tokens_per_iteration benchmark (α = {args.alpha}, k = {args.k}, one thread)")
    print(f"  python {r['environment']['python']}, numpy {np.__version__}, "
          f"{platform.system()} {platform.machine()}")
    print(f"  vectorized: {v['iterations']:>10,} iterations in {v['seconds']:.4f} s "
          f"= {v['ns_per_iteration']:8.1f} ns/iteration, "
          f"{v['draft_tokens_per_s'] / 1e6:8.1f} M draft tokens/s")
    print(f"  loop:       {lp['iterations']:>10,} iterations in {lp['seconds']:.4f} s "
          f"= {lp['ns_per_iteration']:8.1f} ns/iteration, "
          f"{lp['draft_tokens_per_s'] / 1e6:8.2f} M draft tokens/s")
    print(f"  ratio (loop time ÷ vectorized time per iteration): {r['ratio']:.0f}×")
    print(f"  mean N: {r['mean_N_vectorized']:.4f} (E[N] = {r['expected_N']:.4f})")
    ok_ratio = r["ratio"] >= TARGET_RATIO
    ok_rate = v["draft_tokens_per_s"] >= TARGET_TOKENS_PER_S
    print(f"  target ≥ {TARGET_RATIO:.0f}× the loop: {'met' if ok_ratio else 'MISSED'}; "
          f"target ≥ {TARGET_TOKENS_PER_S / 1e6:.0f} M draft tokens/s: "
          f"{'met' if ok_rate else 'MISSED'}")
    r["targets_met"] = bool(ok_ratio and ok_rate)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=2)
        print(f"  wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
