"""Exercise answers for chapter 7 (computed, never typed).

Every answer is computed from the files the chapter reads — the recorded CPU benchmark
(``realmodel_cpu.json``) and the traces (``traces_cpu.json``), shipped in ``specmath/data/results`` —
with the specmath core.
"""

from __future__ import annotations

import numpy as np

from ..speedup import alpha_from_acceptance_rate, expected_tokens
from ..traces import greedy_iterations, load_traces, select, tokens_per_iteration_greedy
from . import register


def _R() -> dict:
    from ..plots.realmodel import load_results
    return load_results("cpu")


def _costs() -> tuple[float, np.ndarray]:
    """c and V(k), k = 0 … k_max, as the chapter computes them: medians over the cost
    blocks of the per-block ratios."""
    C = _R()["costs"]
    sizes = sorted(int(m) for m in C["target"])
    tT = {m: np.array(C["target"][str(m)]) for m in sizes}
    c = float(np.median(tT[1] / np.array(C["draft"]["1"])))
    V = np.array([np.median(tT[m] / tT[1]) for m in sizes])
    return c, V


def _greedy(**kw) -> list[dict]:
    return select(load_traces(), text_temperature=0, **kw)


EX1_L, EX1_K = 24, 3


def _ex1() -> int:
    ag = next(r for r in _greedy() if r["id"] == "chat-1")["agree"][:EX1_L]
    return len(greedy_iterations(ag, EX1_K)[0])


def _ex2() -> np.ndarray:
    A = _R()["alpha"]
    n = np.array([r["positions"]["iterations"] for r in A["runs"].values()], dtype=float)
    a = np.array([r["alpha_sum_min_reached"] for r in A["runs"].values()])
    return np.array([(n * a ** (i + 1)).sum() / (n * a ** i).sum() for i in range(A["k"])])


def _ex3() -> float:
    A = _R()["alpha"]
    return float(alpha_from_acceptance_rate(A["runs"]["chat@1.0"]["acceptance_rate"],
                                            A["k"]))


def _ex4() -> float:
    c, _ = _costs()
    a = float(np.mean([np.mean(r["agree"]) for r in _greedy(task="code")]))
    return float(expected_tokens(a, 4) - 4 / c)


def _ex5() -> list[float]:
    c, V = _costs()
    ks = np.arange(1, V.size)

    def speedups(split: str) -> np.ndarray:
        texts = _greedy(split=split)
        Nbar = np.array([np.concatenate([tokens_per_iteration_greedy(r["agree"], k)
                                         for r in texts]).mean() for k in ks])
        return Nbar / (ks / c + V[1:])

    k = int(ks[np.argmax(speedups("train"))])
    return [k, float(speedups("test")[k - 1])]


# ch7-ex1: target passes of greedy decoding with k = 3 along chat-1's first 24 agreements
register("ch7-ex1", _ex1, rtol=0, atol=0.5,
         hint=("How many target passes does an iteration cost, and how many tokens "
              "does it emit?"))

# ch7-ex2: the pooled acceptance by position that survivorship alone predicts
register("ch7-ex2", _ex2, rtol=1e-3,
         hint=("Count, in each run, how often each position is reached and how often "
              "it is accepted, then pool."))

# ch7-ex3: α from the accepted ÷ drafted rate of the chat run at T = 1 (Newton by hand)
register("ch7-ex3", _ex3, rtol=1e-3,
         hint=("The rate grows monotonically with α, so any one-dimensional "
              "root-finder will do."))

# ch7-ex4: the largest verification cost V at which k = 4 still breaks even (S = 1)
register("ch7-ex4", _ex4, rtol=1e-3, hint=("At break-even the speedup is exactly one; solve that for the "
              "verification cost."))

# ch7-ex5: k chosen on the train split's greedy texts, and its predicted speedup on the
# test split (measured c and V(k))
register("ch7-ex5", _ex5, rtol=1e-3,
         hint=("Choose k on the train texts only; then price that same k on the test "
              "texts, pooling each split's iterations before pricing them."))


def _ex6() -> list[float]:
    """Medians over the blocks of layers_cpu.json: the draft ÷ target GB per CPU second
    of the head and of a layer inside the pass, within the draft the head's GB/s ÷ a
    layer's, and within the draft and the target the GB/s of a layer's matrix products
    called alone ÷ the head's in the pass (reviews R8a finding 15, R9b finding 2)."""
    from ..notebook import load_result
    R = load_result("layers_cpu.json")
    b = {r: R["models"][r]["bytes"] for r in ("target", "draft")}
    lay = {r: np.mean(R["in_pass_cpu_s"][r]["layers_s"], axis=1) for r in b}
    head = {r: np.array(R["in_pass_cpu_s"][r]["head_s"]) for r in b}

    def rate(r, part, t):
        return b[r][part] / t

    lin = {r: np.array(R["cpu_s"][r]["linears"]) for r in b}
    return [float(np.median(rate("draft", "head", head["draft"])
                            / rate("target", "head", head["target"]))),
            float(np.median(rate("draft", "layer", lay["draft"])
                            / rate("target", "layer", lay["target"]))),
            float(np.median(rate("draft", "head", head["draft"])
                            / rate("draft", "layer", lay["draft"])))] + [
        float(np.median(rate(r, "linears", lin[r]) / rate(r, "head", head[r])))
        for r in ("draft", "target")]


# ch7-ex6: from layers_cpu.json, per-block medians of draft ÷ target GB/s (head, layer in
# the pass), the draft's head ÷ layer GB/s, products alone ÷ head GB/s in each model
register("ch7-ex6", _ex6, rtol=1e-3,
         hint=("Form the ratio block by block, from two times of the same block, and "
              "take the median of the ratios, not the ratio of the medians."))
