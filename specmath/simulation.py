"""Monte Carlo of the number of tokens per iteration under the i.i.d. model (chapter 4)."""

from __future__ import annotations

import numpy as np

from ._validate import as_count, as_generator, as_int, as_probability

__all__ = ["simulate_tokens_per_iteration", "simulate_tokens_per_iteration_loop",
           "adaptive_decode"]


def simulate_tokens_per_iteration(alpha, k, n_iterations: int, rng) -> np.ndarray:
    """Draw N, the tokens emitted per iteration, ``n_iterations`` times (ch. 4, eq. pmf).

    Each drafted token is accepted independently with probability α; the iteration stops
    at the first rejection (emitting the correction) or after k acceptances (emitting the
    bonus token). So N = 1 + min(A, k) where A, the run of acceptances before the first
    rejection, is geometric: P(A ≥ n) = αⁿ. One vectorized draw per iteration instead of a
    loop over draft tokens: with E ~ Exponential(1), A = ⌊E / (−ln α)⌋ has exactly
    P(A ≥ n) = P(E ≥ n·(−ln α)) = αⁿ (α = 0 gives A = 0, α = 1 gives A = ∞, so N = k + 1).

    Returns an int array of shape ``broadcast(alpha, k).shape + (n_iterations,)``.
    """
    a = as_probability(alpha, "alpha")
    kk = as_count(k, "k")
    n = as_int(n_iterations, "n_iterations", minimum=0)
    rng = as_generator(rng)
    a, kk = np.broadcast_arrays(a, kk)
    shape = a.shape + (n,)
    with np.errstate(divide="ignore"):
        # 1 / (−ln α): 0 at α = 0, inf at α = 1 (handled below, since 0 · inf = NaN)
        scale = np.where(a < 1.0, -1.0 / np.log(np.where(a < 1.0, a, 0.5)), np.inf)
    e = rng.standard_exponential(size=shape)
    if a.ndim == 0:  # the common case: scalars, done in place (see benchmarks/)
        if np.isinf(scale):
            e.fill(float(kk))
        else:
            e *= float(scale)
            np.minimum(e, float(kk), out=e)
        out = e.astype(np.int64)
        out += 1
        return out
    full = np.isinf(scale)[..., None]
    e *= np.where(np.isinf(scale), 0.0, scale)[..., None]
    cap = kk[..., None].astype(float)
    np.minimum(e, cap, out=e)
    e = np.where(full, cap, e)
    out = e.astype(np.int64)
    out += 1
    return out


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


def adaptive_decode(target, draft, n_tokens: int, k_max: int, threshold: float, rng,
                    context=(), rule: str = "stop"):
    """Speculative decoding of the Markov toy with a draft that decides when to stop (ch. 4).

    The draft proposes tokens one at a time, at most ``k_max`` per iteration. With
    ``rule="stop"`` it stops after proposing a token x_i whose draft probability
    q(x_i | ·) is below ``threshold``: whether position i + 1 is drafted depends only on
    x_1 … x_i, so the draft length is a *stopping time* and the output is still exactly the
    target's (ch. 4, remark stopping-time). ``rule="drop"`` is the biased variant the
    remark warns about: it samples x_i, and if q(x_i | ·) is below the threshold it
    discards x_i and stops, so the tokens it proposes are no longer draws from q.

    Returns ``(tokens, tokens_per_iteration)``: the first ``n_tokens`` emitted tokens
    (context excluded) and N for each iteration.
    """
    from .acceptance import speculative_step
    from .toy import _check_pair

    _check_pair(target, draft)
    n = as_int(n_tokens, "n_tokens")
    km = as_int(k_max, "k_max")
    th = float(as_probability(threshold, "threshold"))
    if rule not in ("stop", "drop"):
        raise ValueError(f"rule must be 'stop' or 'drop'; got {rule!r}")
    rng = as_generator(rng)
    V = target.vocab_size
    seq = [int(t) for t in context]
    start = len(seq)
    ns = []
    while len(seq) - start < n:
        drafted, qs = [], []
        for _ in range(km):
            qd = draft.next_distribution(seq + drafted)
            x = int(rng.choice(V, p=qd))
            if rule == "drop" and qd[x] < th:
                break                       # looks at x, then hides it: biased
            drafted.append(x)
            qs.append(qd)
            if rule == "stop" and qd[x] < th:
                break                       # decided from x_1 … x_i: a stopping time
        ps = np.asarray([target.next_distribution(seq + drafted[:i])
                         for i in range(len(drafted) + 1)])
        q = np.asarray(qs, dtype=float).reshape(len(drafted), V)
        out = speculative_step(ps, q, np.asarray(drafted, dtype=np.int64), rng)
        ns.append(len(out))
        seq.extend(int(t) for t in out)
    return (np.asarray(seq[start:start + n], dtype=np.int64),
            np.asarray(ns, dtype=np.int64))
