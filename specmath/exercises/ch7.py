"""Exercise answers for chapter 7 (computed, never typed).

Every answer is computed from the recorded CPU benchmark (``book/results/realmodel_cpu.json``,
the same file the chapter reads) and the specmath core.
"""

from __future__ import annotations

from ..speedup import (
    alpha_from_acceptance_rate,
    expected_tokens,
    optimal_k,
    speedup,
    speedup_with_verification_cost,
)
from . import register


def _R() -> dict:
    from ..plots.realmodel import load_results
    R = load_results("cpu")
    if R is None:
        raise RuntimeError("the recorded benchmark book/results/realmodel_cpu.json is not "
                           "available (no checkout and no network)")
    return R


def _alpha_code_greedy() -> float:
    return _R()["sweep"]["alpha"]


def _costs() -> dict:
    """The costs the chapter's sweep predictions use: measured inside the sweep's runs."""
    R = _R()
    return R.get("costs_in_run", R["costs"])


def _c() -> float:
    return _costs()["c"]


def _V(k: int) -> float:
    return _costs()["V"][str(k)]


# ch7-ex1: chapter 5's prediction at k = 2 from the measured α (code, greedy) and c
register("ch7-ex1", lambda: speedup(_alpha_code_greedy(), 2, _c()), rtol=1e-3,
         hint="S = E[N] / (1 + k/c) with E[N] = (1 − α^(k+1)) / (1 − α).")

# ch7-ex2: the refined prediction at k = 2 with the measured V(2)
register("ch7-ex2", lambda: speedup_with_verification_cost(
    _alpha_code_greedy(), 2, _c(), _V(2)), rtol=1e-3,
    hint="replace the 1 in the denominator by V(2).")

# ch7-ex3: α from the accepted ÷ drafted rate of the chat run at T = 1
register("ch7-ex3", lambda: alpha_from_acceptance_rate(
    _R()["alpha"]["runs"]["chat@1.0"]["acceptance_rate"], _R()["alpha"]["k"]), rtol=1e-3,
    hint="invert rate = α(1 − α^k) / (k(1 − α)); specmath.alpha_from_acceptance_rate does it.")

# ch7-ex4: the largest verification cost V at which k = 4 still breaks even (S = 1)
register("ch7-ex4", lambda: expected_tokens(_alpha_code_greedy(), 4) - 4 / _c(), rtol=1e-3,
         hint="solve E[N] / (k/c + V) = 1 for V.")

# ch7-ex5: the best k if verification were free of extra cost (V = 1), at the measured α, c
register("ch7-ex5", lambda: optimal_k(_alpha_code_greedy(), _c()), rtol=0, atol=0.5,
         hint="that is chapter 5's optimal_k.")
