"""Several draft candidates at one position: recursive rejection (ch. 10).

Conventions: ``p`` is the **target** distribution, ``q`` the **draft**'s; the m candidates
x₁ … x_m are drawn from q, i.i.d. (with replacement) or without replacement. Recursive
rejection (SpecInfer's multi-step speculative sampling, Miao et al. 2024) tests candidate j
against the current residual r_j (r₁ = p): accept with probability min(1, r_j(x_j)/q_j(x_j)); on
rejection r_{j+1} = norm(max(0, r_j − q_j)); when all m are rejected, the emitted token is
drawn from r_{m+1}. Its output is exactly p (ch. 10, theorem ch10-thm-exact).

The optimal-transport ceiling (:func:`multidraft_ot_ceiling`) is the largest P(Y ∈ {X₁…X_m})
over every joint law of (Y, X₁ … X_m) with Y ~ p and X's i.i.d. q (SpecTr's linear program);
:func:`multidraft_ot_ceiling_cut` gives the same number as a minimum over subsets, and
:func:`multidraft_ot_ceiling_sorted` computes that minimum in O(V log V): it is attained on
a prefix of the tokens sorted by p/q (chapter 10, theorem ch10-thm-sorted).
:func:`topk_keep_probability` is the engine case of deterministic top-m candidates.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._validate import as_distribution, as_generator, as_int, same_shape, scalar_or_array
from .acceptance import _residual, _sample

__all__ = [
    "MULTIDRAFT_RULES",
    "multidraft_step",
    "broken_multidraft_step",
    "multidraft_acceptance",
    "multidraft_output_distribution",
    "multidraft_ot_ceiling",
    "multidraft_ot_ceiling_cut",
    "multidraft_ot_ceiling_sorted",
    "topk_keep_probability",
]

#: ``"recursive"``: exact recursive rejection. ``"fixed-target"``: the tempting mistake of
#: testing every candidate against the original p (min(1, p/q)) and, if all fail,
#: drawing from norm(max(0, p − q)); biased for m ≥ 2 unless q = αp on the target's
#: support (then exact for every m; ch. 10, the tempting mistake).
MULTIDRAFT_RULES = ("recursive", "fixed-target")

#: Largest V**m the exact without-replacement enumeration and the linear program accept.
MAX_TUPLES = 20_000


def _check_pq(p, q):
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    if p.ndim != 1:
        raise ValueError(f"p must be one probability vector of shape (V,); got shape {p.shape}")
    if q.ndim != 1:
        raise ValueError(f"q must be one probability vector of shape (V,); got shape {q.shape}")
    same_shape(p, q)
    return p, q


def _check_candidates(candidates, V: int, replacement: bool) -> np.ndarray:
    t = np.asarray(candidates)
    if t.ndim != 1 or t.shape[0] < 1:
        raise ValueError(f"candidates must have shape (m,) with m ≥ 1; got shape {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"candidates must be integers (token ids); got dtype {t.dtype}")
    if ((t < 0) | (t >= V)).any():
        raise ValueError(f"candidates must be in [0, V) = [0, {V}); got "
                         f"{t[(t < 0) | (t >= V)][0]}")
    if not replacement and np.unique(t).size != t.size:
        raise ValueError("candidates must be distinct when replacement=False (drawn without "
                         f"replacement); got {t.tolist()}")
    return t.astype(np.int64)


def _without(q: np.ndarray, x: int) -> np.ndarray:
    """q with token x removed and renormalised (q itself if nothing else is left)."""
    r = q.copy()
    r[x] = 0.0
    s = r.sum()
    return r / s if s > 0 else q


def _recursive(p, q, t, rng, replacement: bool, fixed_target: bool) -> int:
    r, qj = p, q
    for x in t:
        x = int(x)
        if rng.random() * qj[x] < r[x]:       # accept with min(1, r(x)/q(x))
            return x
        if not fixed_target:
            r = _residual(r, qj)
        if not replacement:
            qj = _without(qj, x)
    if fixed_target:
        return _sample(_residual(p, q), rng)
    return _sample(r, rng)


def multidraft_step(p, q, candidates, rng, *, replacement: bool = True) -> int:
    """Recursive rejection over m candidates at one position (ch. 10, algorithm recursive).

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft distributions at the position.
    candidates : array_like of int, shape (m,)
        Candidates drawn from q: i.i.d. (``replacement=True``) or without replacement
        (``replacement=False``: candidate j from q with x₁ … x_{j−1} removed, renormalised;
        they must then be distinct).
    rng : numpy.random.Generator

    Returns
    -------
    int
        The emitted token: the first kept candidate, or a draw from the last residual.
        Its law is exactly p (theorem ch10-thm-exact).
    """
    p, q = _check_pq(p, q)
    t = _check_candidates(candidates, p.shape[0], bool(replacement))
    rng = as_generator(rng)
    return _recursive(p, q, t, rng, bool(replacement), fixed_target=False)


def broken_multidraft_step(p, q, candidates, rng) -> int:
    """The biased ``"fixed-target"`` rule (every candidate tested against p): for tests."""
    p, q = _check_pq(p, q)
    t = _check_candidates(candidates, p.shape[0], True)
    rng = as_generator(rng)
    return _recursive(p, q, t, rng, True, fixed_target=True)


def _betas(p: np.ndarray, q: np.ndarray, m: int):
    """ζ_j = Σ min(r_j, q), j = 1 … m (ch. 10, eq. ch10-lambda), and the residuals
    r_1 … r_{m+1} (vectorised)."""
    betas, rs = [], [p]
    r = p
    for _ in range(m):
        betas.append(np.minimum(r, q).sum(axis=-1))
        r = _residual(r, q)
        rs.append(r)
    return betas, rs


def _acceptance_without(p: np.ndarray, q: np.ndarray, m: int) -> float:
    """P(some candidate kept), candidates without replacement: recursion over the draws."""
    def f(r, qj, left):
        if left == 0:
            return 0.0
        rn = _residual(r, qj)            # the same residual whatever x was rejected
        total = 0.0
        for x in np.flatnonzero(qj > 0):
            a = min(1.0, r[x] / qj[x])
            total += qj[x] * (a + (1 - a) * f(rn, _without(qj, int(x)), left - 1))
        return total
    return f(p, q, m)


def multidraft_acceptance(p, q, m, *, replacement: bool = True):
    """Exact P(some candidate is kept) under recursive rejection (ch. 10, eq. multi-accept).

    With replacement: 1 − Π_{j=1}^{m} (1 − ζ_j), ζ_j = Σₓ min(r_j(x), q(x)); equals
    Σ min(p, q) at m = 1 and is non-decreasing in m. Broadcasts over leading axes of p and q
    (with replacement). Without replacement (one pair of vectors only) the law of later
    candidates depends on the earlier ones; the sum runs over the V!/(V−m)! ordered draws.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    same_shape(p, q)
    m = as_int(m, "m", minimum=1)
    if replacement:
        betas, _ = _betas(p, q, m)
        keep_none = np.prod(np.stack([1 - b for b in betas]), axis=0)
        return scalar_or_array(1 - keep_none)
    if p.ndim != 1:
        raise ValueError(f"p must be one vector of shape (V,) when replacement=False; got "
                         f"shape {p.shape}")
    V = p.shape[0]
    if m > V:
        raise ValueError(f"m must be ≤ V = {V} without replacement; got {m}")
    if V ** m > MAX_TUPLES:
        raise ValueError(f"m is too large for exact enumeration: V**m = {V}**{m} exceeds "
                         f"{MAX_TUPLES}")
    return _acceptance_without(p, q, m)


def multidraft_output_distribution(p, q, m, *, rule: str = "recursive") -> np.ndarray:
    """Exact law of the emitted token with m i.i.d. candidates (ch. 10).

    ``"recursive"``: Σ_j P(reach j) min(r_j, q) + P(reach m+1) r_{m+1}, which equals p.
    ``"fixed-target"``: Σ_j (1−α)^{j−1} min(p, q) + (1−α)^m norm(max(0, p − q)), biased.
    """
    p, q = _check_pq(p, q)
    m = as_int(m, "m", minimum=1)
    if rule not in MULTIDRAFT_RULES:
        raise ValueError(f"rule must be one of {MULTIDRAFT_RULES}; got {rule!r}")
    if rule == "fixed-target":
        a = np.minimum(p, q).sum()
        return np.minimum(p, q) * sum((1 - a) ** j for j in range(m)) \
            + (1 - a) ** m * _residual(p, q)
    betas, rs = _betas(p, q, m)
    out, reach = np.zeros_like(p), 1.0
    for b, r in zip(betas, rs[:-1], strict=True):
        out += reach * np.minimum(r, q)
        reach *= 1 - b
    return out + reach * rs[-1]


def _tuples(q: np.ndarray, m: int):
    V = q.shape[0]
    if V ** m > MAX_TUPLES:
        raise ValueError(f"m is too large for the linear program: V**m = {V}**{m} exceeds "
                         f"{MAX_TUPLES}")
    tup = np.array(list(itertools.product(range(V), repeat=m)), dtype=np.int64)
    return tup, np.prod(q[tup], axis=1)


def multidraft_ot_ceiling(p, q, m) -> float:
    """Largest P(Y ∈ {X₁ … X_m}) with Y ~ p and X₁ … X_m i.i.d. q (ch. 10, eq. ot-lp).

    SpecTr's optimal-transport view (Sun et al. 2023): a linear program over the joint law
    π(y, x₁ … x_m), solved with ``scipy.optimize.linprog`` (HiGHS). Variables: V^(m+1);
    keep V**m ≤ :data:`MAX_TUPLES`. No verifier of i.i.d. candidates can keep one more
    often, because every verifier defines such a joint law.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    p, q = _check_pq(p, q)
    m = as_int(m, "m", minimum=1)
    V = p.shape[0]
    tup, Q = _tuples(q, m)
    T = tup.shape[0]
    # variable index: t * V + y
    hit = np.zeros((T, V))
    hit[np.repeat(np.arange(T), m), tup.ravel()] = 1.0
    c = -hit.ravel()
    idx = np.arange(T * V)
    rows = np.concatenate([idx // V, T + idx % V])       # Σ_y π = Q(t); Σ_t π = p(y)
    A = coo_matrix((np.ones(2 * T * V), (rows, np.concatenate([idx, idx]))),
                   shape=(T + V, T * V)).tocsr()
    b = np.concatenate([Q, p])
    res = linprog(c, A_eq=A[:-1], b_eq=b[:-1], bounds=(0, None), method="highs")
    if res.status != 0:  # pragma: no cover - the program is always feasible (π = Q ⊗ p)
        raise RuntimeError(f"linprog failed: {res.message}")
    return float(-res.fun)


def multidraft_ot_ceiling_cut(p, q, m) -> float:
    """The ceiling as a minimum cut: min over S ⊆ V of p(Sᶜ) + 1 − (1 − q(S))^m (ch. 10).

    Max-flow/min-cut on the bipartite graph (tuples → tokens they contain); 2^V subsets,
    so V ≤ 20.
    """
    p, q = _check_pq(p, q)
    m = as_int(m, "m", minimum=1)
    V = p.shape[0]
    if V > 20:
        raise ValueError(f"p must have V ≤ 20 for the subset minimum; got V = {V}")
    masks = ((np.arange(2 ** V)[:, None] >> np.arange(V)) & 1).astype(bool)
    pS, qS = masks @ p, masks @ q
    return float(np.min(1 - pS + 1 - (1 - qS) ** m))


def _per_row(fn, p, q, m):
    """``fn(p_row, q_row, m)`` for every row when p and q are stacked as (n, V), as an
    array of shape (n,); None when they are single distributions."""
    p_arr, q_arr = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p_arr.ndim != 2:
        return None
    if q_arr.shape != p_arr.shape:
        raise ValueError(f"p and q must have the same shape; got {p_arr.shape} and "
                         f"{q_arr.shape}")
    return np.array([fn(pr, qr, m) for pr, qr in zip(p_arr, q_arr, strict=True)])


def multidraft_ot_ceiling_sorted(p, q, m) -> float:
    """The ceiling OT_m(p, q) in O(V log V): the subset minimum over ratio prefixes (ch. 10).

    Theorem ch10-thm-sorted: min over S ⊆ V of p(Sᶜ) + 1 − (1 − q(S))^m is attained at a
    set S = {x : p(x)/q(x) > t} (tokens with q(x) = 0 < p(x) have ratio +∞), i.e. at a
    prefix of the tokens sorted by p/q in decreasing order, the empty prefix included.
    Sorting and one cumulative sum give every prefix's value. Works at V = 151,936 where
    the linear program and the 2^V subset scan (:func:`multidraft_ot_ceiling_cut`, V ≤ 20)
    cannot. Rows may also be stacked as (n, V); the result then has shape (n,).
    """
    m = as_int(m, "m", minimum=1)
    rows = _per_row(multidraft_ot_ceiling_sorted, p, q, m)
    if rows is not None:
        return rows
    p, q = _check_pq(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.where(p > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    pS = np.concatenate([[0.0], np.cumsum(p[order])])
    qS = np.minimum(np.concatenate([[0.0], np.cumsum(q[order])]), 1.0)
    return float(np.min(1 - pS + 1 - (1 - qS) ** m))


def topk_keep_probability(p, q, m):
    """P(a token is kept) with m **deterministic** candidates: the draft's top-m (ch. 10).

    Engines (EAGLE trees, SGLang, vLLM's greedy drafts) propose the m most likely draft
    tokens c₁ … c_m and verify them as one-hot drafts. Recursive one-hot verification
    (chapter 8, theorem ch8-thm-greedy, applied candidate by candidate: c_j is accepted
    with probability r_j(c_j), r_{j+1} = r_j with c_j removed and renormalised) keeps one
    of them with probability p({c₁ … c_m}), the target's mass on the draft's top-m set.
    Ties in q are broken by the lower token index. Rows may be stacked as (n, V).
    """
    m = as_int(m, "m", minimum=1)
    rows = _per_row(topk_keep_probability, p, q, m)
    if rows is not None:
        return rows
    p, q = _check_pq(p, q)
    if m > p.size:
        raise ValueError(f"m must be at most V = {p.size}; got {m}")
    top = np.argsort(-q, kind="stable")[:m]
    return float(p[top].sum())
