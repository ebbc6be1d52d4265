"""Block verification (ch. 9): exact laws by enumeration, optimality, statistical exactness.

Exact checks enumerate every draft block and outcome (``specmath.block``) on toy models,
context-dependent (first-order Markov chains) and context-independent. Statistical checks
are G-tests at the nominal (asymptotic χ²) level ``LEVEL = 1e-3``, fixed seeds, with the
power against a biased rule computed from its exact law and asserted ≥ 0.99 before the
biased sampler is shown to fail. The real false-alarm rates, simulated in
``test_gtest_false_alarm_rates_by_simulation``: close to 0.1 % on the i.i.d. 27-cell law
(n = 12 000, every expected count ≥ 82); about 0.05 %, below the nominal, on the 81-cell
context-dependent law (n = 6000, 30 cells expected below 5), where the asymptotic level
is only an upper bound.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gtestpower import power_of_gtest

import specmath as sm
from specmath import stats, toy

LEVEL = 1e-3
MIN_POWER = 0.99

P_EX, Q_EX = np.array([1 / 3, 2 / 3]), np.array([2 / 3, 1 / 3])  # Sun et al.'s example


def iid(d) -> toy.MarkovLM:
    """A context-independent model: the same next-token law after every token."""
    d = np.asarray(d, dtype=float)
    return toy.MarkovLM(np.tile(d, (d.size, 1)), d)


def survival(pmf: np.ndarray) -> np.ndarray:
    """P(τ ≥ i), i = 1 … k, from P(τ = i), i = 0 … k."""
    return pmf[::-1].cumsum()[::-1][1:]


# ---- known values ------------------------------------------------------------------------

def test_paper_example_gives_ten_eleven_twelve_ninths():
    assert sm.expected_accepted(P_EX, Q_EX, 2, rule="tokenwise") == pytest.approx(10 / 9,
                                                                                  abs=1e-12)
    assert sm.expected_accepted(P_EX, Q_EX, 2) == pytest.approx(11 / 9, abs=1e-12)
    assert sm.accepted_upper_bound(P_EX, Q_EX, 2) == pytest.approx(12 / 9, abs=1e-12)
    # the same numbers with the i.i.d. model written as a Markov chain
    assert sm.expected_accepted(iid(P_EX), iid(Q_EX), 2) == pytest.approx(11 / 9, abs=1e-12)


def test_given_the_whole_draft_block_differs_from_the_prefix_weights_but_not_on_average():
    # finding 1 of the Part II review: Σ aᵢ is not E[ℓ | draft]; on (0, 0) block expects
    # 1/2 drafts, token-wise 3/4 (a per-draft gain of −1/4); averaged over q both are 11/9
    p, q = np.tile(P_EX, (3, 1)), np.tile(Q_EX, (2, 1))
    given = {x: sm.block_accepted_given_draft(p, q, list(x))
             for x in itertools.product(range(2), repeat=2)}
    assert [given[x][0].sum() for x in sorted(given)] == pytest.approx([0.5, 2.0, 1.5, 2.0])
    assert [given[x][1].sum() for x in sorted(given)] == pytest.approx([0.75, 1.5, 1.5, 2.0])
    Qx = {x: Q_EX[x[0]] * Q_EX[x[1]] for x in given}
    assert sum(Qx[x] * given[x][0].sum() for x in given) == pytest.approx(11 / 9, abs=1e-12)
    assert sum(Qx[x] * given[x][1].sum() for x in given) == pytest.approx(11 / 9, abs=1e-12)


def test_given_the_whole_draft_law_matches_sampling_with_that_draft_fixed():
    # block_step with the draft (0, 0) held fixed: mean accepted drafts ≈ 1/2, not Σaᵢ = 3/4
    # (z-test, fixed seed; the standard error is ≤ 1/√n, so |z| < 4 has false-alarm rate
    # about 6e-5, and 3/4 is 25 standard errors away)
    p, q = np.tile(P_EX, (3, 1)), np.tile(Q_EX, (2, 1))
    rng = np.random.default_rng(7)
    n = 10_000
    kept = np.array([len(sm.block_step(p, q, [0, 0], rng)) - 1 for _ in range(n)])
    expect = sm.block_accepted_given_draft(p, q, [0, 0])[0].sum()
    assert abs(kept.mean() - expect) / (kept.std(ddof=1) / np.sqrt(n)) < 4
    assert abs(kept.mean() - 0.75) / (kept.std(ddof=1) / np.sqrt(n)) > 10


@pytest.mark.parametrize("seed", range(3))
def test_given_the_whole_draft_averages_to_the_expected_accepted_length(seed):
    tgt, dft = toy.toy_pair(3, 0.4, seed=seed)
    k, total = 3, 0.0
    for x in itertools.product(range(3), repeat=k):
        pr = np.stack([tgt.next_distribution(list(x[:i])) for i in range(k + 1)])
        qr = np.stack([dft.next_distribution(list(x[:i])) for i in range(k)])
        total += np.prod(qr[np.arange(k), x]) * sm.block_accepted_given_draft(
            pr, qr, list(x))[0].sum()
    assert total == pytest.approx(sm.expected_accepted(tgt, dft, k), abs=1e-12)


def test_block_weights_by_hand_on_the_paper_example():
    # draft (a, b) = (0, 1): a₁ = min(1, (1/3)/(2/3)) = 1/2, a₂ = min(1, ½·2) = 1
    p = np.tile(P_EX, (3, 1))
    q = np.tile(Q_EX, (2, 1))
    a, h = sm.block_weights(p, q, [0, 1])
    assert a == pytest.approx([1.0, 0.5, 1.0])
    # R₂ = Σ max(0, ½ p − q) = 0, so h₁ = 0; h₂ = a₂ = 1
    assert h == pytest.approx([1.0, 0.0, 1.0])


# ---- exactness by enumeration --------------------------------------------------------------

@pytest.mark.parametrize(("seed", "closeness"), [(0, 0.5), (3, 0.2), (7, 0.8)])
def test_block_output_law_is_the_target_law_on_context_dependent_toys(seed, closeness):
    target, draft = toy.toy_pair(3, closeness, seed=seed)
    for k, ctx in itertools.product(range(4), [(), (1,)]):
        law = sm.sequence_distribution(target, k + 1, ctx)
        for rule in ("block", "tokenwise"):
            out = sm.block_output_distribution(target, draft, k, rule=rule, context=ctx)
            assert np.abs(out - law).max() < 1e-12, (k, ctx, rule)


def test_wrong_residual_variant_is_biased_by_enumeration():
    p, q = np.array([0.48, 0.33, 0.19]), np.array([0.89, 0.01, 0.10])
    out = sm.block_output_distribution(p, q, 2, rule="block-wrong-residual")
    assert 0.5 * np.abs(out - sm.sequence_distribution(p, 3)).sum() > 0.03


def test_lemma_conditional_on_each_draft_prefix():
    # The lemma itself, prefix by prefix: P(τ ≥ i | Xⁱ = xⁱ) = aᵢ(xⁱ) and, for i < k,
    # P(τ = i | Xⁱ = xⁱ) = R_{i+1}(xⁱ) = Σ max(0, aᵢ p_{i+1} − q_{i+1}), by averaging the exact
    # law of τ given the whole draft, hᵢ Π_{j>i} (1 − hⱼ), over the later draft tokens.
    target, draft = toy.toy_pair(3, 0.4, seed=11)
    k, V = 3, 3
    ge = {}  # (xⁱ, i) -> [Σ Q(rest) P(τ ≥ i | x), Σ Q(rest) P(τ = i | x)]
    for x in itertools.product(range(V), repeat=k):
        p = np.stack([target.next_distribution(list(x[:i])) for i in range(k + 1)])
        q = np.stack([draft.next_distribution(list(x[:i])) for i in range(k)])
        _, h = sm.block_weights(p, q, list(x))
        pmf = np.array([h[i] * np.prod(1 - h[i + 1:]) for i in range(k + 1)])
        for i in range(1, k + 1):
            rest = np.prod([q[j, x[j]] for j in range(i, k)])
            acc = ge.setdefault((x[:i], i), [0.0, 0.0])
            acc[0] += rest * pmf[i:].sum()
            acc[1] += rest * pmf[i]
    for (xi, i), (geq, eq) in ge.items():
        p = np.stack([target.next_distribution(list(xi[:j])) for j in range(i + 1)])
        q = np.stack([draft.next_distribution(list(xi[:j])) for j in range(i + 1)])
        a, _ = sm.block_weights(p, q[:i], list(xi))
        assert geq == pytest.approx(a[i], abs=1e-12)
        if i < k:
            R = np.maximum(a[i] * p[i] - q[i], 0.0).sum()
            assert eq == pytest.approx(R, abs=1e-12)


def test_survival_equals_the_expected_weight_a_i():
    # The lemma behind the proof: P(τ ≥ i | X₁ … Xᵢ) = aᵢ, so P(τ ≥ i) = E_q[aᵢ(Xⁱ)].
    target, draft = toy.toy_pair(3, 0.4, seed=11)
    k = 3
    expect = np.zeros(k)
    for x in itertools.product(range(3), repeat=k):
        rows_p = np.stack([target.next_distribution(list(x[:i])) for i in range(k + 1)])
        rows_q = np.stack([draft.next_distribution(list(x[:i])) for i in range(k)])
        Q = np.prod([rows_q[i, x[i]] for i in range(k)])
        a, _ = sm.block_weights(rows_p, rows_q, list(x))
        expect += Q * a[1:]
    assert survival(sm.accepted_length_pmf(target, draft, k)) == pytest.approx(expect,
                                                                                abs=1e-12)


# ---- more accepted drafts, never more than the ceiling --------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_block_survival_dominates_tokenwise_and_respects_the_ceiling(seed):
    target, draft = toy.toy_pair(3, 0.4, seed=seed, concentration=0.7)
    for k in (1, 2, 3):
        b = survival(sm.accepted_length_pmf(target, draft, k))
        t = survival(sm.accepted_length_pmf(target, draft, k, rule="tokenwise"))
        assert (b >= t - 1e-12).all()
        assert b.sum() <= sm.accepted_upper_bound(target, draft, k) + 1e-12
        if k == 1:  # one draft: the two rules are the same rule
            assert b == pytest.approx(t, abs=1e-12)


def test_no_gain_for_a_draft_without_a_low_ratio_before_a_high_one():
    # Σ aᵢ > Σ Π_{j≤i} min(1, rⱼ) needs some rⱼ < 1 followed later by some rₗ > 1: otherwise
    # the cap in aᵢ never throws credit away that a later deficit could use. Checked on
    # random ratio sequences, both ways.
    rng = np.random.default_rng(3)
    V, k = 4, 5
    seen_gain = seen_none = 0
    for _ in range(400):
        p = rng.dirichlet(np.full(V, 0.6), size=k + 1)
        q = rng.dirichlet(np.full(V, 0.6), size=k)
        x = np.array([rng.choice(V, p=q[i]) for i in range(k)])
        r = p[np.arange(k), x] / q[np.arange(k), x]
        a, _ = sm.block_weights(p, q, x)
        gain = a[1:].sum() - np.cumprod(np.minimum(1.0, r)).sum()
        low_then_high = any(r[j] < 1 < r[m] for j in range(k) for m in range(j + 1, k))
        assert gain >= -1e-12
        if not low_then_high:
            assert gain == pytest.approx(0.0, abs=1e-12)
            seen_none += 1
        elif gain > 1e-9:
            seen_gain += 1
    assert seen_gain > 0 and seen_none > 0  # both kinds of draft occurred


def test_per_draft_block_can_beat_tokenwise_without_a_low_then_high_pattern():
    # R6c finding 4: the pattern condition is about Σ aᵢ (the average over drafts), not
    # about E[ℓ | draft]. Ratios 1/2 then 4/5 (none above one): block expects 403/395
    # drafts given this draft, token-wise 9/10; h₁ = R₂/(R₂ + 1 − a₁) ignores x₂.
    p = np.array([[1 / 4, 3 / 4, 0], [2 / 5, 0, 3 / 5], [1 / 3, 1 / 3, 1 / 3]])
    q = np.array([[1 / 2, 1 / 2, 0], [1 / 2, 49 / 100, 1 / 100]])
    x = [0, 0]
    r = p[[0, 1], x] / q[[0, 1], x]
    assert r == pytest.approx([1 / 2, 4 / 5]) and (r < 1).all()
    given, a = sm.block_accepted_given_draft(p, q, x)
    tw = np.cumprod(np.minimum(1, r))
    assert a == pytest.approx(tw, abs=1e-12)  # Σ aᵢ: no gain, as the pattern rule says
    assert given.sum() == pytest.approx(403 / 395, abs=1e-12)
    assert tw.sum() == pytest.approx(9 / 10, abs=1e-12)
    # the sampler with this draft held fixed agrees (z-test, |z| < 4: false alarm ~6e-5)
    rng = np.random.default_rng(11)
    kept = np.array([len(sm.block_step(p, q, x, rng)) - 1 for _ in range(6000)])
    se = kept.std(ddof=1) / np.sqrt(kept.size)
    assert abs(kept.mean() - 403 / 395) / se < 4 and (kept.mean() - 0.9) / se > 4


def test_block_gains_strictly_somewhere():
    gains = [sm.expected_accepted(*toy.toy_pair(3, 0.4, seed=s), 3)
             - sm.expected_accepted(*toy.toy_pair(3, 0.4, seed=s), 3, rule="tokenwise")
             for s in range(4)]
    assert max(gains) > 1e-3


def test_one_hot_draft_both_rules_coincide_and_reach_the_ceiling():
    # A deterministic draft: q = δ at one token per context. Any valid verifier has
    # P(τ ≥ i) ≤ Π_{j≤i} p(d_j); token-wise reaches it, so block cannot do better.
    target, _ = toy.toy_pair(3, 0.5, seed=2)
    onehot = np.eye(3)[[1, 2, 0]]
    draft = toy.MarkovLM(onehot, np.eye(3)[1])
    for k in (1, 2, 3):
        b = sm.accepted_length_pmf(target, draft, k)
        t = sm.accepted_length_pmf(target, draft, k, rule="tokenwise")
        assert b == pytest.approx(t, abs=1e-12)
        d, prod, surv = [], 1.0, []
        for _ in range(k):
            d.append(int(np.argmax(draft.next_distribution(d))))
            prod *= target.next_distribution(d[:-1])[d[-1]]
            surv.append(prod)
        assert survival(b) == pytest.approx(surv, abs=1e-12)
        assert sm.expected_accepted(target, draft, k) == pytest.approx(
            sm.accepted_upper_bound(target, draft, k), abs=1e-12)
        for rule in ("block", "tokenwise"):
            assert np.abs(sm.block_output_distribution(target, draft, k, rule=rule)
                          - sm.sequence_distribution(target, k + 1)).max() < 1e-12
        # the corrections coincide too: norm(max(0, aᵢ p − δ)) is the token-wise residual
        p = np.stack([target.next_distribution(d[:i]) for i in range(k + 1)])
        q = np.stack([draft.next_distribution(d[:i]) for i in range(k)])
        a, _ = sm.block_weights(p, q, d)
        for i in range(k):
            r = np.maximum(a[i] * p[i] - q[i], 0.0)
            if r.sum() > 0:
                assert r / r.sum() == pytest.approx(sm.residual_distribution(p[i], q[i]),
                                                    abs=1e-12)


# ---- optimality: a linear program over every valid verifier ---------------------------------

def valid_verifier_lp(target, draft, k: int, own_tokens: str = "one"):
    """The valid verifiers of a draft law as {π ≥ 0 : A π = b}.

    ``own_tokens="one"``: a variable π(x, τ, y) = P(τ, Y = y | X = x) per draft x; the
    verifier keeps τ drafts, emits one token y and the target continues (the class of
    theorem ch9-thm-optimal). ``own_tokens="all"``: π(x, τ, w) for the whole tail
    w = (Z_{τ+1}, …, Z_{k+1}), which the verifier emits itself (a wider class);
    ``"scored"``: any number m ≥ 0 of own tokens, each after a context the target pass
    scored (a drafted prefix), so w[:-1] repeats the draft; ``"any"``: any number of own
    tokens after any context (the target continues in both). Rows: each
    π(x, ·, ·) sums to one; the first k+1 tokens have the target's law. Returns
    (variables, {x: q(x)}, A, b).
    """
    V = target.vocab_size
    Q = {x: float(np.prod([draft.next_distribution(list(x[:i]))[x[i]] for i in range(k)]))
         for x in itertools.product(range(V), repeat=k)}
    drafts = {x: j for j, x in enumerate(x for x in Q if Q[x] > 0)}
    cell = {z: j for j, z in enumerate(itertools.product(range(V), repeat=k + 1))}
    lengths = {"one": lambda i: [1], "all": lambda i: [k + 1 - i],
               "scored": lambda i: range(k + 2 - i), "any": lambda i: range(k + 2 - i)}
    var = [(x, i, w) for x in drafts for i in range(k + 1) for m in lengths[own_tokens](i)
           for w in itertools.product(range(V), repeat=m)
           if own_tokens != "scored" or w[:-1] == x[i:i + m - 1]]
    A = np.zeros((len(drafts) + len(cell), len(var)))
    b = np.ones(len(drafts) + len(cell))
    for v, (x, i, w) in enumerate(var):
        A[drafts[x], v] = 1.0
        head = x[:i] + w
        n_rest = k + 1 - len(head)
        cont = sm.sequence_distribution(target, n_rest, head)
        for tail in itertools.product(range(V), repeat=n_rest):
            A[len(drafts) + cell[head + tail], v] += Q[x] * cont[tail]
    law = sm.sequence_distribution(target, k + 1)
    b[len(drafts):] = [law[z] for z in cell]
    return var, Q, A, b


def lp_maximum(objective, A, b) -> float:
    from scipy.optimize import linprog

    res = linprog(-np.asarray(objective, float), A_eq=A, b_eq=b, bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return -res.fun


def best_valid_verifier(target, draft, k: int, own_tokens: str = "one") -> float:
    """max E[τ] over all valid verifiers of the class ``own_tokens`` that may look at the
    whole draft, subject to the output (continued by the target) having the target's law of
    the first k+1 tokens."""
    var, Q, A, b = valid_verifier_lp(target, draft, k, own_tokens)
    return lp_maximum([Q[x] * i for x, i, _ in var], A, b)


@pytest.mark.parametrize(("pair", "k"), [((iid(P_EX), iid(Q_EX)), 2),
                                         (toy.toy_pair(3, 0.3, seed=5), 2),
                                         (toy.toy_pair(2, 0.2, seed=1), 3)])
def test_block_is_optimal_among_all_valid_verifiers_by_linear_programming(pair, k):
    target, draft = pair
    best = best_valid_verifier(target, draft, k)
    assert best == pytest.approx(sm.expected_accepted(target, draft, k), abs=1e-7)


@pytest.mark.parametrize(("pair", "k"), [((iid(P_EX), iid(Q_EX)), 2),
                                         (toy.toy_pair(3, 0.3, seed=5), 2),
                                         (toy.toy_pair(2, 0.2, seed=1), 3),
                                         (toy.toy_pair(3, 0.6, seed=9, concentration=0.5), 2)])
def test_block_attains_the_largest_prefix_mass_of_every_valid_verifier_prefix_by_prefix(pair, k):
    # (ch9-opt) itself, not only its sum: for every drafted prefix xⁱ, the largest
    # H(xⁱ) = P(τ' ≥ i, Xⁱ = xⁱ) over the one-token class (an LP per prefix) equals block
    # verification's q(xⁱ) aᵢ(xⁱ); the LP knows nothing about block verification
    target, draft = pair
    var, Q, A, b = valid_verifier_lp(target, draft, k)
    n_checked = 0
    for i in range(1, k + 1):
        for xi in sorted({x[:i] for x in Q if Q[x] > 0}):
            H = lp_maximum([Q[x] * (x[:i] == xi and j >= i) for x, j, _ in var], A, b)
            p = np.stack([target.next_distribution(list(xi[:j])) for j in range(i + 1)])
            q = np.stack([draft.next_distribution(list(xi[:j])) for j in range(i)])
            mass = np.prod(q[np.arange(i), list(xi)]) * sm.block_weights(p, q, xi)[0][i]
            assert H == pytest.approx(mass, abs=1e-7), (xi, H, mass)
            n_checked += 1
    assert n_checked >= 6


def test_verifiers_emitting_several_own_tokens_reach_the_ceiling_and_beat_block():
    # R6c findings 1–2: optimality holds for the one-token class only. A valid verifier
    # that emits the whole rest of the block itself gets 12/9 on Sun et al.'s example at
    # k = 2 (block 11/9) and 50/27 at k = 3 (block 5/3): the ceiling in both cases.
    assert best_valid_verifier(iid(P_EX), iid(Q_EX), 2, "all") == pytest.approx(12 / 9,
                                                                                 abs=1e-7)
    assert best_valid_verifier(iid(P_EX), iid(Q_EX), 3, "all") == pytest.approx(50 / 27,
                                                                                 abs=1e-7)
    assert best_valid_verifier(iid(P_EX), iid(Q_EX), 3) == pytest.approx(5 / 3, abs=1e-7)
    for (target, draft), k in [(toy.toy_pair(3, 0.3, seed=5), 2),
                               (toy.toy_pair(2, 0.2, seed=1), 3),
                               (toy.toy_pair(3, 0.4, seed=2), 2)]:
        wide = best_valid_verifier(target, draft, k, "all")
        assert wide == pytest.approx(sm.accepted_upper_bound(target, draft, k), abs=1e-7)
        assert wide > sm.expected_accepted(target, draft, k) + 1e-3
    # a one-hot draft: even the wider class keeps at most Π p_j(d_j) (corollary
    # ch9-cor-onehot, proved from H(dⁱ) ≤ p(dⁱ) alone), which token-wise already reaches
    target, _ = toy.toy_pair(3, 0.5, seed=2)
    onehot = toy.MarkovLM(np.eye(3)[[1, 2, 0]], np.eye(3)[1])
    for k in (1, 2, 3):
        assert best_valid_verifier(target, onehot, k, "all") == pytest.approx(
            sm.expected_accepted(target, onehot, k, rule="tokenwise"), abs=1e-7)


# the pairs and draft lengths of ch9's "Outside the class" linear programs
WIDE_CASES = [((iid(P_EX), iid(Q_EX)), 2), ((iid(P_EX), iid(Q_EX)), 3),
              (toy.toy_pair(3, 0.3, seed=5), 2), (toy.toy_pair(2, 0.2, seed=1), 3)]


@pytest.mark.parametrize(("pair", "k"), WIDE_CASES)
def test_several_own_tokens_class_emits_k_plus_1_tokens_and_holds_the_draft_ignoring_rule(
        pair, k):
    # R8c finding 1: in the wider class every iteration emits ℓ' drafts and k + 1 − ℓ'
    # own tokens, k + 1 in all, so N = ℓ' + 1 fails there and more accepted drafts is
    # not more tokens per pass; the class holds the exact rule that ignores the draft and
    # samples all k + 1 tokens from the target (ℓ' = 0): it satisfies every constraint.
    target, _ = pair
    var, Q, A, b = valid_verifier_lp(*pair, k, "all")
    assert all(i + len(w) == k + 1 for _, i, w in var)
    law = sm.sequence_distribution(target, k + 1)
    trivial = np.array([law[w] if i == 0 else 0.0 for _, i, w in var])
    assert np.abs(A @ trivial - b).max() < 1e-12
    assert sum(Q[x] * i * t for (x, i, _), t in zip(var, trivial, strict=True)) == 0


@pytest.mark.parametrize(("pair", "k"), WIDE_CASES)
def test_own_tokens_only_after_scored_contexts_never_beat_block_but_off_path_ones_do(
        pair, k):
    # R8c finding 2, the proved half: a verifier whose own tokens all follow contexts the
    # target pass scored (drafted prefixes) emits x^j and at most one more token, j ≥ ℓ',
    # so the one-token theorem bounds E[ℓ'] and E[j]. Control: the same program with own
    # tokens allowed after any context beats block verification.
    target, draft = pair
    blk = sm.expected_accepted(target, draft, k)
    var, Q, A, b = valid_verifier_lp(target, draft, k, "scored")
    for count_j in (False, True):
        best = lp_maximum([Q[x] * (i + count_j * max(len(w) - 1, 0)) for x, i, w in var],
                          A, b)
        assert best == pytest.approx(blk, abs=1e-7)
    assert best_valid_verifier(target, draft, k, "any") > blk + 1e-3


# ---- statistical exactness of block_step ------------------------------------------------------

def sample_first_tokens(step, target, draft, k: int, n: int, rng) -> np.ndarray:
    """Counts over V^(k+1) of the first k+1 tokens: one verification round by ``step``,
    then the target's own sampling up to k+1 tokens."""
    V = target.vocab_size
    counts = np.zeros((V,) * (k + 1), dtype=np.int64)
    for _ in range(n):
        x: list[int] = []
        for _ in range(k):
            x.append(int(rng.choice(V, p=draft.next_distribution(x))))
        p = np.stack([target.next_distribution(x[:i]) for i in range(k + 1)])
        q = np.stack([draft.next_distribution(x[:i]) for i in range(k)])
        out = step(p, q, np.asarray(x, dtype=np.int64), rng).tolist()
        out += target.sample(k + 1 - len(out), rng, out).tolist()
        counts[tuple(out)] += 1
    return counts


# i.i.d. positions where correcting from the token-wise residual is visibly wrong (TV ≈ 0.03)
P_BIAS, Q_BIAS = np.array([0.48, 0.33, 0.19]), np.array([0.89, 0.01, 0.10])
N_STAT = 12_000


def test_block_step_sampling_follows_the_target_and_the_test_has_power():
    target, draft = iid(P_BIAS), iid(Q_BIAS)
    law = sm.sequence_distribution(target, 3)
    biased = sm.block_output_distribution(target, draft, 2, rule="block-wrong-residual")
    power = power_of_gtest(law.ravel(), biased.ravel(), N_STAT, LEVEL)
    assert power >= MIN_POWER, power
    counts = sample_first_tokens(sm.block_step, target, draft, 2, N_STAT,
                                 np.random.default_rng(2024))
    assert stats.g_test(counts.ravel(), law.ravel()).pvalue > LEVEL


def test_biased_block_step_is_caught_and_follows_its_own_law():
    target, draft = iid(P_BIAS), iid(Q_BIAS)
    law = sm.sequence_distribution(target, 3)
    counts = sample_first_tokens(sm.broken_block_step, target, draft, 2, N_STAT,
                                 np.random.default_rng(2024))
    assert stats.g_test(counts.ravel(), law.ravel()).pvalue < LEVEL
    biased = sm.block_output_distribution(target, draft, 2, rule="block-wrong-residual")
    assert stats.g_test(counts.ravel(), biased.ravel()).pvalue > LEVEL


def test_block_step_on_a_context_dependent_toy_and_its_accepted_lengths():
    # k = 3, V = 3: the 81-cell law of the first four tokens and the law of τ (4 cells),
    # both G-tests at level 1e-3. On generic toy pairs the token-wise-residual bug moves the
    # law too little to be seen with n = 6000 (that is what the i.i.d. pair above is for), so
    # the power here is computed against the other plausible bug, a correction drawn from
    # p_{τ+1} itself, whose exact law the enumerator knows; that sampler must be caught.
    target, draft = toy.toy_pair(3, 0.4, seed=4)
    rng = np.random.default_rng(7)
    k, n = 3, 6_000
    taus = np.zeros(k + 1, dtype=np.int64)
    law = sm.sequence_distribution(target, k + 1)
    from_p = sm.block_output_distribution(target, draft, k, rule="block-resample-from-p")
    power = power_of_gtest(law.ravel(), from_p.ravel(), n, LEVEL)
    assert power >= MIN_POWER, power

    def step(p, q, x, rng):
        out = sm.block_step(p, q, x, rng)
        taus[len(out) - 1] += 1
        return out

    counts = sample_first_tokens(step, target, draft, k, n, rng)
    assert stats.g_test(counts.ravel(), law.ravel()).pvalue > LEVEL
    assert stats.g_test(taus, sm.accepted_length_pmf(target, draft, k)).pvalue > LEVEL

    def step_from_p(p, q, x, rng):  # the bug: same τ, correction drawn from p_{τ+1}
        out = sm.block_step(p, q, x, rng)
        tau = len(out) - 1
        if tau < k:
            out[-1] = rng.choice(p.shape[1], p=p[tau])
        return out

    bad = sample_first_tokens(step_from_p, target, draft, k, n, np.random.default_rng(7))
    assert stats.g_test(bad.ravel(), law.ravel()).pvalue < LEVEL


def _gtest_rejections(law: np.ndarray, n: int, sims: int, seed: int) -> int:
    """How often the G-test rejects at LEVEL when the counts really follow ``law``."""
    from scipy import stats as sps

    law = law.ravel()
    expected, crit = n * law, sps.chi2.isf(LEVEL, law.size - 1)
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, sims, 20_000):
        o = rng.multinomial(n, law, size=min(20_000, sims - start)).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = 2 * np.where(o > 0, o * np.log(o / expected), 0.0).sum(axis=1)
        if start == 0:  # the vectorised statistic is the one stats.g_test computes
            for j in range(3):
                assert stats.g_test(o[j], law).statistic == pytest.approx(g[j])
        hits += int((g > crit).sum())
    return hits


def test_gtest_false_alarm_rates_by_simulation():
    # R6c finding 11: the stated false-alarm rate, simulated (100 000 multinomial samples
    # each, fixed seeds). i.i.d. 27-cell law, n = 12 000: close to the nominal 0.1 %. The
    # 81-cell context-dependent law, n = 6000, has cells with expected counts below 5: its
    # rate is below the nominal (a rate of 0.1 % would give fewer than 75 hits with
    # probability about 0.5 %).
    iid_law = sm.sequence_distribution(iid(P_BIAS), 3)
    assert (N_STAT * iid_law).min() > 80
    assert 60 < _gtest_rejections(iid_law, N_STAT, 100_000, seed=2) < 140
    ctx_law = sm.sequence_distribution(toy.toy_pair(3, 0.4, seed=4)[0], 4)
    assert int((6_000 * ctx_law < 5).sum()) == 30
    assert _gtest_rejections(ctx_law, 6_000, 100_000, seed=1) < 75


# ---- edge cases ----------------------------------------------------------------------------

def test_edge_cases_give_no_nan_and_valid_outputs():
    rng = np.random.default_rng(0)
    same = np.array([0.2, 0.3, 0.5])
    # p = q everywhere: a = 1, R = 0 → h = 1 (0/0 avoided); every draft kept
    p, q = np.tile(same, (3, 1)), np.tile(same, (2, 1))
    a, h = sm.block_weights(p, q, [0, 2])
    assert np.isfinite(h).all() and (a == 1).all() and (h == 1).all()
    assert len(sm.block_step(p, q, [0, 2], rng)) == 3
    # a draft token the target forbids: a = 0 from there on, h = 0, τ before it
    p = np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    q = np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]])
    a, h = sm.block_weights(p, q, [0, 1])
    assert np.isfinite(h).all() and a[1] == 0 and a[2] == 0 and h[2] == 0
    for _ in range(50):
        out = sm.block_step(p, q, [0, 1], rng)
        assert out[0] != 0 and len(out) == 1
    # q(x) = 0 at the drafted token (a rounded draft): ratio taken as +∞ when p > 0
    q0 = np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])
    p0 = np.array([[0.2, 0.3, 0.5]] * 3)
    a, h = sm.block_weights(p0, q0, [0, 1])
    assert a[1] == 1 and np.isfinite(h).all()
    # k = 0: plain sampling from p[0]
    out = sm.block_step(p0[:1], np.zeros((0, 3)), np.zeros(0, dtype=int), rng)
    assert out.shape == (1,)


def test_k1_block_step_is_the_tokenwise_rule():
    # at k = 1 the two rules are identical: h₁ = min(1, p/q), the correction at τ = 0 is the
    # token-wise residual, and with the same random numbers both samplers return the same
    # tokens, draw by draw; the exact laws of τ agree too.
    p = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
    q = np.array([[0.2, 0.2, 0.6]])
    for x in range(3):
        _, h = sm.block_weights(p, q, [x])
        assert h[1] == pytest.approx(min(1.0, p[0, x] / q[0, x]))
        for seed in range(200):
            blk = sm.block_step(p, q, [x], np.random.default_rng(seed))
            tok = sm.speculative_step(p, q, [x], np.random.default_rng(seed))
            assert blk.tolist() == tok.tolist()
    target, draft = toy.toy_pair(3, 0.4, seed=2)
    assert sm.accepted_length_pmf(target, draft, 1) == pytest.approx(
        sm.accepted_length_pmf(target, draft, 1, rule="tokenwise"), abs=1e-12)


# ---- the benchmark script ------------------------------------------------------------------

def test_percentile_bootstrap_over_12_prompts_covers_less_than_95_percent():
    # R6c finding 12: the script's "*_ci95" intervals (percentile bootstrap over 12
    # prompts) are not 95 % intervals. Normal data, n = 12, 4000 simulated samples with
    # 1000 resamples each: coverage of the mean ≈ 0.92 (a coverage of 0.95 would fall
    # below 0.94 with probability about 1 %).
    rng = np.random.default_rng(0)
    n, sims, B, covered = 12, 4000, 1000, 0
    for _ in range(sims // 200):
        x = rng.standard_normal((200, n))
        idx = rng.integers(0, n, size=(200, B, n))
        means = np.take_along_axis(np.repeat(x[:, None, :], B, axis=1), idx, 2).mean(2)
        lo, hi = np.percentile(means, [2.5, 97.5], axis=1)
        covered += int(((lo <= 0) & (0 <= hi)).sum())
    assert covered / sims < 0.94


def test_benchmark_quick_mode_runs_on_tiny_models(tmp_path):
    from tinymodels import run_quick

    R = run_quick("block_realmodel", tmp_path / "b.json")
    assert (tmp_path / "b.json").exists()
    assert {r["rule"] for r in R["runs"]} == {"tokenwise", "block"}
    s = R["summary"]["per_prompt"]
    # the prefix-conditional surrogate Σ (aᵢ − Π min(1, rⱼ)) is ≥ 0 in every iteration by
    # construction (aᵢ ≥ Π min(1, rⱼ) termwise): a regression check of the arithmetic only
    assert all(row["min_exact_gain_iteration"] >= -1e-9 for row in s.values())
    assert R["provenance"]["shared_machine"] is True


def test_torch_block_verifier_reads_nothing_back_to_the_host():
    # R6c finding 16: chapter 9 says specmath.llm._verify_block makes no host
    # synchronisation. On a GPU every tensor → host read (.item(), .tolist(), bool(),
    # int(), float(), .numpy()) is one; count them through torch's function mode while it
    # verifies random drafts, including a forbidden token and a p = q row. The control
    # (an explicit .item()) shows the counter sees such reads.
    torch = pytest.importorskip("torch")
    from tinymodels import host_reads_counter

    from specmath import llm

    g = torch.Generator().manual_seed(0)
    cases = []
    for k in (1, 3, 5):
        p = torch.rand(k + 1, 7, generator=g) ** 3
        q = torch.rand(k, 7, generator=g) ** 3
        p, q = p / p.sum(1, keepdim=True), q / q.sum(1, keepdim=True)
        draft = torch.multinomial(q, 1, generator=g)[:, 0]
        cases.append((p, q, draft))
    p, q, _ = cases[1]
    p = p.clone()
    p[1, 2] = 0.0
    p[1] /= p[1].sum()
    cases.append((p, q, torch.tensor([0, 2, 1])))          # the target forbids x₂
    cases.append((q[:1].repeat(3, 1), q[:1].repeat(2, 1), torch.tensor([4, 4])))  # p = q
    with host_reads_counter() as reads:
        for p, q, draft in cases:
            u = torch.rand(draft.shape[0] + 1, generator=g, dtype=torch.float64)
            llm._verify_block(p, q, draft, u)
    assert reads.n == 0
    with host_reads_counter() as control:
        cases[0][0].sum().item()
    assert control.n == 1


def _block_verifier_cases(torch, device: str, dtype):
    """Draft blocks for _verify_block: random rows at k = 0, 1, 3, 5, a forbidden draft
    token and a p = q row, moved to ``device`` before anything is timed or traced."""
    g = torch.Generator().manual_seed(1)
    cases = []
    for k in (0, 1, 3, 5):
        p = torch.rand(k + 1, 7, generator=g, dtype=dtype) ** 3
        q = torch.rand(max(k, 1), 7, generator=g, dtype=dtype) ** 3
        p, q = p / p.sum(1, keepdim=True), (q / q.sum(1, keepdim=True))[:k]
        draft = torch.multinomial(q, 1, generator=g)[:, 0] if k else torch.zeros(
            0, dtype=torch.long)
        cases.append((p, q, draft))
    p, q, _ = cases[2]
    p = p.clone()
    p[1, 2] = 0.0
    p[1] /= p[1].sum()
    cases.append((p, q, torch.tensor([0, 2, 1])))          # the target forbids x₂
    cases.append((q[:1].repeat(3, 1), q[:1].repeat(2, 1), torch.tensor([4, 4])))  # p = q
    out = []
    for p, q, draft in cases:
        u = torch.rand(draft.shape[0] + 1, generator=g, dtype=torch.float64)
        out.append(tuple(t.to(device) for t in (p, q, draft, u)))
    return out


def test_torch_block_verifier_runs_on_data_free_meta_tensors_so_reads_no_values_on_host():
    # R8c finding 3: counting .item()-like calls misses .cpu(), nonzero, boolean-mask
    # indexing, masked_select, unique and other ops with value-dependent output shapes,
    # each a host synchronisation on a GPU. On torch's meta device tensors hold no data,
    # so every one of these raises; _verify_block must run there to the end (both
    # dtypes, k = 0 … 5, edge rows). The controls show that each such op does raise.
    torch = pytest.importorskip("torch")
    from specmath import llm

    for dtype in (torch.float32, torch.float64):
        for p, q, draft, u in _block_verifier_cases(torch, "meta", dtype):
            n, y = llm._verify_block(p, q, draft, u)
            assert n.device.type == y.device.type == "meta"
            assert n.shape == y.shape == torch.Size([])
    x = torch.rand(5, device="meta")
    controls = {"item": lambda: x.sum().item(), "tolist": lambda: x.tolist(),
                "bool": lambda: bool(x[0] > 0), "int": lambda: int(x[0]),
                "float": lambda: float(x[0]), "cpu": lambda: x.cpu(),
                "to cpu": lambda: x.to("cpu"), "numpy": lambda: x.numpy(),
                "nonzero": lambda: x.nonzero(), "mask index": lambda: x[x > 0.5],
                "masked_select": lambda: x.masked_select(x > 0.5),
                "unique": lambda: x.unique(), "where(cond)": lambda: torch.where(x > 0),
                "python index": lambda: [0, 1][torch.zeros((), dtype=torch.long,
                                                            device="meta")]}
    for name, op in controls.items():
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            op()
            pytest.fail(f"{name} ran on meta tensors")


def test_torch_block_verifier_makes_no_cuda_synchronisation_in_sync_debug_mode():
    # The complete test of R8c finding 3 (any synchronising kernel, not only the usual
    # causes): CUDA sync-debug mode turns every host synchronisation into an error. Needs
    # a GPU; the control shows the mode catches an .item().
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from specmath import llm

    cases = _block_verifier_cases(torch, "cuda", torch.float32)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for p, q, draft, u in cases:
            llm._verify_block(p, q, draft, u)
        with pytest.raises(RuntimeError):
            cases[1][0].sum().item()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
