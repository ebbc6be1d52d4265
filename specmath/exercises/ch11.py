"""Exercise answers and example data for chapter 11 (computed, never typed)."""

import numpy as np

from . import register

#: The chapter's workload for the two averages of speedup: code (long, well drafted)
#: and chat (short, poorly drafted) requests, alternating.
WORKLOAD = {"alphas": [0.9, 0.5] * 10, "lengths": [400, 100] * 10}

#: The goodput simulation: batch sizes the load visits, acceptances of three request kinds.
GOODPUT = {"seed": 7, "steps": 400, "batch_sizes": [1, 4, 16, 64, 128, 256, 512],
           "alphas": [0.5, 0.75, 0.9]}

#: The queue of one batch-1 server: response lengths n and their probabilities, the
#: prefill in target steps, and the simulation (plain utilisation, requests, seed).
QUEUE = {"lengths": [50, 100, 200, 400, 800], "weights": [0.3, 0.3, 0.2, 0.15, 0.05],
         "prefill": 10.0, "phi_plain": 0.8, "customers": 200_000, "seed": 17}

EX1 = {"alpha": 0.7, "k": 4}
EX2 = {"alpha": 0.9, "k": 4}
EX3 = {"alphas": [0.95, 0.95, 0.6, 0.6, 0.6], "lengths": [50, 50, 500, 500, 500],
       "k": 4, "c": 8.0}
EX4 = {"alpha": 0.85, "c": 12.0}
#: Two requests at one FIFO server: the first at time 0, the second after an exponential
#: gap of rate λ; every service takes t.
EX6 = {"t": 1.5, "lam": 0.8}


def _ex1():
    from ..serving import tokens_per_iteration_variance
    return tokens_per_iteration_variance(EX1["alpha"], EX1["k"])


def _ex2():
    from .. import costmodel as cm
    from ..batching import ModelShape, break_even_batch
    from .ch1 import DATA
    tgt = ModelShape(DATA["target_params"], DATA["layers"], DATA["q_heads"],
                     DATA["kv_heads"], DATA["head_dim"])
    drf = ModelShape(DATA["draft_params"], 32, 32, 8, 128)
    return break_even_batch(EX2["alpha"], EX2["k"], tgt, drf, cm.A100_SXM)


def _ex3():
    from ..serving import workload_speedups
    w = workload_speedups(EX3["alphas"], EX3["lengths"], EX3["k"], EX3["c"])
    return np.array([w["ratio_of_means"], w["mean_of_ratios"]])


def _ex4():
    from ..adaptive import oracle_speedup
    from ..speedup import optimal_k, speedup
    s = oracle_speedup(EX4["alpha"], EX4["c"])
    best = speedup(EX4["alpha"], optimal_k(EX4["alpha"], EX4["c"]), EX4["c"])
    return np.array([s, s / best])


def _ex6():
    # direct: request 2's latency is t + (t − G)⁺, E[(t − G)⁺] = t − (1 − e^{−λt})/λ;
    # the bound (eq. ch11-over, n = 2) is 3t/2 − 1/(2λ)
    t, lam = EX6["t"], EX6["lam"]
    exact = t + (t - (1 - np.exp(-lam * t)) / lam) / 2
    return np.array([exact, exact - (3 * t / 2 - 1 / (2 * lam))])


register("ch11-ex1", _ex1, hint=("Tail sums give the second moment as they gave the mean; then the "
              "variance."))
register("ch11-ex2", _ex2, rtol=0.0, atol=0.0,
         hint=("As the batch grows, where does verifying k + 1 tokens per sequence "
              "stop being nearly free?"))
register("ch11-ex3", _ex3, hint=("A ratio of means weights each request by its length; a mean of ratios "
              "does not."))
register("ch11-ex4", _ex4, hint=("Compare the adaptive limit with the best fixed draft length's speedup, "
              "in the order asked."))
register("ch11-ex6", _ex6, hint=("Write when request 2 starts as a maximum, then average "
              "over the gap G."))
