"""Draft trees (ch. 10): closed form vs exact enumeration, the DP's optimality by brute force,
statistical exactness of tree verification.

Statistical checks are G-tests at level ``LEVEL = 1e-3`` (false-alarm rate 0.1 %), fixed
seeds. The power against the biased sibling rule (``"fixed-target"``) is computed from the
exact law of the first emitted token (the root's recursive rejection over its children) and
asserted ≥ 0.99 before the biased verifier is shown to fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gtestpower import power_of_gtest

import specmath as sm
from specmath import multidraft as md
from specmath import stats, toy
from specmath import trees as tr

LEVEL = 1e-3
MIN_POWER = 0.99
P3, Q3 = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.2, 0.5])
TREES = {
    "chain3": tr.chain_tree(3),
    "binary2": tr.kary_tree(2, 2),
    "lopsided": np.array([-1, -1, 0, 0, 2]),
    "star3": np.array([-1, -1, -1]),
}


def iid(d) -> toy.MarkovLM:
    d = np.asarray(d, dtype=float)
    return toy.MarkovLM(np.tile(d, (d.size, 1)), d)


# ---- structure -----------------------------------------------------------------------------

def test_tree_builders_depths_ranks_and_mask():
    b = tr.kary_tree(2, 2)
    assert b.tolist() == [-1, -1, 0, 0, 1, 1]
    assert tr.tree_depths(b).tolist() == [1, 1, 2, 2, 2, 2]
    assert tr.tree_ranks(b).tolist() == [1, 2, 1, 2, 1, 2]
    mask = tr.tree_attention_mask(b)
    # node 4 (child of node 1) sees itself and node 1 only
    assert np.flatnonzero(mask[4]).tolist() == [1, 4]
    assert mask.sum() == 6 + 4          # each node itself + one ancestor for depth-2 nodes
    assert tr.tree_attention_mask(tr.chain_tree(4)).tolist() == np.tril(np.ones((4, 4),
                                                                               bool)).tolist()


def test_chain_closed_form_is_the_geometric_sum_of_chapter_4():
    a = 0.7
    for k in range(6):
        assert tr.tree_expected_accepted(tr.chain_tree(k), [a]) + 1 == pytest.approx(
            sm.expected_tokens(a, k))


# ---- closed form against exact enumeration -------------------------------------------------

@pytest.mark.parametrize("name", list(TREES))
def test_closed_form_equals_exact_enumeration_for_context_free_models(name):
    par = TREES[name]
    a = tr.rank_acceptance(P3, Q3, 3)
    assert a.sum() == pytest.approx(md.multidraft_acceptance(P3, Q3, 3))
    assert tr.tree_expected_accepted(par, a) == pytest.approx(
        tr.tree_expected_accepted_exact(iid(P3), iid(Q3), par), abs=1e-12)


def test_closed_form_is_an_approximation_on_a_context_dependent_model():
    # On a Markov toy the per-node acceptance depends on the path; the closed form with the
    # acceptance of the first position is exact for depth-1 trees only.
    target, draft = toy.toy_pair(3, 0.4, seed=4)
    p0, q0 = target.next_distribution([]), draft.next_distribution([])
    a = tr.rank_acceptance(p0, q0, 3)
    star = TREES["star3"]
    assert tr.tree_expected_accepted(star, a) == pytest.approx(
        tr.tree_expected_accepted_exact(target, draft, star), abs=1e-12)
    deep = TREES["binary2"]
    assert abs(tr.tree_expected_accepted(deep, a)
               - tr.tree_expected_accepted_exact(target, draft, deep)) > 1e-6


# ---- the best tree -------------------------------------------------------------------------

def _all_trees(n):
    for pa in itertools.product(*[range(-1, i) for i in range(n)]):
        yield np.array(pa, dtype=np.int64)


@pytest.mark.parametrize("acc", [[0.6, 0.2, 0.1], [0.3, 0.3, 0.2], [0.9]])
def test_dynamic_programme_finds_the_best_tree_by_brute_force(acc):
    for n in range(1, 7):
        v, par = tr.best_tree(acc, n)
        assert len(par) <= n
        assert tr.tree_expected_accepted(par, acc) == pytest.approx(v)
        brute = max(tr.tree_expected_accepted(t, acc) for t in _all_trees(n))
        assert v == pytest.approx(brute, abs=1e-12)
        assert tr.best_tree_values(acc, n)[n] == pytest.approx(v)


def test_depth_dependent_acceptance_and_depth_limit_by_brute_force():
    acc = np.array([[0.7, 0.2], [0.4, 0.3], [0.2, 0.1]])
    for n in range(1, 6):
        for D in (1, 2, 3):
            v, par = tr.best_tree(acc, n, max_depth=D)
            assert tr.tree_depths(par).max(initial=0) <= D
            brute = max(tr.tree_expected_accepted(t, acc) for t in _all_trees(n)
                        if tr.tree_depths(t).max(initial=0) <= D)
            assert v == pytest.approx(brute, abs=1e-12)


def test_best_tree_beats_chain_and_kary_trees_of_the_same_size():
    a = tr.rank_acceptance(P3, Q3, 4)
    for k, depth in [(2, 2), (2, 3), (3, 2)]:
        kary = tr.kary_tree(k, depth)
        n = kary.size
        v, _ = tr.best_tree(a, n)
        assert v >= tr.tree_expected_accepted(kary, a) - 1e-12
        assert v >= tr.tree_expected_accepted(tr.chain_tree(n), a) - 1e-12


def _greedy_value(a, n):
    """Add, n times, the free slot (next child rank of a node) with the largest product."""
    prods, kids, total = {-1: 1.0}, {-1: 0}, 0.0
    for i in range(n):
        u = max((u for u in prods if kids[u] < len(a)), key=lambda u: prods[u] * a[kids[u]])
        prods[i], kids[i] = prods[u] * a[kids[u]], 0
        kids[u] += 1
        total += prods[i]
    return total


def test_greedy_growth_is_optimal_when_acceptance_does_not_increase_with_rank():
    # the exercise-4 argument: a node is worth at most its parent and its elder sibling
    rng = np.random.default_rng(4)
    for _ in range(40):
        a = np.sort(rng.dirichlet(np.ones(4)) * rng.uniform(0.5, 1))[::-1]
        for n in (1, 5, 10):
            assert _greedy_value(a, n) == pytest.approx(tr.best_tree(a, n)[0], abs=1e-12)


def test_value_is_non_decreasing_in_the_budget():
    vals = tr.best_tree_values([0.5, 0.2, 0.1], 12)
    assert np.all(np.diff(vals) >= -1e-15) and vals[0] == 0


# ---- statistical exactness of tree_step ----------------------------------------------------

def sample_tree(step, target, draft, parents, n, rng):
    """Counts over V^(D+1) of the first D+1 tokens (D = depth): one tree verification, then
    the target's own sampling; and counts of the number of accepted nodes."""
    V = target.vocab_size
    D = int(tr.tree_depths(parents).max())
    counts = np.zeros((V,) * (D + 1), dtype=np.int64)
    taus = np.zeros(D + 1, dtype=np.int64)
    for _ in range(n):
        tok = tr.draft_tree(draft, parents, rng)
        p, q = tr.tree_distributions(target, draft, parents, tok)
        out = step(p, q, parents, tok, rng).tolist()
        taus[len(out) - 1] += 1
        out += target.sample(D + 1 - len(out), rng, out).tolist()
        counts[tuple(out)] += 1
    return counts, taus


N_STAT = 5_000


def test_tree_step_on_a_markov_toy_follows_the_target_and_the_test_has_power():
    target, draft = toy.toy_pair(3, 0.4, seed=4)
    par = TREES["lopsided"]
    p0, q0 = target.next_distribution([]), draft.next_distribution([])
    biased_first = md.multidraft_output_distribution(p0, q0, 2, rule="fixed-target")
    assert power_of_gtest(p0, biased_first, N_STAT, LEVEL) >= MIN_POWER
    counts, taus = sample_tree(tr.tree_step, target, draft, par, N_STAT,
                               np.random.default_rng(11))
    law = sm.sequence_distribution(target, counts.ndim).ravel()
    # sequences expected fewer than 5 times are pooled into one cell (the usual condition
    # for the χ² approximation of the G statistic; many of the 3⁴ cells are that rare)
    small = law * N_STAT < 5
    obs = np.append(counts.ravel()[~small], counts.ravel()[small].sum())
    assert stats.g_test(obs, np.append(law[~small], law[small].sum())).pvalue > LEVEL
    # the mean number of accepted nodes against the exact enumeration: z-test at |z| < 3.3
    # (two-sided 1e-3), with the sample standard deviation
    acc = np.repeat(np.arange(taus.size), taus)
    z = (acc.mean() - tr.tree_expected_accepted_exact(target, draft, par)) / (
        acc.std(ddof=1) / np.sqrt(acc.size))
    assert abs(z) < 3.3


def test_biased_tree_verifier_is_caught_on_the_first_token():
    target, draft = toy.toy_pair(3, 0.4, seed=4)
    par = TREES["lopsided"]
    counts, _ = sample_tree(tr.broken_tree_step, target, draft, par, N_STAT,
                            np.random.default_rng(11))
    first = counts.reshape(3, -1).sum(axis=1)
    assert stats.g_test(first, target.next_distribution([])).pvalue < LEVEL


def test_leaf_emits_a_bonus_and_empty_tree_is_plain_sampling():
    rng = np.random.default_rng(0)
    p = np.tile([0.2, 0.3, 0.5], (2, 1))
    out = tr.tree_step(p, p, [-1], [1], rng)        # p = q: the node is kept, then a bonus
    assert len(out) == 2 and out[0] == 1
    out = tr.tree_step(p[:1], p[:1], np.zeros(0, dtype=int), np.zeros(0, dtype=int), rng)
    assert out.shape == (1,)


# ---- review R7b findings 8 and 9 -----------------------------------------------------------

def _onehot_walk(target, parents, tokens, node=-1, ctx=(), reverse=False):
    """Exact E[accepted] of one-hot verification of a fixed tree (residual: p without the
    rejected children), walked recursively; reverse=True reverses every sibling order."""
    r, stay, total = target.next_distribution(list(ctx)), 1.0, 0.0
    kids = [i for i, u in enumerate(parents) if u == node]
    for c in kids[::-1] if reverse else kids:
        x = int(tokens[c])
        acc = min(1.0, r[x])
        total += stay * acc * (1 + _onehot_walk(target, parents, tokens, c, ctx + (x,),
                                                reverse))
        stay *= 1 - acc
        if stay > 0:
            r = sm.residual_distribution(r, np.eye(r.size)[x])
    return total


@pytest.mark.parametrize("seed", [3, 4, 5, 6])
def test_deterministic_tree_value_is_the_sum_of_target_path_probabilities(seed):
    """Proposition ch10-prop-det-tree: a tree of fixed tokens (siblings distinct) verified
    one-hot accepts Σ_v p(path(v)) tokens on average, exactly, on a context-dependent
    Markov toy, in either sibling order. The review's value for toy_pair(4, 0.4, seed=3),
    top-2 tree of depth 2, is 1.26914355538. The positional closed form with the root's
    rank chances is not this value (the formula is not that model in disguise)."""
    target, draft = toy.toy_pair(4, 0.4, seed=seed)
    for m, depth in ((1, 3), (2, 2), (3, 2), (2, 3), (4, 1)):
        par, tok = tr.top_m_tree(draft, m, depth)
        assert par.size == sum(m ** d for d in range(1, depth + 1))
        val = tr.deterministic_tree_value(target, par, tok)
        for rev in (False, True):
            assert _onehot_walk(target, par, tok, reverse=rev) == pytest.approx(val,
                                                                               abs=1e-12)
    par, tok = tr.top_m_tree(draft, 2, 2)
    val = tr.deterministic_tree_value(target, par, tok)
    if seed == 3:
        assert val == pytest.approx(1.26914355538, abs=1e-10)
    p0 = target.next_distribution([])
    a_root = p0[tok[par == -1]]                  # the root's rank chances p(c_r)
    assert abs(tr.tree_expected_accepted(par, a_root) - val) > 1e-6
    # a lopsided tree with arbitrary distinct sibling tokens
    par = np.array([-1, -1, 0, 0, 2])
    tok = np.array([3, 0, 1, 2, 0])
    assert _onehot_walk(target, par, tok) == pytest.approx(
        tr.deterministic_tree_value(target, par, tok), abs=1e-12)


def test_deterministic_tree_value_rejects_repeated_sibling_tokens_and_bad_shapes():
    target, draft = toy.toy_pair(4, 0.4, seed=3)
    with pytest.raises(ValueError, match="siblings must be distinct"):
        tr.deterministic_tree_value(target, np.array([-1, -1]), np.array([2, 2]))
    with pytest.raises(ValueError, match="tokens must be integer token ids of shape"):
        tr.deterministic_tree_value(target, np.array([-1, -1]), np.array([2]))
    with pytest.raises(ValueError, match=r"tokens must be in \[0, V\)"):
        tr.deterministic_tree_value(target, np.array([-1]), np.array([7]))
    with pytest.raises(ValueError, match="m must be at most the vocabulary size"):
        tr.top_m_tree(draft, 5, 1)
    with pytest.raises(ValueError, match="depth"):
        tr.top_m_tree(draft, 2, -1)


def test_best_deterministic_tree_of_n_nodes_is_the_n_most_probable_target_paths():
    """Every set of n ≤ 4 paths (V = 3, depth ≤ 3) closed under parents is a tree; the best
    one's Σ p(path) equals the sum of the n largest path probabilities."""
    target, _ = toy.toy_pair(3, 0.4, seed=7)
    prefixes = [pre for d in (1, 2, 3) for pre in itertools.product(range(3), repeat=d)]
    prob = {pre: float(np.prod([target.next_distribution(list(pre[:j]))[pre[j]]
                                for j in range(len(pre))])) for pre in prefixes}
    for n in (1, 2, 3, 4):
        brute = max(sum(prob[v] for v in s) for s in itertools.combinations(prefixes, n)
                    if all(len(v) == 1 or v[:-1] in s for v in s))
        assert brute == pytest.approx(sum(sorted(prob.values())[-n:]), abs=1e-12)


def test_best_tree_is_a_chain_exactly_while_alpha_to_the_n_is_at_least_a2_on_the_slider():
    """Review R7b finding 9: for the explorer's pairs (closeness 0, 0.05, …, 1) and every
    budget its slider offers (n ≤ 60) the best tree of n nodes has the chain's value exactly
    when α^n ≥ a₂. At closeness 0.9 it branches from n = 47; from 0.95 up never within 60."""
    from specmath.widgets.trees import trees_pair

    first = {}
    for c in np.round(np.arange(0, 1.0001, 0.05), 2):
        a = tr.rank_acceptance(*trees_pair(c), 60)
        best = tr.best_tree_values(a, 60)
        for n in range(1, 61):
            chain = tr.tree_expected_accepted(tr.chain_tree(n), a)
            assert (best[n] - chain < 1e-12) == (a[0] ** n >= a[1])
            if best[n] - chain >= 1e-12:
                first.setdefault(float(c), n)
    assert first[0.9] == 47 and 0.95 not in first and 1.0 not in first
    assert first[0.0] == 3


def _greedy_slot_values(a, n):
    """Best values by filling the most valuable free slot n times (ch. 10, ex. 4): optimal
    for non-increasing rank acceptances; an independent check of the programme."""
    out, reach, kids, total = [0.0], [1.0], [0], 0.0    # node 0: the root (not counted)
    for _ in range(n):
        vals = [reach[v] * (a[kids[v]] if kids[v] < a.size else 0.0)
                for v in range(len(reach))]
        v = int(np.argmax(vals))
        total += vals[v]
        kids[v] += 1
        reach.append(vals[v])
        kids.append(0)
        out.append(total)
    return np.array(out)


def test_programme_with_as_many_ranks_as_nodes_equals_greedy_slot_filling():
    """Review R11c finding 1: with n rank acceptances the (pruned, vectorised) programme gives
    the optimum of ex. 4's greedy on random pairs, n ≤ 30, so no cap on children binds."""
    rng = np.random.default_rng(14)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        a = tr.rank_acceptance(p, q, 30)
        np.testing.assert_allclose(tr.best_tree_values(a, 30), _greedy_slot_values(a, 30),
                                   atol=1e-12)


def test_six_children_cap_binds_from_17_nodes_in_the_running_example():
    """Review R11c finding 1: the running example's best tree of 40 nodes has E[N] 2.979
    (13 root children), of 30 nodes 2.845; six ranks (at most six children per node) give
    2.914 and 2.820 and agree with the uncapped optimum below 17 nodes only."""
    p, q = np.array([0.5, 0.25, 0.15, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    a = tr.rank_acceptance(p, q, 40)
    best, capped = tr.best_tree_values(a, 40), tr.best_tree_values(a[:6], 40)
    assert best[40] + 1 == pytest.approx(2.97912, abs=1e-5)
    assert best[30] + 1 == pytest.approx(2.84533, abs=1e-5)
    assert capped[40] + 1 == pytest.approx(2.91395, abs=1e-5)
    assert capped[30] + 1 == pytest.approx(2.81967, abs=1e-5)
    gap = best - capped
    assert np.all(np.abs(gap[:17]) < 1e-12) and np.all(gap[17:] > 1e-4)
    assert (tr.best_tree(a, 40)[1] == -1).sum() == 13
