"""Exercise answers for chapter 0, the preface (computed, never typed).

``DATA`` holds the inputs the exercises state; the notebook shows them from here, so the
statement and the checker can never disagree.
"""

import numpy as np

from .. import published
from . import register

_CHEN = {r["quantity"]: r["value"] for r in published.load("chen2023")
         if r["quantity"] != "speedup"}

#: Inputs of the preface's warm-up exercises.
DATA = {
    # ch0-ex1: Leviathan et al.'s cost coefficient (draft time ÷ target time)
    "c_leviathan": 0.05,
    # ch0-ex2: Chen et al.'s letters: p_C is the DRAFT, q_C the TARGET; the draft proposed
    # token x_C
    "p_chen": np.array([0.50, 0.30, 0.15, 0.05]),
    "q_chen": np.array([0.35, 0.20, 0.30, 0.15]),
    "x_chen": 0,
    # ch0-ex3: Chen et al. (2023), Chinchilla 70B target and 4B draft, ms per token
    # (from specmath/data/published/chen2023.json)
    "chen_target_ms": _CHEN["target_ms_per_token"],
    "chen_draft_ms": _CHEN["draft_ms_per_token"],
    # ch0-ex4: softmax warm-up
    "logits": np.array([2.0, 1.0, 0.1]),
    "temperatures": np.array([1.0, 0.5]),
    # ch0-ex5: total variation warm-up
    "tv_p": np.array([0.6, 0.3, 0.1]),
    "tv_q": np.array([0.3, 0.3, 0.4]),
}


def _ex1():
    from ..costmodel import c_from_leviathan
    return c_from_leviathan(DATA["c_leviathan"])


def _ex2():
    from ..acceptance import acceptance_probability
    # our p is Chen's q (target), our q is Chen's p (draft)
    p, q, x = DATA["q_chen"], DATA["p_chen"], DATA["x_chen"]
    return [min(1.0, float(p[x] / q[x])), acceptance_probability(p, q)]


def _ex3():
    from ..costmodel import c_from_times, leviathan_c_from_c
    c = c_from_times(DATA["chen_target_ms"], DATA["chen_draft_ms"])
    return [c, leviathan_c_from_c(c)]


def _ex4():
    from ..distributions import softmax
    return [float(softmax(DATA["logits"], t).max()) for t in DATA["temperatures"]]


def _ex5():
    from ..acceptance import acceptance_probability
    from ..distributions import tv_distance
    return [tv_distance(DATA["tv_p"], DATA["tv_q"]),
            acceptance_probability(DATA["tv_p"], DATA["tv_q"])]


register("ch0-ex1", _ex1, hint="Check which way round each paper writes its time ratio before converting.")
register("ch0-ex2", _ex2, hint=("Match the letters first: which of the paper's letters names the "
              "target, which the draft?"))
register("ch0-ex3", _ex3, hint=("Our c and theirs are ratios of the same two times, taken the other way "
              "round."))
register("ch0-ex4", _ex4, hint="Where does the temperature act: on the logits or on the probabilities?")
register("ch0-ex5", _ex5, hint="Start from the definition of total variation in the notation table.")
