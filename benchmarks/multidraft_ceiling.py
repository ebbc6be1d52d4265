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

import time

import numpy as np
from _common import provenance, write_result
from multidraft_realmodel import DTYPE, scored_rows

import specmath as sm
from specmath import multidraft as md

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
    args, rows, t0 = scored_rows(__doc__, argv, models, position_rows, lambda r: (
        f"α = {np.mean(r['alpha']):.3f}, OT_2 = {np.mean(r['ceiling_m']['2']):.3f}"))
    prov = provenance(args, dtype=DTYPE, temperature=1.0, shared_machine=True,
                      method="exact from teacher-forced rows; see the docstring")
    R = {"provenance": prov, "ms": list(MS), "quick": bool(args.quick),
         "runtime_s": time.perf_counter() - t0, "prompts": rows}
    write_result(R, args.out, "multidraft_ceiling_cpu.json")
    return R


if __name__ == "__main__":
    main()
