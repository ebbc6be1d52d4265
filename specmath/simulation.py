"""Monte Carlo of the number of tokens per iteration under the i.i.d. model (chapter 4)."""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_generator, as_int, as_probability

__all__ = ["simulate_tokens_per_iteration", "simulate_tokens_per_iteration_loop"]


def simulate_tokens_per_iteration(alpha, k, n_iterations: int, rng) -> np.ndarray:
    """Draw N, the tokens emitted per iteration, ``n_iterations`` times (ch. 4, eq. pmf).

    Each drafted token is accepted independently with probability α; the iteration stops
    at the first rejection (emitting the correction) or after k acceptances (emitting the
    bonus token). So N = min(G, k+1) with G ~ Geometric(1 − α) on {1, 2, …}: one vectorized
    draw per iteration instead of a loop over draft tokens.

    Returns an int array of shape ``broadcast(alpha, k).shape + (n_iterations,)``.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    n = as_int(n_iterations, "n_iterations", minimum=0)
    rng = as_generator(rng)
    a, kk = np.broadcast_arrays(a, kk)
    shape = a.shape + (n,)
    p_reject = np.broadcast_to((1.0 - a)[..., None], shape)
    cap = np.broadcast_to(kk[..., None] + 1, shape)
    # Geometric needs p > 0; for α = 1 every iteration is full (N = k + 1).
    g = rng.geometric(np.where(p_reject > 0, p_reject, 1.0), size=shape)
    g = np.where(p_reject > 0, g, cap)
    return np.minimum(g, cap).astype(np.int64)


def simulate_tokens_per_iteration_loop(alpha: float, k: int, n_iterations: int, rng) -> np.ndarray:
    """The same draws with a plain Python loop over iterations and draft tokens.

    Only the baseline for ``benchmarks/bench_simulation.py``; use the vectorized version.
    """
    a = float(as_probability(alpha, "alpha"))
    kk = as_int(k, "k")
    n = as_int(n_iterations, "n_iterations")
    rng = as_generator(rng)
    out = np.empty(n, dtype=np.int64)
    for it in range(n):
        tokens = 1
        for _ in range(kk):
            if rng.random() < a:
                tokens += 1
            else:
                break
        out[it] = tokens
    return out
