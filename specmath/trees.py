"""Draft trees: verification, expected accepted length, the best tree of n nodes (ch. 10).

A tree of n draft nodes is a parent array ``parents`` of length n: ``parents[i]`` is the
parent node of node i, or −1 when node i hangs from the root (the current context, which is
not a node). Parents come before children (``parents[i] < i``); siblings are ranked in
index order (rank 1 is the first child drawn). A node's tokens are drawn from the draft
given the path to it: siblings i.i.d. from q(· | parent's path).

Verification (SpecInfer, Miao et al. 2024) walks down from the root: at each node, recursive
rejection (:mod:`specmath.multidraft`) over its children; a kept child becomes the next
node, all rejected emits a draw from the last residual, and a leaf emits a bonus token from
p. Its output is exactly the target's (ch. 10, theorem ch10-thm-tree).

Under position-wise acceptance (Sequoia, Chen et al. 2024: the probability that the kept
child is the r-th one depends only on r, and on the depth d if given), a tree's expected
number of accepted nodes is Σ_v Π_{u ∈ path(v)} a_{d(u), r(u)} (eq. tree-value), and
:func:`best_tree` finds the tree of n nodes that maximises it by dynamic programming.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

import numpy as np

from ._validate import as_distribution, as_generator, as_int, as_probability
from .acceptance import _residual, _sample
from .block import _as_context, _as_model

__all__ = [
    "check_tree",
    "chain_tree",
    "kary_tree",
    "tree_depths",
    "tree_ranks",
    "tree_attention_mask",
    "rank_acceptance",
    "tree_expected_accepted",
    "best_tree",
    "best_tree_values",
    "draft_tree",
    "tree_distributions",
    "tree_step",
    "broken_tree_step",
    "tree_expected_accepted_exact",
    "top_m_tree",
    "deterministic_tree_value",
    "best_paths",
    "topk_expansion",
]

#: Largest number of outcomes the exact tree enumeration visits.
MAX_OUTCOMES = 2_000_000


def check_tree(parents) -> np.ndarray:
    """Validate a parent array: integers, parents[i] ∈ {−1, 0, …, i − 1}."""
    a = np.asarray(parents)
    if a.ndim != 1:
        raise ValueError(f"parents must be a 1-D array of parent indices; got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"parents must be integers (−1 for the root); got dtype {a.dtype}")
    a = a.astype(np.int64)
    bad = (a < -1) | (a >= np.arange(a.size))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"parents[i] must be −1 (the root) or an earlier node in [0, i); "
                         f"got parents[{i}] = {a[i]}")
    return a


def chain_tree(n) -> np.ndarray:
    """A chain of n drafts (ordinary speculative decoding with k = n)."""
    n = as_int(n, "n")
    return np.arange(n, dtype=np.int64) - 1


def kary_tree(k, depth) -> np.ndarray:
    """The full k-ary tree of the given depth: k + k² + … + k^depth nodes, breadth first."""
    k = as_int(k, "k", minimum=1)
    depth = as_int(depth, "depth")
    parents, level = [], [-1]
    for _ in range(depth):
        nxt = []
        for u in level:
            for _ in range(k):
                parents.append(u)
                nxt.append(len(parents) - 1)
        level = nxt
    return np.asarray(parents, dtype=np.int64)


def tree_depths(parents) -> np.ndarray:
    """Depth of each node (children of the root have depth 1)."""
    a = check_tree(parents)
    d = np.zeros(a.size, dtype=np.int64)
    for i, u in enumerate(a):
        d[i] = 1 if u < 0 else d[u] + 1
    return d


def tree_ranks(parents) -> np.ndarray:
    """Rank of each node among its siblings (1 = first child), in index order."""
    a = check_tree(parents)
    seen: dict[int, int] = {}
    r = np.zeros(a.size, dtype=np.int64)
    for i, u in enumerate(a):
        seen[int(u)] = seen.get(int(u), 0) + 1
        r[i] = seen[int(u)]
    return r


def tree_attention_mask(parents) -> np.ndarray:
    """n × n boolean mask: node i attends to node j iff j is i or an ancestor of i.

    The target scores every node of the tree in one forward pass over n new tokens with
    this mask (plus the whole context): position i sees exactly its own path.
    """
    a = check_tree(parents)
    n = a.size
    mask = np.eye(n, dtype=bool)
    for i, u in enumerate(a):
        if u >= 0:
            mask[i] |= mask[u]
    return mask


def rank_acceptance(p, q, m) -> np.ndarray:
    """a_r = P(the kept child is the r-th), r = 1 … m, for i.i.d. candidates (ch. 10).

    a_r = Π_{j<r} (1 − ζ_j) · ζ_r with ζ_j = Σ min(r_j, q) (recursive rejection). Their
    sum is :func:`specmath.multidraft.multidraft_acceptance`. Broadcasts over leading axes.
    """
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape; got {p.shape} and {q.shape}")
    m = as_int(m, "m", minimum=1)
    out, reach, r = [], 1.0, p
    for _ in range(m):
        b = np.minimum(r, q).sum(axis=-1)
        out.append(reach * b)
        reach = reach * (1 - b)
        r = _residual(r, q)
    return np.stack(out, axis=-1)


def _check_acceptance(acceptance) -> np.ndarray:
    a = as_probability(acceptance, "acceptance")
    if a.ndim not in (1, 2) or a.shape[-1] < 1:
        raise ValueError("acceptance must have shape (R,) (a_r by sibling rank) or (D, R) "
                         f"(by depth and rank); got shape {a.shape}")
    if (a.sum(axis=-1) > 1 + 1e-9).any():
        raise ValueError("acceptance must sum to at most 1 over ranks (a_r is the probability "
                         f"that the kept child is the r-th); got sums {a.sum(axis=-1)}")
    return a if a.ndim == 2 else a[None, :]


def _a(acc: np.ndarray, d: int, r: int) -> float:
    """a at depth d ≥ 1 and rank r ≥ 1 (the last depth row repeats; ranks beyond R: 0)."""
    row = acc[min(d, acc.shape[0]) - 1]
    return float(row[r - 1]) if r <= row.size else 0.0


def tree_expected_accepted(parents, acceptance) -> float:
    """Expected number of accepted nodes, Σ_v Π_{u ∈ path(v)} a_{d(u), r(u)} (eq. tree-value).

    ``acceptance``: shape (R,) for a_r by sibling rank, or (D, R) by depth (row d−1 for depth
    d; deeper nodes use the last row). E[N] = this + 1 (the correction or bonus token).
    """
    a = check_tree(parents)
    acc = _check_acceptance(acceptance)
    d, r = tree_depths(a), tree_ranks(a)
    reach = np.zeros(a.size)
    for i, u in enumerate(a):
        reach[i] = (1.0 if u < 0 else reach[u]) * _a(acc, int(d[i]), int(r[i]))
    return float(reach.sum())


def _dp(acc: np.ndarray, n: int, max_depth: int | None):
    """F[d][s]: best value of a subtree budget s hanging below a node at depth d − 1."""
    D = min(max_depth, n) if max_depth is not None else n
    R = min(acc.shape[1], n)           # a node has at most n − 1 children
    # F[d][s] for d = D+1 is 0 (no nodes allowed); compute from deep to shallow.
    F = np.zeros((D + 2, n + 1))
    choice: dict = {}
    for d in range(D, 0, -1):
        # G[r][s]: best with children ranks r, r+1, … at depth d and s nodes to place.
        # A node at depth d has d − 1 ancestors and a child of rank r has r − 1 older
        # siblings, so only budgets s ≤ n − d + 2 − r can occur (the rest stay unused).
        G = np.zeros((R + 2, n + 1))
        for r in range(R, 0, -1):
            a = _a(acc, d, r)
            for s in range(1, n - d + 3 - r):
                # t = 1 … s nodes in the r-th child's subtree; 0: no r-th child (nor later)
                v = a * (1 + F[d + 1][:s]) + G[r + 1][s - 1::-1]
                arg = int(np.argmax(v))
                if v[arg] > 1e-15:
                    G[r][s], choice[(d, r, s)] = v[arg], arg + 1
                else:
                    choice[(d, r, s)] = 0
        F[d] = G[1]
    return F, choice


def best_tree_values(acceptance, n, *, max_depth=None) -> np.ndarray:
    """Best expected accepted nodes of a tree with at most s nodes, s = 0 … n (DP).

    Ranks beyond the R given have acceptance 0, so a node gets at most R children; pass
    n ranks (e.g. ``rank_acceptance(p, q, n)``) for the best tree without that cap."""
    acc = _check_acceptance(acceptance)
    n = as_int(n, "n")
    md = None if max_depth is None else as_int(max_depth, "max_depth", minimum=1)
    F, _ = _dp(acc, n, md)
    return F[1].copy()


def best_tree(acceptance, n, *, max_depth=None) -> tuple[float, np.ndarray]:
    """The tree of at most n nodes with the largest eq. tree-value (Sequoia's DP, ch. 10).

    Recursion: the value of a budget s below a node at depth d − 1 is the best split of s
    over the children ranks r = 1, 2, …, the r-th child taking t nodes and contributing
    a_{d,r}(1 + F_{d+1}(t − 1)). O(D R n²) time. Returns (value, parents); the tree may use
    fewer than n nodes when extra nodes add nothing (a = 0).
    """
    acc = _check_acceptance(acceptance)
    n = as_int(n, "n")
    md = None if max_depth is None else as_int(max_depth, "max_depth", minimum=1)
    F, choice = _dp(acc, n, md)
    parents: list[int] = []

    def build(parent: int, d: int, s: int) -> None:
        r = 1
        while s > 0 and r <= acc.shape[1]:
            t = choice.get((d, r, s), 0)
            if t == 0:
                break
            parents.append(parent)
            me = len(parents) - 1
            build(me, d + 1, t - 1)
            s -= t
            r += 1

    build(-1, 1, n)
    # renumber breadth-first so that siblings keep their rank order and parents come first
    par = np.asarray(parents, dtype=np.int64)
    order, frontier = [], [-1]
    while frontier:
        nxt = []
        for u in frontier:
            kids = [i for i in range(par.size) if par[i] == u]
            order.extend(kids)
            nxt.extend(kids)
        frontier = nxt
    new = {old: i for i, old in enumerate(order)}
    out = np.array([-1 if par[o] < 0 else new[int(par[o])] for o in order], dtype=np.int64)
    return float(F[1][n]), out


def _children(parents: np.ndarray) -> dict[int, list[int]]:
    ch: dict[int, list[int]] = {}
    for i, u in enumerate(parents):
        ch.setdefault(int(u), []).append(i)
    return ch


def draft_tree(draft, parents, rng, context: Sequence[int] = ()) -> np.ndarray:
    """Sample a tree's tokens from a draft model: siblings i.i.d. from q(· | parent's path)."""
    fq, V = _as_model(draft, "draft")
    a = check_tree(parents)
    rng = as_generator(rng)
    ctx = tuple(int(c) for c in context)
    tok = np.zeros(a.size, dtype=np.int64)
    paths: dict[int, tuple] = {-1: ctx}
    for i, u in enumerate(a):
        tok[i] = _sample(fq(paths[int(u)]), rng)
        paths[i] = paths[int(u)] + (int(tok[i]),)
    return tok


def tree_distributions(target, draft, parents, tokens, context: Sequence[int] = ()):
    """The rows (p, q), shape (n+1, V), that :func:`tree_step` needs, from toy models.

    Row 0 is the law after the context, row i+1 the law after the path to node i: what one
    target pass with :func:`tree_attention_mask` (and one draft pass) computes.
    """
    fp, V = _as_model(target, "target")
    fq, Vq = _as_model(draft, "draft")
    if V != Vq:
        raise ValueError(f"target and draft must share the vocabulary; got V = {V} and {Vq}")
    a = check_tree(parents)
    t = np.asarray(tokens)
    if t.shape != a.shape or (t.size and not np.issubdtype(t.dtype, np.integer)):
        raise ValueError(f"tokens must be integer token ids of shape {a.shape}; got {t!r}")
    paths: dict[int, tuple] = {-1: tuple(int(c) for c in context)}
    for i, u in enumerate(a):
        paths[i] = paths[int(u)] + (int(t[i]),)
    keys = [-1] + list(range(a.size))
    return (np.stack([fp(paths[i]) for i in keys]), np.stack([fq(paths[i]) for i in keys]))


def _check_tree_step(p, q, parents, tokens):
    a = check_tree(parents)
    n = a.size
    p = as_distribution(p, "p")
    q = as_distribution(q, "q")
    if p.ndim != 2 or p.shape[0] != n + 1:
        raise ValueError(f"p must have shape (n+1, V) = ({n + 1}, V): row 0 at the root, row "
                         f"i+1 after node i; got shape {p.shape}")
    if q.shape != p.shape:
        raise ValueError(f"q must have the shape of p, {p.shape} (row u+1: the law node u's "
                         f"children were drawn from); got {q.shape}")
    t = np.asarray(tokens)
    if t.shape != (n,) or (n and not np.issubdtype(t.dtype, np.integer)):
        raise ValueError(f"tokens must be integer token ids of shape (n,) = ({n},); got "
                         f"shape {t.shape}")
    V = p.shape[1]
    if n and ((t < 0) | (t >= V)).any():
        raise ValueError(f"tokens must be in [0, V) = [0, {V}); got {t[(t < 0) | (t >= V)][0]}")
    return p, q, a, t.astype(np.int64)


def _tree_walk(p, q, a, t, rng, fixed_target: bool) -> np.ndarray:
    ch = _children(a)
    out, node = [], -1
    while True:
        kids = ch.get(node, [])
        pr, qr = p[node + 1], q[node + 1]
        if not kids:
            out.append(_sample(pr, rng))       # a leaf: the bonus token
            return np.asarray(out, dtype=np.int64)
        r, kept = pr, None
        for c in kids:
            x = int(t[c])
            if rng.random() * qr[x] < r[x]:
                kept = c
                break
            if not fixed_target:
                r = _residual(r, qr)
        if kept is None:
            out.append(_sample(_residual(pr, qr) if fixed_target else r, rng))
            return np.asarray(out, dtype=np.int64)
        out.append(int(t[kept]))
        node = kept


def tree_step(p, q, parents, tokens, rng) -> np.ndarray:
    """Verify a draft tree top-down with recursive rejection (ch. 10, algorithm tree).

    Parameters
    ----------
    p : array_like, shape (n+1, V)
        Target distributions: row 0 after the context, row i+1 after the path to node i
        (one target pass over the n tree tokens with :func:`tree_attention_mask`).
    q : array_like, shape (n+1, V)
        Draft distributions: row u+1 is the law node u's children were drawn from (row 0 for
        the root's children). Rows of leaves are not used.
    parents : array_like of int, shape (n,)
    tokens : array_like of int, shape (n,)
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int
        The accepted path's tokens followed by one token (a correction or the bonus).
    """
    p, q, a, t = _check_tree_step(p, q, parents, tokens)
    return _tree_walk(p, q, a, t, as_generator(rng), fixed_target=False)


def broken_tree_step(p, q, parents, tokens, rng) -> np.ndarray:
    """Tree verification with the biased ``"fixed-target"`` sibling rule: for tests."""
    p, q, a, t = _check_tree_step(p, q, parents, tokens)
    return _tree_walk(p, q, a, t, as_generator(rng), fixed_target=True)


def tree_expected_accepted_exact(target, draft, parents, context: Sequence[int] = ()) -> float:
    """E[accepted nodes] of a tree by exact enumeration on toy models (ch. 10).

    Sums over every draw of each node's children (V^{#children} per node) and every path;
    ``target`` and ``draft`` are models with ``next_distribution`` (e.g.
    :class:`specmath.toy.MarkovLM`) or context-independent probability vectors.
    """
    fp, V = _as_model(target, "target")
    fq, Vq = _as_model(draft, "draft")
    if V != Vq:
        raise ValueError(f"target and draft must share the vocabulary; got V = {V} and {Vq}")
    a = check_tree(parents)
    ch = _children(a)
    if any(V ** len(k) > MAX_OUTCOMES for k in ch.values()):
        raise ValueError(f"parents has a node with too many children for exact enumeration "
                         f"(V**children > {MAX_OUTCOMES})")
    ctx0 = tuple(int(c) for c in context)

    def value(node: int, ctx: tuple) -> float:
        kids = ch.get(node, [])
        if not kids:
            return 0.0
        p0, q0 = fp(ctx), fq(ctx)
        # residual chain r_1 … r_m does not depend on which tokens were rejected
        rs = [p0]
        for _ in kids[:-1]:
            rs.append(_residual(rs[-1], q0))
        cont = {}
        total = 0.0
        for xs in itertools.product(range(V), repeat=len(kids)):
            w = float(np.prod(q0[list(xs)]))
            if w == 0:
                continue
            reach = 1.0
            for j, (c, x) in enumerate(zip(kids, xs, strict=True)):
                acc = min(1.0, rs[j][x] / q0[x])
                if acc > 0:
                    key = (c, x)
                    if key not in cont:
                        cont[key] = 1.0 + value(c, ctx + (x,))
                    total += w * reach * acc * cont[key]
                reach *= 1 - acc
        return total

    return value(-1, ctx0)


def top_m_tree(draft, m, depth, context: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic tree: the draft's top-m tokens as children of every node (ch. 10).

    Every node down to ``depth`` gets as children the m most likely tokens of
    q(· | path) (ties broken by the lower token index), as EAGLE-style top-k expansion
    does before any reranking. Returns ``(parents, tokens)``, parents before children.
    """
    fq, V = _as_model(draft, "draft")
    m = as_int(m, "m", minimum=1)
    depth = as_int(depth, "depth", minimum=0)
    if m > V:
        raise ValueError(f"m must be at most the vocabulary size V = {V}; got {m}")
    if m ** depth > MAX_OUTCOMES:
        raise ValueError(f"m**depth must be at most {MAX_OUTCOMES}; got {m}**{depth}")
    parents: list[int] = []
    tokens: list[int] = []
    level = [(-1, tuple(int(c) for c in context))]
    for _ in range(depth):
        nxt = []
        for u, ctx in level:
            for c in np.argsort(-fq(ctx), kind="stable")[:m]:
                parents.append(u)
                tokens.append(int(c))
                nxt.append((len(parents) - 1, ctx + (int(c),)))
        level = nxt
    return np.asarray(parents, dtype=np.int64), np.asarray(tokens, dtype=np.int64)


def deterministic_tree_value(target, parents, tokens, context: Sequence[int] = ()) -> float:
    """E[accepted nodes] of a tree of fixed tokens verified one-hot (ch. 10, eq. ch10-det-tree).

    Σ_v p(path(v)), the target's probability of each node's root-to-node path (the
    product of p(token | tokens before) along it). Exact for any target, context-dependent
    included, when siblings carry distinct tokens and the tree does not depend on the
    verifier's random numbers (proposition ch10-prop-det-tree); no positional assumption.
    """
    fp, V = _as_model(target, "target")
    a = check_tree(parents)
    t = np.asarray(tokens)
    if t.shape != a.shape or (t.size and not np.issubdtype(t.dtype, np.integer)):
        raise ValueError(f"tokens must be integer token ids of shape {a.shape}; got {t!r}")
    if t.size and ((t < 0) | (t >= V)).any():
        raise ValueError(f"tokens must be in [0, V) = [0, {V}); got {t[(t < 0) | (t >= V)][0]}")
    for u, kids in _children(a).items():
        toks = [int(t[c]) for c in kids]
        if len(set(toks)) < len(toks):
            raise ValueError(f"tokens of siblings must be distinct (one-hot verification); "
                             f"node {u}'s children carry {toks}")
    ctx0 = tuple(int(c) for c in context)
    prob: dict[int, float] = {-1: 1.0}
    paths: dict[int, tuple] = {-1: ctx0}
    for i, u in enumerate(a):
        prob[i] = prob[int(u)] * float(fp(paths[int(u)])[int(t[i])])
        paths[i] = paths[int(u)] + (int(t[i]),)
    return float(sum(prob[i] for i in range(a.size)))


def _path_model(target, context: Sequence[int]):
    """Validated next-token rows of ``target`` after ``context`` + a path (ch. 10 trees)."""
    fp, V = _as_model(target, "target")
    ctx0 = _as_context(context, V)
    return lambda v: as_distribution(fp(ctx0 + v), "target row")


def _best_first(pairs):
    """(probability, path) pairs, most probable first; ties: shorter path, then tokens, so
    a path never comes before its parent (a prefix is at least as probable)."""
    return sorted(pairs, key=lambda t: (-t[0], len(t[1]), t[1]))


def best_paths(target, n, context: Sequence[int] = ()) -> list[tuple[float, tuple[int, ...]]]:
    """The n most probable target paths after ``context``, as (probability, tokens), best
    first (ch. 10, section on deterministic trees).

    A path's prefix is at least as probable as the path, so these n paths form a tree:
    by eq. ch10-det-tree it is the best n-node tree of fixed tokens when the draft ranks
    by the target's own probabilities (q = p). ``target`` is a model with
    ``next_distribution`` or one probability vector (the same law after every context).
    """
    row_of = _path_model(target, context)
    n = as_int(n, "n", minimum=1)
    # heap order (−probability, length, tokens): a parent pops before its children
    heap, out = [(-1.0, 0, ())], []
    while len(out) <= n:
        neg, _, v = heapq.heappop(heap)
        out.append((-neg, v))
        row = row_of(v)
        for x in range(row.size):
            heapq.heappush(heap, (neg * row[x], len(v) + 1, v + (x,)))
    return out[1:]


def topk_expansion(target, k, n, context: Sequence[int] = ()
                   ) -> list[tuple[float, tuple[int, ...]]]:
    """SGLang-style tree drafting scored by path probability at q = p (ch. 10): each
    level expands the top k children of the top k paths of the level before, and the n
    best-scored candidates are kept, as (probability, tokens), best first.

    Two caps: a node gets at most k children, and only k paths of a level are expanded;
    either can keep it from the tree of :func:`best_paths` (SGLang's
    ``select_top_k_tokens_tmp`` and ``organize_draft_results``). Ties go to the shorter
    path, so every kept path's parent is kept.
    """
    row_of = _path_model(target, context)
    k, n = as_int(k, "k", minimum=1), as_int(n, "n", minimum=1)
    cands, beams = [], [(1.0, ())]
    for _ in range(n):
        level = []
        for s, v in beams:
            row = row_of(v)
            for x in np.argsort(-row, kind="stable")[:k]:
                level.append((s * float(row[x]), v + (int(x),)))
        cands += level
        beams = _best_first(level)[:k]
    return _best_first(cands)[:n]
