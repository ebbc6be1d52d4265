"""A toy target/draft language-model pair: Markov chains over a handful of tokens.

The chapters use it to run whole speculative decodes, with per-iteration statistics, next
to plain sampling from the target. Because the next-token distribution depends on the
previous token, it is a *context-dependent* target: exactness has to hold along the whole
sequence, not just at one position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._validate import as_distribution, as_generator, as_int
from .acceptance import NAIVE_RULES, naive_step, speculative_step
from .distributions import softmax

__all__ = [
    "MarkovLM",
    "toy_pair",
    "DecodeResult",
    "speculative_decode",
    "autoregressive_decode",
    "transition_counts",
]


@dataclass(frozen=True)
class MarkovLM:
    """A first-order Markov language model over tokens 0 … V−1.

    ``transition[a, b]`` = P(next = b | previous = a); ``initial`` is the distribution of
    the first token when the context is empty.
    """

    transition: np.ndarray
    initial: np.ndarray

    #: How many trailing tokens of the context the model reads (decoders pass no more).
    context_window = 1

    def __post_init__(self):
        t = as_distribution(self.transition, "transition", min_ndim=2)
        if t.ndim != 2 or t.shape[0] != t.shape[1]:
            raise ValueError(f"transition must be a square (V, V) matrix; got {t.shape}")
        i = as_distribution(self.initial, "initial")
        if i.shape != (t.shape[0],):
            raise ValueError(f"initial must have shape ({t.shape[0]},); got {i.shape}")
        # Rows are accepted within SUM_TOL of 1 but numpy's Generator.choice insists on a
        # tighter sum, so store them renormalized (a change of at most SUM_TOL per row).
        object.__setattr__(self, "transition", t / t.sum(axis=-1, keepdims=True))
        object.__setattr__(self, "initial", i / i.sum())

    @property
    def vocab_size(self) -> int:
        return self.transition.shape[0]

    def next_distribution(self, context: Sequence[int]) -> np.ndarray:
        """Distribution of the next token given the tokens so far."""
        if len(context) == 0:
            return self.initial
        last = int(context[-1])
        if not 0 <= last < self.vocab_size:
            raise ValueError(f"context tokens must be in [0, {self.vocab_size}); got {last}")
        return self.transition[last]

    def with_temperature(self, temperature: float) -> MarkovLM:
        """The same model with every next-token distribution tempered: softmax(log P / T)."""
        with np.errstate(divide="ignore"):
            lt, li = np.log(self.transition), np.log(self.initial)
        return MarkovLM(softmax(lt, temperature), softmax(li, temperature))

    def sample(self, n_tokens: int, rng, context: Sequence[int] = ()) -> np.ndarray:
        """Plain autoregressive sampling of ``n_tokens`` new tokens."""
        n = as_int(n_tokens, "n_tokens")
        rng = as_generator(rng)
        seq = list(context)
        for _ in range(n):
            d = self.next_distribution(seq)
            seq.append(int(rng.choice(self.vocab_size, p=d)))
        return np.asarray(seq[len(context):], dtype=np.int64)


def toy_pair(vocab_size: int = 6, closeness: float = 0.6, seed: int = 0,
             concentration: float = 0.5) -> tuple[MarkovLM, MarkovLM]:
    """A random target chain and a draft chain ``closeness`` of the way toward it.

    Parameters
    ----------
    vocab_size : int
        V ≥ 1 tokens.
    closeness : float in [0, 1]
        The knob. Each draft row is ``closeness·target + (1 − closeness)·other`` where
        ``other`` is an independent random chain: 1 gives an identical draft (α = 1), 0 an
        unrelated one.
    seed : int
        Seed of the random chains (the pair is reproducible).
    concentration : float > 0
        Dirichlet concentration of the random rows: small values give peaked (low-entropy)
        rows, large values flat ones.

    Returns
    -------
    (target, draft) : tuple of MarkovLM
    """
    V = as_int(vocab_size, "vocab_size", minimum=1)
    try:
        w = float(closeness)
    except (TypeError, ValueError) as err:
        raise ValueError(f"closeness must be in [0, 1]; got {closeness!r}") from err
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"closeness must be in [0, 1]; got {closeness!r}")
    try:
        a = float(concentration)
    except (TypeError, ValueError) as err:
        raise ValueError(f"concentration must be a number > 0; got {concentration!r}") from err
    if not (a > 0 and np.isfinite(a)):
        raise ValueError(f"concentration must be > 0 and finite; got {concentration!r}")
    rng = np.random.default_rng(seed)
    conc = np.full(V, a)
    target_t = rng.dirichlet(conc, size=V)
    target_i = rng.dirichlet(conc)
    other_t = rng.dirichlet(conc, size=V)
    other_i = rng.dirichlet(conc)
    target = MarkovLM(target_t, target_i)
    draft = MarkovLM(w * target_t + (1 - w) * other_t, w * target_i + (1 - w) * other_i)
    return target, draft


@dataclass
class DecodeResult:
    """What a decode produced, with per-iteration statistics.

    Attributes
    ----------
    tokens : new tokens (context excluded)
    tokens_per_iteration : N for each iteration (tokens the verification emitted, 1 … k+1;
        the last iteration's tokens may be cut from ``tokens`` at ``n_tokens``, but N counts
        them all, so these are clean draws of N)
    accepted_per_iteration : accepted draft tokens per iteration (N − 1)
    alpha_per_position : (iterations, k) array of Σ min(p, q) at each drafted position
    target_calls, draft_calls : number of model evaluations (one target call scores all
        k+1 positions of an iteration)
    """

    tokens: np.ndarray
    tokens_per_iteration: np.ndarray
    accepted_per_iteration: np.ndarray
    alpha_per_position: np.ndarray
    target_calls: int
    draft_calls: int
    k: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def mean_tokens_per_iteration(self) -> float:
        return float(np.mean(self.tokens_per_iteration))

    @property
    def acceptance_rate(self) -> float:
        """Accepted ÷ drafted tokens (what vLLM prints), NaN-free: 0 if nothing was drafted."""
        drafted = self.k * len(self.accepted_per_iteration)
        return float(np.sum(self.accepted_per_iteration) / drafted) if drafted else 0.0


def _check_pair(target, draft) -> None:
    """Raise ``ValueError`` unless target and draft are MarkovLM models over one vocabulary
    (the models of chapters 2 and 4; used by :mod:`specmath.markov_tokens` and
    :mod:`specmath.simulation`)."""
    if not isinstance(target, MarkovLM) or not isinstance(draft, MarkovLM):
        raise ValueError("target and draft must be specmath.toy.MarkovLM models")
    if target.vocab_size != draft.vocab_size:
        raise ValueError(f"target and draft must share a vocabulary; got {target.vocab_size} "
                         f"and {draft.vocab_size} tokens")


def _tail(seq: list, extra: list, window: int) -> list:
    """The last ``window`` tokens of ``seq + extra`` without copying all of ``seq``."""
    if len(extra) >= window:
        return extra[len(extra) - window:]
    return seq[max(0, len(seq) - (window - len(extra))):] + extra


def speculative_decode(target: MarkovLM, draft: MarkovLM, n_tokens: int, k: int, rng,
                       context: Sequence[int] = (), rule: str = "exact") -> DecodeResult:
    """Generate ``n_tokens`` tokens by speculative sampling (ch. 2, algorithm speculative-decoding).

    Each iteration drafts k tokens from ``draft``, asks ``target`` for its k+1 next-token
    distributions along the drafted text, and calls :func:`speculative_step`. The last
    iteration is cut at ``n_tokens``. ``rule`` may name one of
    :data:`specmath.acceptance.NAIVE_RULES` to run a biased variant instead.
    """
    if target.vocab_size != draft.vocab_size:
        raise ValueError(f"target and draft must share a vocabulary; got {target.vocab_size} and "
                         f"{draft.vocab_size} tokens")
    n = as_int(n_tokens, "n_tokens")
    kk = as_int(k, "k")
    rng = as_generator(rng)
    if rule != "exact" and rule not in NAIVE_RULES:
        raise ValueError(f"rule must be 'exact' or one of {NAIVE_RULES}; got {rule!r}")
    seq = list(context)
    start = len(seq)
    # Only the last `window` tokens are handed to the models: O(1) per step, not O(length).
    window = max(getattr(target, "context_window", 10**9), getattr(draft, "context_window", 10**9))
    ns, acc, alphas = [], [], []
    t_calls = d_calls = 0
    while len(seq) - start < n:
        drafted, qs = [], []
        for _ in range(kk):
            qd = draft.next_distribution(_tail(seq, drafted, window))
            x = int(rng.choice(draft.vocab_size, p=qd))
            drafted.append(x)
            qs.append(qd)
            d_calls += 1
        ps = [target.next_distribution(_tail(seq, drafted[:i], window)) for i in range(kk + 1)]
        t_calls += 1
        p = np.asarray(ps)
        q = np.asarray(qs).reshape(kk, target.vocab_size)
        alphas.append(np.minimum(p[:kk], q).sum(axis=-1))
        if rule == "exact":
            out = speculative_step(p, q, np.asarray(drafted, dtype=np.int64), rng)
        else:
            out = naive_step(p, q, np.asarray(drafted, dtype=np.int64), rng, rule)
        ns.append(len(out))
        acc.append(len(out) - 1)
        room = n - (len(seq) - start)
        seq.extend(int(t) for t in out[:room])
    return DecodeResult(
        tokens=np.asarray(seq[start:], dtype=np.int64),
        tokens_per_iteration=np.asarray(ns, dtype=np.int64),
        accepted_per_iteration=np.asarray(acc, dtype=np.int64),
        alpha_per_position=np.asarray(alphas, dtype=float).reshape(len(ns), kk),
        target_calls=t_calls,
        draft_calls=d_calls,
        k=kk,
    )


def autoregressive_decode(target: MarkovLM, n_tokens: int, rng,
                          context: Sequence[int] = ()) -> DecodeResult:
    """Plain sampling from the target, with the same result shape (N = 1 per iteration)."""
    toks = target.sample(n_tokens, rng, context)
    m = len(toks)
    return DecodeResult(tokens=toks, tokens_per_iteration=np.ones(m, dtype=np.int64),
                        accepted_per_iteration=np.zeros(m, dtype=np.int64),
                        alpha_per_position=np.zeros((m, 0)), target_calls=m, draft_calls=0, k=0)


def transition_counts(sequences, vocab_size: int, context_last: int | None = None) -> np.ndarray:
    """Count bigram transitions a → b over one or more token sequences: a (V, V) matrix.

    If ``context_last`` is given, the transition from it into each sequence's first token
    is counted too.
    """
    V = as_int(vocab_size, "vocab_size", minimum=1)
    counts = np.zeros((V, V), dtype=np.int64)
    if context_last is not None:
        context_last = as_int(context_last, "context_last")
        if context_last >= V:
            raise ValueError(f"context_last must be a token in [0, {V}); got {context_last}")
    if len(sequences) == 0:
        return counts
    seqs = [sequences] if np.ndim(sequences[0]) == 0 else sequences
    for s in seqs:
        s = np.asarray(s)
        if s.size and not np.issubdtype(s.dtype, np.integer):
            raise ValueError(f"sequences must hold integer token ids; got dtype {s.dtype}")
        s = s.astype(np.int64)
        if ((s < 0) | (s >= V)).any():
            raise ValueError(f"sequences must hold tokens in [0, {V}); got "
                             f"{s[(s < 0) | (s >= V)][0]}")
        if context_last is not None and len(s):
            counts[context_last, s[0]] += 1
        np.add.at(counts, (s[:-1], s[1:]), 1)
    return counts
