"""Exercise answers for chapter 9, block verification (computed, never typed)."""

import numpy as np

from ..block import accepted_length_pmf, accepted_upper_bound, block_weights, expected_accepted
from ..toy import MarkovLM, toy_pair
from . import register

#: Parameters the chapter's exercises use (the notebook reads them from here too).
EX1_P, EX1_Q, EX1_K = (0.25, 0.75), (0.75, 0.25), 2
EX2_V, EX2_CLOSENESS, EX2_SEED = 3, 0.3, 5
EX3_V, EX3_CLOSENESS, EX3_SEED, EX3_K = 4, 0.5, 8, 3
EX4_P, EX4_Q, EX4_K = (1 / 3, 2 / 3), (2 / 3, 1 / 3), 3
#: Exercise 9.5: the same laws at every position, and one draft block of length 3.
EX5_P, EX5_Q, EX5_DRAFT = (0.6, 0.25, 0.15), (0.1, 0.3, 0.6), (1, 1, 0)


def ex2_pair():
    return toy_pair(EX2_V, EX2_CLOSENESS, seed=EX2_SEED)


def ex3_pair() -> tuple[MarkovLM, MarkovLM]:
    """The toy target and the one-hot ("greedy") draft made from the toy draft's argmaxes."""
    target, draft = toy_pair(EX3_V, EX3_CLOSENESS, seed=EX3_SEED)
    eye = np.eye(EX3_V)
    greedy = MarkovLM(eye[np.argmax(draft.transition, axis=1)], eye[np.argmax(draft.initial)])
    return target, greedy


def _ex1():
    p, q = np.array(EX1_P), np.array(EX1_Q)
    return np.array([expected_accepted(p, q, EX1_K, rule="tokenwise"),
                     expected_accepted(p, q, EX1_K)])


def _ex2():
    target, draft = ex2_pair()
    return float(accepted_length_pmf(target, draft, 2)[2])


def _ex3():
    target, greedy = ex3_pair()
    return expected_accepted(target, greedy, EX3_K)


def _ex4():
    p, q = np.array(EX4_P), np.array(EX4_Q)
    return np.array([expected_accepted(p, q, EX4_K, rule="tokenwise"),
                     expected_accepted(p, q, EX4_K), accepted_upper_bound(p, q, EX4_K)])


def _ex5():
    p, q = np.array(EX5_P), np.array(EX5_Q)
    k = len(EX5_DRAFT)
    _, h = block_weights(np.tile(p, (k + 1, 1)), np.tile(q, (k, 1)), list(EX5_DRAFT))
    return h[1:k].copy()


register("ch9-ex1", _ex1, rtol=1e-6,
         hint=("Enumerate the four draft blocks with their probabilities; block "
              "verification works on prefixes."))
register("ch9-ex2", _ex2, rtol=1e-6,
         hint=("Bound the chance of keeping both tokens by what exactness at each "
              "length allows."))
register("ch9-ex3", _ex3, rtol=1e-6,
         hint=("With a one-hot draft the block is fixed: follow its path through the "
              "target's probabilities."))
register("ch9-ex4", _ex4, rtol=1e-6,
         hint=("Three numbers, in the order asked; the ceiling compares the prefix "
              "probabilities of the two models."))
register("ch9-ex5", _ex5, rtol=1e-6,
         hint="Work backwards from the last position of the block.")
