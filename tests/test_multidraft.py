"""Several candidates at one position (ch. 10): exact laws, the ceiling, statistical exactness.

Exact checks enumerate every tuple of candidates with an independent implementation of the
rule. Statistical checks are G-tests at level ``LEVEL = 1e-3`` (false-alarm rate 0.1 %),
fixed seeds, with the power against the biased ``"fixed-target"`` rule computed from its
exact law and asserted ≥ 0.99 before the biased sampler is shown to fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gtestpower import power_of_gtest

import specmath as sm
from specmath import multidraft as md
from specmath import stats

LEVEL = 1e-3
MIN_POWER = 0.99
RNG = np.random.default_rng(10)
PAIRS = [(RNG.dirichlet(np.full(4, 0.6)), RNG.dirichlet(np.full(4, 0.6))) for _ in range(6)]
P_BIAS, Q_BIAS = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.2, 0.5])  # fixed-target TV 0.06
N_STAT = 6_000


def brute_law(p, q, m, *, replacement=True, fixed_target=False):
    """Output law and P(kept) by enumerating every candidate tuple (independent of specmath)."""
    V = p.size
    out, kept = np.zeros(V), 0.0
    for xs in itertools.product(range(V), repeat=m):
        if not replacement and len(set(xs)) < m:
            continue
        # the tuple's probability, and the proposal each candidate was drawn from
        w, qj, props = 1.0, q.copy(), []
        for x in xs:
            props.append(qj)
            w *= qj[x]
            if not replacement:
                qj = qj.copy()
                qj[x] = 0
                qj = qj / qj.sum() if qj.sum() > 0 else qj
        if w == 0:
            continue
        r, reach = p.copy(), 1.0
        for x, qx in zip(xs, props, strict=True):
            a = min(1.0, r[x] / qx[x])
            out[x] += w * reach * a       # earlier ones rejected, this one kept
            kept += w * reach * a
            reach *= 1 - a
            if not fixed_target:
                res = np.maximum(r - qx, 0)
                r = res / res.sum() if res.sum() > 1e-12 else r
        if fixed_target:
            res = np.maximum(p - q, 0)
            r = res / res.sum() if res.sum() > 1e-12 else p
        out += w * reach * r
    return out, kept


# ---- known values and properties --------------------------------------------------------

@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_one_candidate_is_ordinary_speculative_sampling(p, q):
    assert md.multidraft_acceptance(p, q, 1) == pytest.approx(sm.acceptance_probability(p, q))
    assert md.multidraft_ot_ceiling(p, q, 1) == pytest.approx(1 - sm.tv_distance(p, q))


@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_acceptance_is_non_decreasing_in_m_and_below_the_ot_ceiling(p, q):
    acc = [md.multidraft_acceptance(p, q, m) for m in range(1, 7)]
    assert np.all(np.diff(acc) >= -1e-15)
    for m in (1, 2, 3):
        assert acc[m - 1] <= md.multidraft_ot_ceiling(p, q, m) + 1e-9


@pytest.mark.parametrize(("p", "q"), PAIRS)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_recursive_rejection_emits_exactly_p_by_enumerating_every_candidate_tuple(p, q, m):
    law, kept = brute_law(p, q, m)
    assert law == pytest.approx(p, abs=1e-12)
    assert kept == pytest.approx(md.multidraft_acceptance(p, q, m), abs=1e-12)
    assert md.multidraft_output_distribution(p, q, m) == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize(("p", "q"), PAIRS)
@pytest.mark.parametrize("m", [2, 3])
def test_without_replacement_is_exact_and_its_acceptance_matches_enumeration(p, q, m):
    law, kept = brute_law(p, q, m, replacement=False)
    assert law == pytest.approx(p, abs=1e-12)
    assert kept == pytest.approx(md.multidraft_acceptance(p, q, m, replacement=False),
                                 abs=1e-12)


@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_fixed_target_rule_is_biased_with_the_stated_law(p, q):
    for m in (1, 2, 3):
        law, _ = brute_law(p, q, m, fixed_target=True)
        closed = md.multidraft_output_distribution(p, q, m, rule="fixed-target")
        assert law == pytest.approx(closed, abs=1e-12)
    # exact at m = 1; biased at m = 2 unless p = q
    assert not np.allclose(md.multidraft_output_distribution(p, q, 2, rule="fixed-target"), p,
                           atol=1e-4)


@pytest.mark.parametrize(("p", "q"), PAIRS)
@pytest.mark.parametrize("m", [2, 3])
def test_ot_ceiling_linear_program_equals_the_minimum_cut(p, q, m):
    assert md.multidraft_ot_ceiling(p, q, m) == pytest.approx(
        md.multidraft_ot_ceiling_cut(p, q, m), abs=1e-7)


@pytest.mark.parametrize(("p", "q"), PAIRS)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_ot_ceiling_is_below_the_per_token_bound_sum_min_p_and_hit_probability(p, q, m):
    # eq. ch10-upper: P(Y = y, y among the X's) ≤ min(p(y), 1 − (1 − q(y))^m)
    upper = np.minimum(p, 1 - (1 - q) ** m).sum()
    assert md.multidraft_ot_ceiling(p, q, m) <= upper + 1e-9
    if m == 1:
        assert upper == pytest.approx(sm.acceptance_probability(p, q))


@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_fixed_target_rule_over_emits_every_token_with_p_at_most_q(p, q):
    # its law at p ≤ q is p (1 − (1 − α)^m)/α, above p for m ≥ 2
    a = sm.acceptance_probability(p, q)
    low = p <= q
    for m in (2, 3):
        law = md.multidraft_output_distribution(p, q, m, rule="fixed-target")
        assert law[low] == pytest.approx(p[low] * (1 - (1 - a) ** m) / a)
        assert (law[low] > p[low]).all()


def _with_zeros(v, rng):
    v = v.copy()
    v[rng.choice(v.size, size=rng.integers(1, 3), replace=False)] = 0
    return v / v.sum()


_RZ = np.random.default_rng(1010)
ZERO_PAIRS = [(_with_zeros(_RZ.dirichlet(np.ones(5)), _RZ),
               _with_zeros(_RZ.dirichlet(np.ones(5)), _RZ)) for _ in range(12)]
ZERO_PAIRS = [(p, q) for p, q in ZERO_PAIRS if np.minimum(p, q).sum() > 0]


def test_fixed_target_rule_never_emits_a_p_zero_token_the_draft_proposes():
    # review R9c finding 2: at p = 0 < q nothing is over-emitted
    p, q = np.array([0.6, 0.4, 0.0]), np.array([0.3, 0.3, 0.4])
    law2, _ = brute_law(p, q, 2, fixed_target=True)
    law3, _ = brute_law(p, q, 3, fixed_target=True)
    assert law2 == pytest.approx([0.54, 0.46, 0.0], abs=1e-12)
    assert law3 == pytest.approx([0.516, 0.484, 0.0], abs=1e-12)


@pytest.mark.parametrize(("p", "q"), ZERO_PAIRS)
def test_fixed_target_rule_over_emits_exactly_tokens_with_0_lt_p_le_q_zeros_included(p, q):
    a = sm.acceptance_probability(p, q)
    low = (p > 0) & (p <= q)
    for m in (2, 3):
        law, _ = brute_law(p, q, m, fixed_target=True)
        assert law == pytest.approx(
            md.multidraft_output_distribution(p, q, m, rule="fixed-target"), abs=1e-12)
        assert law[low] == pytest.approx(p[low] * (1 - (1 - a) ** m) / a)
        assert (law[low] > p[low]).all()
        assert (law[p == 0] == 0).all()
        assert not np.allclose(law, p, atol=1e-6)  # q not proportional to p: biased


PROPORTIONAL_PAIRS = [(np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])),
                      (np.array([0.4, 0.3, 0.2, 0.1, 0.0]),
                       np.array([0.24, 0.18, 0.12, 0.06, 0.4]))] + [
    (np.append(p, 0.0), np.append(a * p, 1 - a))
    for (p, _), a in zip(ZERO_PAIRS[:4], (0.2, 0.5, 0.7, 0.9), strict=True)]


@pytest.mark.parametrize(("p", "q"), PROPORTIONAL_PAIRS)
def test_fixed_target_rule_is_exact_when_q_is_proportional_to_p_on_its_support(p, q):
    # review R9c finding 1: q = alpha p on supp p makes the mistake exact at every m
    for m in (2, 3, 4):
        law, _ = brute_law(p, q, m, fixed_target=True)
        assert law == pytest.approx(p, abs=1e-12)
        assert md.multidraft_output_distribution(p, q, m, rule="fixed-target") == \
            pytest.approx(p, abs=1e-12)


def test_fixed_target_rule_is_biased_when_p_beats_q_on_the_support_but_not_in_proportion():
    # no token with 0 < p <= q is necessary for exactness, not sufficient
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.1, 0.3, 0.6])
    law, _ = brute_law(p, q, 2, fixed_target=True)
    assert law == pytest.approx([0.4, 0.6, 0.0], abs=1e-12)


@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_without_replacement_over_the_whole_vocabulary_always_keeps_one(p, q):
    assert md.multidraft_acceptance(p, q, p.size, replacement=False) == pytest.approx(
        1.0, abs=1e-12)


def test_known_values_identical_draft_and_disjoint_supports():
    p = np.array([0.5, 0.3, 0.2])
    assert md.multidraft_acceptance(p, p, 3) == pytest.approx(1.0)
    q = np.array([0.0, 0.0, 1.0])
    pd = np.array([0.5, 0.5, 0.0])
    assert md.multidraft_acceptance(pd, q, 4) == 0.0
    assert md.multidraft_ot_ceiling(pd, q, 2) == pytest.approx(0.0, abs=1e-9)
    # one-hot target: kept iff some candidate equals it: 1 − (1 − q(x))^m
    e = np.array([0.0, 1.0, 0.0])
    q2 = np.array([0.2, 0.3, 0.5])
    for m in (1, 2, 4):
        assert md.multidraft_acceptance(e, q2, m) == pytest.approx(1 - 0.7 ** m)
        assert md.multidraft_ot_ceiling_cut(e, q2, m) == pytest.approx(1 - 0.7 ** m)


def test_acceptance_broadcasts_over_leading_axes():
    P = np.stack([p for p, _ in PAIRS])
    Q = np.stack([q for _, q in PAIRS])
    got = md.multidraft_acceptance(P, Q, 3)
    assert got.shape == (len(PAIRS),)
    assert got == pytest.approx([md.multidraft_acceptance(p, q, 3) for p, q in PAIRS])


# ---- statistical exactness ---------------------------------------------------------------

def _sample(step, p, q, m, n, rng, replacement=True):
    counts = np.zeros(p.size, dtype=np.int64)
    for _ in range(n):
        if replacement:
            c = rng.choice(p.size, size=m, p=q)
        else:
            c = rng.choice(p.size, size=m, p=q, replace=False)   # successive sampling
        counts[step(p, q, c, rng)] += 1
    return counts


def test_multidraft_step_follows_the_target_and_the_test_has_power():
    biased = md.multidraft_output_distribution(P_BIAS, Q_BIAS, 2, rule="fixed-target")
    assert power_of_gtest(P_BIAS, biased, N_STAT, LEVEL) >= MIN_POWER
    counts = _sample(md.multidraft_step, P_BIAS, Q_BIAS, 2, N_STAT, np.random.default_rng(1))
    assert stats.g_test(counts, P_BIAS).pvalue > LEVEL


def test_biased_fixed_target_step_is_caught_and_follows_its_own_law():
    biased = md.multidraft_output_distribution(P_BIAS, Q_BIAS, 2, rule="fixed-target")
    counts = _sample(md.broken_multidraft_step, P_BIAS, Q_BIAS, 2, N_STAT,
                     np.random.default_rng(1))
    assert stats.g_test(counts, P_BIAS).pvalue < LEVEL
    assert stats.g_test(counts, biased).pvalue > LEVEL


def test_without_replacement_step_follows_the_target():
    # numpy's choice(replace=False, p=q) draws successively, renormalising: the law assumed.
    def step(p, q, c, rng):
        return md.multidraft_step(p, q, c, rng, replacement=False)

    counts = _sample(step, P_BIAS, Q_BIAS, 2, N_STAT, np.random.default_rng(3),
                     replacement=False)
    assert stats.g_test(counts, P_BIAS).pvalue > LEVEL


def test_edge_cases_q_zero_at_a_candidate_and_equal_rows():
    rng = np.random.default_rng(0)
    p = np.array([0.2, 0.3, 0.5])
    q = np.array([0.0, 0.5, 0.5])      # a rounded draft: q(0) = 0 drafted anyway
    for _ in range(20):
        assert md.multidraft_step(p, q, [0, 0], rng) == 0    # min(1, p/0⁺) = 1
        assert md.multidraft_step(p, p, [2, 1], rng) == 2    # p = q: first always kept


# ---- the exact ceiling by sorting (theorem ch10-thm-sorted), issue 16 -----------------------

def test_sorted_ratio_prefix_ceiling_equals_the_subset_minimum_on_random_pairs():
    rng = np.random.default_rng(3)
    worst = 0.0
    for t in range(3000):
        V = int(rng.integers(2, 11))
        p = rng.dirichlet(np.full(V, rng.choice([0.2, 1.0, 3.0])))
        q = rng.dirichlet(np.full(V, rng.choice([0.2, 1.0, 3.0])))
        if t % 5 == 0:
            p[rng.integers(V)] = 0.0
            p /= p.sum()
        if t % 7 == 0:
            q[rng.integers(V)] = 0.0
            q /= q.sum()
        m = int(rng.integers(1, 6))
        worst = max(worst, abs(md.multidraft_ot_ceiling_sorted(p, q, m)
                               - md.multidraft_ot_ceiling_cut(p, q, m)))
    assert worst < 1e-12


def test_sorted_ceiling_equals_the_linear_program_and_bounds_recursive_rejection():
    rng = np.random.default_rng(4)
    for _ in range(25):
        V = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        for m in (1, 2, 3):
            ot = md.multidraft_ot_ceiling_sorted(p, q, m)
            assert ot == pytest.approx(md.multidraft_ot_ceiling(p, q, m), abs=1e-7)
            assert md.multidraft_acceptance(p, q, m) <= ot + 1e-12
            assert ot <= np.minimum(p, 1 - (1 - q) ** m).sum() + 1e-12   # U_m


def test_sorted_ceiling_at_one_candidate_is_alpha_and_scales_to_a_real_vocabulary():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.full(151_936, 0.05)), rng.dirichlet(np.full(151_936, 0.05))
    assert md.multidraft_ot_ceiling_sorted(p, q, 1) == pytest.approx(
        np.minimum(p, q).sum(), abs=1e-12)
    rows = md.multidraft_ot_ceiling_sorted(np.stack([p, q]), np.stack([q, p]), 2)
    assert rows.shape == (2,) and np.all(rows <= 1 + 1e-12)
    with pytest.raises(ValueError, match="m"):
        md.multidraft_ot_ceiling_sorted(p, q, 0)
    with pytest.raises(ValueError, match="same shape"):
        md.multidraft_ot_ceiling_sorted(np.stack([p, q]), np.stack([q]), 2)


def test_a_non_prefix_set_is_never_better_than_the_best_prefix():
    # the statement of the theorem directly: for every subset S, the bracket at S is at
    # least the smallest bracket over ratio prefixes
    rng = np.random.default_rng(6)
    for _ in range(300):
        V = int(rng.integers(2, 8))
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        m = int(rng.integers(2, 5))
        best_prefix = md.multidraft_ot_ceiling_sorted(p, q, m)
        masks = ((np.arange(2 ** V)[:, None] >> np.arange(V)) & 1).astype(bool)
        brackets = 1 - masks @ p + 1 - (1 - masks @ q) ** m
        assert brackets.min() >= best_prefix - 1e-12


# ---- deterministic top-m candidates (proposition ch10-prop-topk) -----------------------------

def _one_hot_recursive(p, cands):
    """Exact P(kept) and output law of one-hot recursive verification of fixed candidates."""
    V = p.size
    r, stay, law = p.copy(), 1.0, np.zeros(V)
    for c in cands:
        acc = min(1.0, r[c])
        law[c] += stay * acc
        stay *= 1 - acc
        if stay > 0:
            r = sm.residual_distribution(r, np.eye(V)[c])
    return 1 - stay, law + stay * r


def test_topk_keep_probability_is_the_target_mass_of_the_draft_top_m_and_output_is_p():
    rng = np.random.default_rng(7)
    for _ in range(300):
        V = int(rng.integers(2, 9))
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        for m in range(1, V + 1):
            top = np.argsort(-q, kind="stable")[:m]
            kept, law = _one_hot_recursive(p, top)
            assert md.topk_keep_probability(p, q, m) == pytest.approx(kept, abs=1e-12)
            assert md.topk_keep_probability(p, q, m) == pytest.approx(p[top].sum(), abs=1e-12)
            assert np.abs(law - p).max() < 1e-12
    with pytest.raises(ValueError, match="m must be at most"):
        md.topk_keep_probability(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 3)


def test_topk_rank_chances_follow_the_target_and_can_increase_with_draft_rank():
    p, q = np.array([0.1, 0.6, 0.3]), np.array([0.5, 0.3, 0.2])
    # one-hot recursive verification keeps the r-th candidate with probability p(c_r)
    chances = np.diff([0.0] + [md.topk_keep_probability(p, q, m) for m in (1, 2, 3)])
    assert chances == pytest.approx([0.1, 0.6, 0.3])
    assert chances[1] > chances[0]   # increases with the draft's rank


# ---- rank acceptances of i.i.d. recursive rejection (lemma ch10-lem-rank) --------------------

def test_iid_rank_acceptances_and_betas_never_increase():
    from specmath import trees as tr

    rng = np.random.default_rng(16)
    for _ in range(3000):
        V = int(rng.integers(2, 12))
        p = rng.dirichlet(np.full(V, rng.choice([0.3, 1.0, 3.0])))
        q = rng.dirichlet(np.full(V, rng.choice([0.3, 1.0, 3.0])))
        a = tr.rank_acceptance(p, q, 6)
        assert np.all(np.diff(a) <= 1e-15)
        r, betas = p, []
        for _ in range(5):
            betas.append(np.minimum(r, q).sum())
            if np.maximum(r - q, 0).sum() <= 0:
                break
            r = sm.residual_distribution(r, q)
        assert np.all(np.diff(betas) <= 1e-12)


def test_theorem_labels_cited_in_multidraft_and_trees_docstrings_exist_in_the_book():
    """Review R7b finding 12: topk_keep_probability cited ch8-thm-onehot, a label that
    does not exist (the theorem is ch8-thm-greedy). Every chapter label the two modules
    cite must be a label of the book."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    book = "".join(p.read_text() for p in (root / "book" / "md").glob("*.md"))
    labels = set(re.findall(r":label: (\S+)", book))
    labels |= set(re.findall(r"\$\$ \((ch\d+-[\w-]+)\)", book))      # equation labels
    cited = set()
    for mod in ("multidraft.py", "trees.py"):
        src = (root / "specmath" / mod).read_text()
        cited |= set(re.findall(r"\b(ch\d+-(?:thm|prop|lem|alg|def|det)-[\w-]*\w)", src))
    assert cited and "ch8-thm-onehot" not in cited
    assert not sorted(cited - labels), sorted(cited - labels)
