"""Exercise answers for chapter 10 (computed, never typed)."""

import numpy as np

from ..multidraft import multidraft_acceptance, multidraft_ot_ceiling
from ..toy import toy_pair
from ..trees import (
    best_tree,
    chain_tree,
    deterministic_tree_value,
    top_m_tree,
    tree_attention_mask,
    tree_expected_accepted,
)
from . import register

#: Parameters the chapter's exercises use (the notebook reads them from here too).
EX1_P = (0.5, 0.3, 0.2)
EX1_Q = (0.2, 0.2, 0.6)
EX1_M = 2
EX2_QY, EX2_M = 0.3, 3
EX3_P = (0.6, 0.3, 0.1)
EX3_Q = (0.3, 0.2, 0.5)
EX4_A = (0.6, 0.2, 0.1)
EX4_N = 6
EX5_N = 10
EX6_V, EX6_CLOSE, EX6_SEED = 3, 0.4, 7       # toy_pair(EX6_V, EX6_CLOSE, seed=EX6_SEED)
EX6_M, EX6_DEPTH = 2, 2
EX7_M = 2                                      # with the pair of exercise 1


def _ex1():
    return float(multidraft_acceptance(np.array(EX1_P), np.array(EX1_Q), EX1_M))


def _ex2():
    # one-hot target: kept iff some candidate equals y
    return 1 - (1 - EX2_QY) ** EX2_M


def _ex3():
    p, q = np.array(EX3_P), np.array(EX3_Q)
    return np.array([multidraft_acceptance(p, q, 2),
                     multidraft_acceptance(p, q, 2, replacement=False)])


def _ex4():
    a = np.array(EX4_A)
    v, _ = best_tree(a, EX4_N)
    return np.array([v + 1, tree_expected_accepted(chain_tree(EX4_N), a) + 1])


def _ex5():
    _, par = best_tree(np.array(EX4_A), EX5_N)
    return int(tree_attention_mask(par).sum())


def _ex6():
    target, draft = toy_pair(EX6_V, EX6_CLOSE, seed=EX6_SEED)
    par, tok = top_m_tree(draft, EX6_M, EX6_DEPTH)
    n = par.size
    # the n most probable target paths (depth ≤ n suffices: values fall along a path)
    probs, level = [], [((), 1.0)]
    for _ in range(n):
        level = [(pre + (x,), pr * float(target.next_distribution(list(pre))[x]))
                 for pre, pr in level for x in range(target.vocab_size)]
        probs += [pr for _, pr in level]
    best = float(sum(sorted(probs)[-n:]))
    return np.array([best + 1, deterministic_tree_value(target, par, tok) + 1])


register("ch10-ex1", _ex1, hint=("Each later candidate faces what the previous rejection left of p; find "
              "each acceptance probability in turn."))
register("ch10-ex2", _ex2, hint="With a one-hot target, when exactly is a candidate kept?")
register("ch10-ex3", _ex3, hint=("Without replacement the second candidate depends on the first: "
              "condition on the first."))
register("ch10-ex4", _ex4, hint=("Each node adds the probability of reaching it; give the best tree and "
              "the chain in the order asked."))
register("ch10-ex5", _ex5, rtol=0.0, atol=0.0,
         hint=("How many entries does one row of the tree mask have? Count along the "
              "path."))
register("ch10-ex6", _ex6, hint=("A node's value is the target's probability of its path, and a "
              "path is never more probable than its parent's; list the paths by probability."))


def _ex7():
    p, q = np.array(EX1_P), np.array(EX1_Q)
    return np.array([multidraft_ot_ceiling(p, q, EX7_M),
                     multidraft_acceptance(p, q, EX7_M)])


register("ch10-ex7", _ex7, hint=("Write the two marginal constraints and the chance of a hit; the "
              "verifier draws the emitted token from the optimal plan given the pair."))
