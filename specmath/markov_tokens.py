"""Exact tokens per iteration for the Markov toy models, where α depends on the context.

Chapter 4 (tokens per iteration) compares a whole speculative decode of
:func:`specmath.toy.speculative_decode` with the i.i.d. formula E[N] = (1 − α^(k+1))/(1 − α).
For a first-order Markov target p(· | a) and draft q(· | a) the exact answer is a small
matrix computation. With the previous token a:

* ``M[a, b] = min(p(b | a), q(b | a))``: probability of drafting b and accepting it;
* ``R[a, b] = max(0, p(b | a) − q(b | a))``: probability of rejecting the draft and emitting
  b from the residual instead;
* ``P[a, b] = p(b | a)``: the bonus token after k acceptances.

From start state s, P(N ≥ n + 1) = (Mⁿ 1)[s], so E[N | s] = Σ_{n=0}^{k} (Mⁿ 1)[s]; the
last token of the iteration (the next iteration's start state) has kernel
T = Σ_{n=0}^{k−1} Mⁿ R + Mᵏ P. In the long run the start states follow T's stationary law π
and the mean tokens per iteration is π · E[N | ·].
"""

from __future__ import annotations

import numpy as np

from ._validate import as_int
from .toy import MarkovLM, _check_pair

__all__ = ["IterationChain", "iteration_chain", "expected_tokens_markov", "stationary_law"]


class IterationChain:
    """The iteration-level Markov chain of a speculative decode (see the module docstring).

    Attributes
    ----------
    kernel : (V, V) array, start state of one iteration → start state of the next
    expected_tokens : (V,) array, E[N | start state]
    stationary : (V,) array, stationary law of ``kernel``
    alpha_by_state : (V,) array, Σ_b min(p, q)(b | a): acceptance probability after token a
    """

    def __init__(self, kernel, expected_tokens, stationary, alpha_by_state):
        self.kernel = kernel
        self.expected_tokens = expected_tokens
        self.stationary = stationary
        self.alpha_by_state = alpha_by_state

    @property
    def mean_tokens(self) -> float:
        """Long-run mean tokens per iteration, π · E[N | ·]."""
        return float(self.stationary @ self.expected_tokens)


def _stationary(T: np.ndarray) -> np.ndarray:
    V = T.shape[0]
    # Solve π (T − I) = 0 with Σ π = 1 by least squares (unique for an irreducible chain).
    A = np.vstack([(T - np.eye(V)).T, np.ones((1, V))])
    b = np.zeros(V + 1)
    b[-1] = 1.0
    pi, *_ = np.linalg.lstsq(A, b, rcond=None)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def stationary_law(transition) -> np.ndarray:
    """The stationary law π of a row-stochastic matrix (π T = π, Σ π = 1).

    Used for the start states of iterations (ch. 4, theorem renewal) and for the contexts a
    Markov toy visits in the long run at a given temperature (ch. 6). Unique when the
    chain is irreducible.
    """
    from ._validate import as_distribution

    T = as_distribution(transition, "transition", min_ndim=2)
    if T.ndim != 2 or T.shape[0] != T.shape[1]:
        raise ValueError(f"transition must be a square matrix; got shape {T.shape}")
    return _stationary(T)


def iteration_chain(target: MarkovLM, draft: MarkovLM, k: int) -> IterationChain:
    """Build the iteration-level chain for draft length ``k`` (ch. 4, section whole decode)."""
    _check_pair(target, draft)
    kk = as_int(k, "k")
    p, q = target.transition, draft.transition
    M = np.minimum(p, q)
    R = np.maximum(p - q, 0.0)
    V = p.shape[0]
    ones = np.ones(V)
    EN = np.zeros(V)
    T = np.zeros((V, V))
    Mn = np.eye(V)
    for _ in range(kk):
        EN += Mn @ ones
        T += Mn @ R
        Mn = Mn @ M
    EN += Mn @ ones
    T += Mn @ p
    return IterationChain(T, EN, _stationary(T), M.sum(axis=1))


def expected_tokens_markov(target: MarkovLM, draft: MarkovLM, k: int) -> float:
    """Exact long-run mean tokens per iteration of a speculative decode of the Markov toy."""
    return iteration_chain(target, draft, k).mean_tokens
