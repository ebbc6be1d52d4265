"""Exercise answers for chapter 6 (computed, never typed).

``PARAMS`` holds each exercise's inputs; the chapter glues them into the exercise text.
"""

from __future__ import annotations

import numpy as np

from ..distributions import entropy, softmax
from ..positional import expected_tokens_positional, markov_acceptance_by_position
from ..speedup import expected_tokens
from ..temperature import alpha_at_temperature, zipf_logits
from ..toy import toy_pair
from . import register

PARAMS = {
    "ch6-ex1": {"target_logits": [3.0, 2.0, 0.0, 0.0], "draft_logits": [2.0, 3.0, 0.0, 0.0],
                "temperatures": [0.0, 1.0, 100.0]},
    "ch6-ex2": {"vocab_size": 1000, "exponent": 1.2, "temperatures": [1.0, 0.5]},
    "ch6-ex3": {"alphas": [0.9, 0.8, 0.7, 0.6]},
    "ch6-ex4": {"alpha_values": [0.5, 0.9], "k": 4},
    # not the body's toy (V 6, closeness 0.6, seed 1, context 0, k 4), whose E[N] the
    # chapter prints (review R6b finding 12)
    "ch6-ex5": {"vocab_size": 5, "closeness": 0.5, "seed": 3, "context_token": 2, "k": 5},
}


def _ex1():
    p = PARAMS["ch6-ex1"]
    return alpha_at_temperature(p["target_logits"], p["draft_logits"], p["temperatures"])


def _ex2():
    p = PARAMS["ch6-ex2"]
    z = zipf_logits(p["vocab_size"], p["exponent"])
    return np.array([entropy(softmax(z, t)) for t in p["temperatures"]])


def _ex3():
    a = np.asarray(PARAMS["ch6-ex3"]["alphas"])
    return np.array([expected_tokens_positional(a), expected_tokens(a.mean(), len(a))])


def _ex4():
    p = PARAMS["ch6-ex4"]
    a = np.asarray(p["alpha_values"])
    return np.array([np.mean(expected_tokens(a, p["k"])), expected_tokens(a.mean(), p["k"])])


def _ex5():
    p = PARAMS["ch6-ex5"]
    target, draft = toy_pair(p["vocab_size"], p["closeness"], seed=p["seed"])
    a = markov_acceptance_by_position(target.transition, draft.transition, p["context_token"],
                                      p["k"])
    return expected_tokens_positional(a)


register("ch6-ex1", _ex1, atol=1e-6,
         hint=("What does each temperature do to the two distributions before you "
               "compare them? Keep the statement's order."))
register("ch6-ex2", _ex2, hint=("Entropy in bits uses the base-2 logarithm; give the two temperatures "
              "in the order asked."))
register("ch6-ex3", _ex3, hint=("Average the product of the acceptances along positions, not the "
              "acceptances themselves."))
register("ch6-ex4", _ex4, hint=("Average over the contexts at the end, not at the start: the two orders "
              "differ (Jensen)."))
register("ch6-ex5", _ex5, hint=("E[N] adds up, over j from 0 to k, the chance that the first j drafts "
              "are all accepted, and each accepted step is one more factor of M. Start "
              "from the all-ones vector and multiply by M in a loop of your own."))
