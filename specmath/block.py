"""Block verification (Sun et al. 2024): verify the k drafted tokens jointly.

Chapter 9. Conventions as everywhere: ``p`` target, ``q`` draft. With the draft
x₁ … x_k, a₀ = 1 and

    aᵢ = min(1, aᵢ₋₁ · pᵢ(xᵢ) / qᵢ(xᵢ)),                                   (ch9-a)
    Rᵢ₊₁ = Σₓ max(0, aᵢ pᵢ₊₁(x) − qᵢ₊₁(x)),                                (ch9-R)
    hᵢ = Rᵢ₊₁ / (Rᵢ₊₁ + 1 − aᵢ)  (i < k),   h_k = a_k,                    (ch9-h)

the rule runs k independent tests, "keep the first i drafts" passing with probability hᵢ,
keeps the **longest** prefix ℓ whose test passes (ℓ = 0 if none does), and appends one token
drawn from norm(max(0, a_ℓ p_{ℓ+1} − q_{ℓ+1})) when ℓ < k, or the bonus token from p_{k+1}
when ℓ = k. Its output is exactly the target's and P(ℓ ≥ i) is the largest any valid
verifier of the same draft can reach among those that keep a prefix of the draft and then
emit one token, the target continuing (chapter 9, theorems ch9-thm-exact,
ch9-thm-optimal). Valid verifiers that emit several tokens of their own after the kept
prefix can accept more (chapter 9, section "Outside the class").

The second half of the module enumerates, for small toy models, every draft block and every
outcome: the exact joint law of the first k+1 emitted tokens, the law of the number of
accepted drafts, and the ceiling Σᵢ Σ min(p(xⁱ), q(xⁱ)) no valid verifier can pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from ._validate import as_distribution, as_generator, as_int
from .acceptance import _check_step_inputs, _residual, _sample

__all__ = [
    "BLOCK_RULES",
    "block_weights",
    "block_accepted_given_draft",
    "block_step",
    "broken_block_step",
    "block_output_distribution",
    "sequence_distribution",
    "accepted_length_pmf",
    "expected_accepted",
    "accepted_upper_bound",
]

#: Rules the exact enumerators know: the block rule, Leviathan et al.'s token-wise rule, and
#: a *biased* block rule that corrects from the token-wise residual norm(max(0, p − q))
#: instead of norm(max(0, a_ℓ p − q)), and one that corrects from p itself (the bugs a
#: statistical test must catch).
BLOCK_RULES = ("block", "tokenwise", "block-wrong-residual", "block-resample-from-p")

#: Largest V**(k+1) the exact enumerators accept (the output law is an array of that size).
MAX_OUTCOMES = 200_000


def _weights(p: np.ndarray, q: np.ndarray, t: np.ndarray, k: int):
    """a (k+1,), R (k,) and h (k+1,) of eqs. (ch9-a)–(ch9-h) on validated rows; h[0] = 1."""
    a = np.ones(k + 1)
    for i in range(k):
        num = a[i] * p[i, t[i]]
        # min(1, a p/q) without dividing: q = 0 (a rounded draft) gives the limit 1 if
        # a p > 0 and 0 otherwise, as the token-wise test u q < p does.
        a[i + 1] = 1.0 if num >= q[i, t[i]] and num > 0 else (num / q[i, t[i]] if num > 0
                                                               else 0.0)
    R = np.maximum(a[:k, None] * p[:k] - q, 0.0).sum(axis=-1)
    den = R + 1.0 - a[:k]
    # den = 0 only when a = 1 and R = 0; then ℓ = i has probability 0 whatever hᵢ is
    # (chapter 9, proof of exactness) and we take hᵢ = 1. R = 0 with a < 1 gives 0.
    h = np.ones(k + 1)
    h[1:k] = np.where(den[1:] > 0, R[1:] / np.where(den[1:] > 0, den[1:], 1.0), 1.0)
    if k:
        h[k] = a[k]
    return a, R, h


def block_weights(p, q, draft_tokens) -> tuple[np.ndarray, np.ndarray]:
    """The weights aᵢ and test probabilities hᵢ of block verification (ch. 9, eqs. ch9-a, ch9-h).

    Parameters as :func:`specmath.speculative_step` (no rng). Returns ``(a, h)``, both of
    shape (k+1,): ``a[0] = 1``, ``a[i]`` = aᵢ; ``h[i]`` = hᵢ for i = 1 … k (``h[k] = a[k]``)
    and ``h[0] = 1`` (keeping the empty prefix always "passes"). Never NaN: where
    Rᵢ₊₁ + 1 − aᵢ = 0 (aᵢ = 1 and p_{i+1} = q_{i+1}) hᵢ = 1.
    """
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    a, _, h = _weights(p, q, t, k)
    return a, h


def block_accepted_given_draft(p, q, draft_tokens) -> tuple[np.ndarray, np.ndarray]:
    """P(ℓ ≥ i | whole draft) and P(ℓ ≥ i | first i drafts) = aᵢ, i = 1 … k (ch. 9).

    Parameters as :func:`block_weights`. Returns ``(given_draft, a)``, both (k,):
    ``given_draft[i-1]`` = 1 − Π_{j ≥ i} (1 − hⱼ), the chance that block verification keeps
    at least i drafts *given all k drafted tokens* (the tests are independent given the
    draft), and ``a[i-1]`` = aᵢ, the same chance given only the first i drafted tokens
    (lemma ch9-lem-weights), which averages over the later drafts. Their sums are
    E[ℓ | draft] and the prefix-conditional estimate Σᵢ aᵢ: equal in expectation over the
    draft, different draft by draft (the chapter's example has a draft where Σᵢ aᵢ
    exceeds E[ℓ | draft] and one where it falls short).
    """
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    a, _, h = _weights(p, q, t, k)
    fail_from = np.cumprod((1.0 - h[1:])[::-1])[::-1]   # Π_{j ≥ i} (1 − hⱼ)
    return 1.0 - fail_from, a[1:].copy()


def _correction_row(p_row: np.ndarray, q_row: np.ndarray, a: float) -> np.ndarray:
    """norm(max(0, a p − q)); p itself where that mass is 0 (a case of probability 0)."""
    r = np.maximum(a * p_row - q_row, 0.0)
    m = r.sum()
    return r / m if m > 0 else p_row


def _block(p, q, draft_tokens, rng, wrong_residual: bool) -> np.ndarray:
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    a, _, h = _weights(p, q, t, k)
    tau = 0
    for i in range(k, 0, -1):  # the longest passing prefix: test from the longest down
        if rng.random() < h[i]:
            tau = i
            break
    if tau == k:
        y = _sample(p[k], rng)
    elif wrong_residual:
        y = _sample(_residual(p[tau], q[tau]), rng)
    else:
        y = _sample(_correction_row(p[tau], q[tau], a[tau]), rng)
    return np.asarray([*t[:tau].tolist(), y], dtype=np.int64)


def block_step(p, q, draft_tokens, rng) -> np.ndarray:
    """One verification round of block verification (ch. 9, algorithm block; Sun et al. 2024).

    Same signature, validation and return type as :func:`specmath.speculative_step`: p is
    (k+1, V), q is (k, V), ``draft_tokens`` (k,) were drawn from the rows of q; returns the
    accepted prefix of the draft followed by exactly one token (length 1 … k+1).

    The k tests are independent: "keep i drafts" passes with probability hᵢ
    (:func:`block_weights`); ℓ is the largest i that passes (0 if none). They are drawn
    from i = k downwards and stop at the first pass, which has the same law as drawing all
    k. The appended token comes from norm(max(0, a_ℓ p_{ℓ+1} − q_{ℓ+1})) if ℓ < k and from
    p_{k+1} if ℓ = k. At ℓ = 0 that is the token-wise residual; with k = 1 the rule *is*
    the token-wise rule (h₁ = a₁ = min(1, p₁(x₁)/q₁(x₁))).
    """
    return _block(p, q, draft_tokens, rng, wrong_residual=False)


def broken_block_step(p, q, draft_tokens, rng) -> np.ndarray:
    """Block verification with the **wrong** correction norm(max(0, p − q)) (ch. 9, tests).

    Biased whenever a_ℓ < 1 at a ℓ < k with positive probability: it exists so that the
    statistical exactness tests can show they catch a plausible bug.
    """
    return _block(p, q, draft_tokens, rng, wrong_residual=True)


# ---- exact enumeration on toy models --------------------------------------------------------

def _as_model(m, name: str) -> tuple[Callable[[tuple], np.ndarray], int]:
    """A next-token function of the context and V, from a model with ``next_distribution``
    (e.g. :class:`specmath.toy.MarkovLM`) or a context-independent probability vector."""
    if hasattr(m, "next_distribution"):
        V = int(m.vocab_size)
        return (lambda ctx: np.asarray(m.next_distribution(list(ctx)), dtype=float)), V
    if callable(m):
        raise ValueError(f"{name} must be a model with next_distribution (e.g. MarkovLM) or "
                         f"a probability vector; got a callable")
    d = as_distribution(m, name)
    if d.ndim != 1:
        raise ValueError(f"{name} as an array must be one probability vector (the same "
                         f"next-token law in every context); got shape {d.shape}")
    return (lambda ctx: d), d.shape[0]


def _setup(target, draft, k, context, rule=None):
    fp, V = _as_model(target, "target")
    fq, Vq = _as_model(draft, "draft")
    if V != Vq:
        raise ValueError(f"target and draft must share the vocabulary; got V = {V} and {Vq}")
    k = as_int(k, "k")
    if V ** (k + 1) > MAX_OUTCOMES:
        raise ValueError(f"k is too large for exact enumeration: V**(k+1) = {V}**{k + 1} "
                         f"exceeds {MAX_OUTCOMES}")
    if rule is not None and rule not in BLOCK_RULES:
        raise ValueError(f"rule must be one of {BLOCK_RULES}; got {rule!r}")
    return fp, fq, V, k, _as_context(context, V)


def _as_context(context, V: int) -> tuple[int, ...]:
    """A context of token ids in [0, V), as a tuple (chs. 9 and 10)."""
    try:
        ctx = tuple(int(c) for c in context)
    except (TypeError, ValueError) as err:
        raise ValueError(f"context must be a sequence of token ids; got {context!r}") from err
    if any(not 0 <= c < V for c in ctx):
        raise ValueError(f"context tokens must be in [0, {V}); got {ctx}")
    return ctx


def _outcomes(fp, fq, V, k, ctx, rule):
    """Yield (draft x (k,), q(x), Pr(ℓ = i | x) (k+1,), correction rows (k+1, V)) per draft."""
    for x in itertools.product(range(V), repeat=k):
        p = np.stack([fp(ctx + x[:i]) for i in range(k + 1)])
        q = np.stack([fq(ctx + x[:i]) for i in range(k)]) if k else np.zeros((0, V))
        Q = float(np.prod([q[i, x[i]] for i in range(k)])) if k else 1.0
        if Q == 0.0:
            continue
        t = np.asarray(x, dtype=np.int64)
        rows = np.empty((k + 1, V))
        rows[k] = p[k]
        if rule == "tokenwise":
            acc = np.minimum(1.0, p[np.arange(k), t] / q[np.arange(k), t])
            surv = np.concatenate([[1.0], np.cumprod(acc)])  # P(ℓ ≥ i | x)
            pmf = surv - np.concatenate([surv[1:] * 1.0, [0.0]])
            for i in range(k):
                rows[i] = _residual(p[i], q[i])
        else:
            a, _, h = _weights(p, q, t, k)
            fail_after = np.ones(k + 1)  # Π_{j>i} (1 − h_j)
            for i in range(k - 1, -1, -1):
                fail_after[i] = fail_after[i + 1] * (1.0 - h[i + 1])
            pmf = h * fail_after
            for i in range(k):
                rows[i] = (_residual(p[i], q[i]) if rule == "block-wrong-residual"
                           else p[i] if rule == "block-resample-from-p"
                           else _correction_row(p[i], q[i], a[i]))
        yield x, Q, pmf, rows


def sequence_distribution(model, n: int, context: Sequence[int] = ()) -> np.ndarray:
    """Joint law of the next ``n`` tokens sampled from ``model`` after ``context`` (ch. 9).

    Returns an array of shape (V,)*n. ``model`` is a :class:`specmath.toy.MarkovLM` (or
    anything with ``next_distribution`` and ``vocab_size``) or one probability vector used
    in every context.
    """
    f, V = _as_model(model, "model")
    n = as_int(n, "n")
    if V ** n > MAX_OUTCOMES:
        raise ValueError(f"n is too large for exact enumeration: V**n = {V}**{n} exceeds "
                         f"{MAX_OUTCOMES}")
    try:
        ctx = tuple(int(c) for c in context)
    except (TypeError, ValueError) as err:
        raise ValueError(f"context must be a sequence of token ids; got {context!r}") from err
    return _joint(f, V, n, ctx, {})


def _joint(f, V, n, ctx, memo):
    key = (ctx, n)
    if key not in memo:
        if n == 0:
            memo[key] = np.ones(())
        else:
            d = f(ctx)
            memo[key] = np.stack([d[y] * _joint(f, V, n - 1, ctx + (y,), memo)
                                  for y in range(V)])
    return memo[key]


def block_output_distribution(target, draft, k: int, *, rule: str = "block",
                              context: Sequence[int] = ()) -> np.ndarray:
    """Exact law of the first k+1 tokens of a speculative decode (ch. 9, exact enumeration).

    Enumerates every draft block x ∈ V^k (drawn from ``draft``), every outcome ℓ of the
    verification ``rule`` (one of :data:`BLOCK_RULES`) and every appended token, then
    continues with the target up to k+1 tokens. The result, shape (V,)*(k+1), equals
    :func:`sequence_distribution` (target, k+1) exactly when the rule is exact.
    """
    fp, fq, V, k, ctx = _setup(target, draft, k, context, rule)
    memo: dict = {}
    out = np.zeros((V,) * (k + 1))
    for x, Q, pmf, rows in _outcomes(fp, fq, V, k, ctx, rule):
        for i in range(k + 1):
            if pmf[i] == 0:
                continue
            w = Q * pmf[i]
            for y in range(V):
                if rows[i, y] == 0:
                    continue
                out[x[:i] + (y,)] += w * rows[i, y] * _joint(fp, V, k - i, ctx + x[:i] + (y,),
                                                             memo)
    return out


def accepted_length_pmf(target, draft, k: int, *, rule: str = "block",
                        context: Sequence[int] = ()) -> np.ndarray:
    """P(ℓ = i), i = 0 … k: the exact law of the number of accepted drafts (ch. 9).

    The tokens emitted per iteration are N = ℓ + 1. Same arguments as
    :func:`block_output_distribution`.
    """
    fp, fq, V, k, ctx = _setup(target, draft, k, context, rule)
    out = np.zeros(k + 1)
    for _, Q, pmf, _ in _outcomes(fp, fq, V, k, ctx, rule):
        out += Q * pmf
    return out


def expected_accepted(target, draft, k: int, *, rule: str = "block",
                      context: Sequence[int] = ()) -> float:
    """E[ℓ], the expected number of accepted drafts per iteration, exactly (ch. 9).

    E[N] = E[ℓ] + 1. For i.i.d. positions with target ``(1/3, 2/3)`` and draft
    ``(2/3, 1/3)`` at k = 2 it is 10/9 token-wise and 11/9 for block verification.
    """
    pmf = accepted_length_pmf(target, draft, k, rule=rule, context=context)
    return float(np.arange(pmf.shape[0]) @ pmf)


def accepted_upper_bound(target, draft, k: int, *, context: Sequence[int] = ()) -> float:
    """Σᵢ₌₁ᵏ Σ_{xⁱ} min(p(xⁱ), q(xⁱ)): no valid verifier accepts more drafts on average (ch. 9).

    P(ℓ ≥ i, Xⁱ = xⁱ) is at most q(xⁱ) (the draft must propose xⁱ) and at most p(xⁱ) (the
    output must be the target's), for each i separately, whatever the verifier emits.
    Verifiers that keep a prefix and emit one token do not reach it in general (block
    verification, their best, gets 11/9 against 12/9 in the two-token example); verifiers
    that emit several tokens of their own can (chapter 9, section "Outside the class").
    """
    fp, fq, V, k, ctx = _setup(target, draft, k, context)
    P, Qd = {}, {}
    total = 0.0
    for i in range(1, k + 1):
        total += float(np.minimum(_joint(fp, V, i, ctx, P), _joint(fq, V, i, ctx, Qd)).sum())
    return total
