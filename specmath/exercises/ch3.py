"""Exercise answers for chapter 3 (computed, never typed)."""

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import tv_distance
from ..tv import overlap_pair
from . import register

#: Parameters the chapter's exercises use (the notebook reads them from here too).
EX1_SHIFT = 2.0
EX2_TARGET_ALPHA = 0.9
EX3_TEMPERATURE = 0.5
EX4_PRIOR = 0.75


def _ex1():
    return acceptance_probability(*overlap_pair(EX1_SHIFT, 1.0, 0.0))


def _ex2():
    # α(w) = w + (1 − w) α₀ is linear in w; solve for the target α.
    a0 = _ex1()
    return (EX2_TARGET_ALPHA - a0) / (1.0 - a0)


def _ex3():
    return acceptance_probability(*overlap_pair(0.0, EX3_TEMPERATURE, 0.0))


def _ex4():
    p, q = overlap_pair(1.0, 1.0, 0.0)
    return float(np.maximum(EX4_PRIOR * p, (1.0 - EX4_PRIOR) * q).sum())


def _ex5():
    p, q = overlap_pair(1.0, 1.0, 0.0)
    return tv_distance(p, q)


register("ch3-ex1", _ex1, hint=("Go back to the definition of α in this chapter and evaluate it token "
              "by token."))
register("ch3-ex2", _ex2, hint="Use the chapter's theorem on mixing: how does α move with the weight w?")
register("ch3-ex3", _ex3, hint=("Which function of the chapter builds the pair at another temperature, "
              "with no shift and no mixing?"))
register("ch3-ex4", _ex4, hint=("Decide token by token: which of the two prior-weighted probabilities "
              "is larger?"))
register("ch3-ex5", _ex5, hint=("Which tokens should a subset contain to make p(A) − q(A) as large as "
              "possible?"))
