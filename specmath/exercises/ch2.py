"""Exercise answers for chapter 2, the acceptance rule (computed, never typed).

``DATA`` holds the inputs the exercises state; the notebook shows them from here.
"""

import numpy as np

from . import register

#: Inputs of chapter 2's exercises.
DATA = {
    "p": np.array([0.10, 0.45, 0.25, 0.15, 0.05]),
    "q": np.array([0.30, 0.35, 0.05, 0.20, 0.10]),
    # ch2-ex4: a greedy draft whose top token is over-proposed (q > p there), so the
    # verifier rejects it at times and the residual enters the output
    "q_greedy": np.array([0.35, 0.25, 0.05, 0.20, 0.15]),
    # ch2-ex5: the toy Markov pair
    "toy_vocab": 6,
    "toy_closeness": 0.6,
    "toy_seed": 0,
}


def _ex1():
    # Rule 2 widened to the target's two most likely tokens A: keep a draft in A, else
    # sample from p. Output q·1_A + (1 − q(A))·p; its TV distance to p.
    from ..distributions import tv_distance
    p, q = DATA["p"], DATA["q"]
    in_a = np.isin(np.arange(p.size), np.argsort(p)[-2:])
    out = q * in_a + (1.0 - q[in_a].sum()) * p
    return float(tv_distance(out, p))


def _ex2():
    from ..acceptance import residual_distribution
    return residual_distribution(DATA["p"], DATA["q"])


def _ex3():
    # Pr(emitted token = drafted token), by exact enumeration over the drafted token x:
    # accepted with min(1, p/q); after a rejection the residual is drawn, which could equal
    # x only if r(x) > 0 (it never is: a rejection needs q(x) > p(x), where r(x) = 0).
    from ..acceptance import residual_distribution
    p, q = DATA["p"], DATA["q"]
    keep = np.minimum(1.0, p / q)
    r = residual_distribution(p, q)
    return float(np.sum(q * (keep + (1.0 - keep) * r)))


def _ex4():
    from ..distributions import tv_distance
    from ..pitfalls import greedy, mismatched_output_distribution
    p, q = DATA["p"], DATA["q_greedy"]
    return tv_distance(mismatched_output_distribution(p, q, greedy(q)), p)


def _ex5():
    # k = 2 from the empty context: the bonus token appears iff both drafts are accepted.
    # P = Σ_x1 q0(x1)·min(1, p0(x1)/q0(x1)) · α(x1) = Σ_x1 min(p0, q0)(x1) · α(x1).
    from ..acceptance import acceptance_probability
    from ..toy import toy_pair
    t, d = toy_pair(DATA["toy_vocab"], DATA["toy_closeness"], DATA["toy_seed"])
    first = np.minimum(t.initial, d.initial)
    second = np.asarray(acceptance_probability(t.transition, d.transition))
    return float(first @ second)


register("ch2-ex1", _ex1, hint=("Which tokens gain mass under this rule, and which token of the set "
              "can lose it?"))
register("ch2-ex2", _ex2, atol=1e-9,
         hint=("What is left of p once the draft's proposals have been accepted? It "
               "still has to be a distribution."))
register("ch2-ex3", _ex3, hint="Where can the residual put mass, and where can a rejection happen?")
register("ch2-ex4", _ex4, hint=("The draft always proposes its top token, but the verifier believes it "
              "was sampled. How often is that token rejected, and where does the "
              "residual put the mass it frees?"))
register("ch2-ex5", _ex5, hint="Enumerate the first drafted token; the second acceptance depends on it.")
