"""Chapter 2, requirement (ii) of the proof of ch2-thm-sequence: the acceptance uniform
of each slot, its residual sample and the bonus token's sample must be independent of
each other, of the draft's randomness and of the earlier slots' randomness. Exact laws of
ways to break it (review R9a findings 1 and 2, R10a finding 1), each checked against a
simulation of its pipeline."""

from __future__ import annotations

import numpy as np
import pytest

import specmath as sm
from specmath import pitfalls as pf
from specmath import stats

P_ANIMALS = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
Q_ANIMALS = np.array([0.15, 0.40, 0.10, 0.30, 0.05])
LEVEL = 0.01     # each G-test below: false-alarm rate 0.01 when the stated law is true


def _counts(y: np.ndarray, v: int) -> np.ndarray:
    return np.bincount(y, minlength=v)


def test_shared_gumbel_exact_law_matches_independent_quadrature_on_the_animals():
    """Reference values: 2-D quadrature over (G_x, G_y) in the Gumbel variables
    (scipy dblquad, reviewer R9a's /tmp/r9a/gumbel_exact.py, total mass 0.999997),
    which does not use the 1-D formula r(y) Φ(r(y)/q(y))."""
    rec = pf.shared_gumbel_recovery_distribution(P_ANIMALS, Q_ANIMALS)
    out = pf.shared_gumbel_output_distribution(P_ANIMALS, Q_ANIMALS)
    np.testing.assert_allclose(rec, [0.634052, 0, 0.293220, 0, 0.072728], atol=1e-5)
    np.testing.assert_allclose(out, [0.359235, 0.25, 0.196762, 0.12, 0.074], atol=1e-5)
    assert abs(sm.tv_distance(out, P_ANIMALS) - 0.0092367) < 1e-5
    # cat has the largest q among the recoverable tokens and is over-weighted (not
    # under-weighted, as the "high-q losers" explanation says); emu is under-weighted
    r = sm.residual_distribution(P_ANIMALS, Q_ANIMALS)
    assert rec[0] > r[0] and rec[4] < r[4]


def test_shared_gumbel_exact_law_matches_simulation_and_is_ordered_by_r_over_q():
    """On 30 random pairs (V = 6, some q(z) = 0), the simulated shared-noise verifier
    passes the G-test against the exact law (level 0.001 each, so a false alarm in at
    most 3 % of seeds; seed fixed) and the fresh-noise verifier is rejected against it wherever
    the bias is large enough to give power (TV > 0.02, 2·10⁵ draws). On 500 pairs the
    recovery tilt rec/r increases strictly with r/q, and the law sums to one."""
    rng = np.random.default_rng(54282)
    n = 200_000
    for _ in range(30):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        q[rng.integers(6)] = 0.0
        q /= q.sum()
        law = pf.shared_gumbel_output_distribution(p, q)
        _, y = pf.gumbel_verifier_outputs(p, q, n, rng)
        assert stats.g_test(_counts(y, 6), law).pvalue > LEVEL / 10
        if sm.tv_distance(law, p) > 0.02:
            _, y_fr = pf.gumbel_verifier_outputs(p, q, n, rng, shared_noise=False)
            assert stats.g_test(_counts(y_fr, 6), law).pvalue < LEVEL
    for _ in range(500):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        rec = pf.shared_gumbel_recovery_distribution(p, q)
        r = sm.residual_distribution(p, q)
        on = r > 0
        assert abs(rec.sum() - 1) < 1e-12
        tilt = (rec[on] / r[on])[np.argsort((r / q)[on])]
        assert np.all(np.diff(tilt) > 0)
        assert on.sum() == 1 or (tilt[0] < 1 < tilt[-1])


def test_shared_gumbel_tilt_follows_r_over_q_not_the_drafts_ranking_either_way():
    """Neither pull request's heuristic holds in general (review R10a finding 4): on the
    animals the top-q recoverable token gains (against #54282); on p = (0.5, 0.3, 0.2),
    q = (0.25, 0.05, 0.7) it loses, recovered with 5/12 < r = 1/2 (against #47386;
    Φ(2) = ∫_0^2 dτ/(1 + 0.7τ)² = 5/6 by hand), and the output is off by TV 1/24. The
    closed form is checked by simulation (G-test, level 0.01). No tilt where r/q is
    constant on r's support (R10a finding 5): a one-token residual, or r ∝ q there."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.05, 0.7])
    r = sm.residual_distribution(p, q)
    rec = pf.shared_gumbel_recovery_distribution(p, q)
    np.testing.assert_allclose(r, [0.5, 0.5, 0.0], atol=1e-15)
    np.testing.assert_allclose(rec, [5 / 12, 7 / 12, 0.0], atol=1e-12)
    law = pf.shared_gumbel_output_distribution(p, q)
    assert abs(sm.tv_distance(law, p) - 1 / 24) < 1e-12
    _, y = pf.gumbel_verifier_outputs(p, q, 200_000, np.random.default_rng(47386))
    assert stats.g_test(_counts(y, 3), law).pvalue > LEVEL
    assert stats.g_test(_counts(y, 3), p).pvalue < LEVEL
    for p1, q1 in (([0.6, 0.3, 0.1], [0.2, 0.3, 0.5]), ([0.4, 0.4, 0.2], [0.2, 0.2, 0.6])):
        np.testing.assert_allclose(pf.shared_gumbel_recovery_distribution(p1, q1),
                                   sm.residual_distribution(p1, q1), atol=1e-12)


def test_shared_gumbel_law_at_a_token_with_q_zero_is_phi_at_infinity_at_most_two():
    """ch2-ex6(a) with q(y) = 0 < r(y) (review R10a finding 5): r(y)/q(y) = ∞, and scipy's
    quad up to infinity gives Φ(∞) ≤ 2 (h(τ) ≥ max(1, τ)), equal to the exact sum; that
    token has the largest r/q and gains. On 20 random pairs with a zero in q, the same."""
    from scipy.integrate import quad

    rng = np.random.default_rng(67)
    cases = [(np.array([0.1, 0.4, 0.2, 0.3]), np.array([0.6, 0.2, 0.2, 0.0]))]
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        q[rng.integers(5)] = 0.0
        cases.append((p, q / q.sum()))
    for p, q in cases:
        r = sm.residual_distribution(p, q)
        on = np.flatnonzero(r > 0)
        fin = on[q[on] > 0]
        knots = sorted(r[fin] / q[fin])

        def h(t: float, r=r, q=q) -> float:
            return float(np.maximum(q * t, r).sum())

        def phi(top: float, knots=knots, h=h) -> float:
            cuts = [0.0] + [k for k in knots if k < top] + [top]
            return sum(quad(lambda t: 1 / h(t) ** 2, a, b, epsabs=1e-13)[0]
                       for a, b in zip(cuts[:-1], cuts[1:], strict=True))

        rec = np.zeros_like(r)
        for y in on:
            rec[y] = r[y] * phi(np.inf if q[y] == 0 else r[y] / q[y])
        np.testing.assert_allclose(rec, pf.shared_gumbel_recovery_distribution(p, q),
                                   atol=1e-8)
        assert phi(np.inf) <= 2
        zero = [y for y in on if q[y] == 0]
        if zero and on.size > 1:
            assert rec[zero[0]] > r[zero[0]]


def test_one_uniform_per_block_biases_the_second_token_though_independent_of_drafts():
    """Counterexample (c) to requirement (ii) worded as 'independent of the draft':
    one U decides both slots of a k = 2 block. Exact law checked by simulation
    (G-test, level 0.01); the first token is exact, the second off by TV > 0.1."""
    p, q, v = P_ANIMALS, Q_ANIMALS, 5
    law = pf.one_uniform_per_block_second_token_distribution(p, q)
    assert abs(sm.tv_distance(law, p) - 0.14194) < 1e-4      # R9a's simulation: 0.142
    rng = np.random.default_rng(682)
    n = 400_000
    a, r = np.minimum(1, p / q), sm.residual_distribution(p, q)
    x1, x2, u = rng.choice(v, n, p=q), rng.choice(v, n, p=q), rng.random(n)
    y1 = np.where(u < a[x1], x1, rng.choice(v, n, p=r))
    y2 = np.where(u < a[x2], x2, rng.choice(v, n, p=r))[u < a[x1]]
    assert stats.g_test(_counts(y2, v), law).pvalue > LEVEL
    assert stats.g_test(_counts(y2, v), p).pvalue < LEVEL
    assert stats.g_test(_counts(y1, v), p).pvalue > LEVEL
    # control: a fresh uniform at slot 2 gives p
    y2f = np.where(rng.random(n) < a[x2], x2, rng.choice(v, n, p=r))[u < a[x1]]
    assert stats.g_test(_counts(y2f, v), p).pvalue > LEVEL


def test_residual_drawn_at_the_acceptance_uniform_biases_the_output():
    """Counterexample (d): U is independent of the draft, but the residual sample is
    F_r⁻¹(U) with the same U. Exact law (TV 0.138 on the animals) checked by simulation;
    control: F_r⁻¹ at a fresh uniform gives p."""
    p, q, v = P_ANIMALS, Q_ANIMALS, 5
    law = pf.residual_at_acceptance_uniform_output_distribution(p, q)
    assert abs(sm.tv_distance(law, p) - 0.138182) < 1e-5     # R9a's resU.py: 0.138
    rng = np.random.default_rng(683)
    n = 400_000
    a, cr = np.minimum(1, p / q), np.cumsum(sm.residual_distribution(p, q))
    x, u, u2 = rng.choice(v, n, p=q), rng.random(n), rng.random(n)
    inv = np.minimum(np.searchsorted(cr, u, side="right"), v - 1)
    inv2 = np.minimum(np.searchsorted(cr, u2, side="right"), v - 1)
    y, yf = np.where(u < a[x], x, inv), np.where(u < a[x], x, inv2)
    assert stats.g_test(_counts(y, v), law).pvalue > LEVEL
    assert stats.g_test(_counts(y, v), p).pvalue < LEVEL
    assert stats.g_test(_counts(yf, v), p).pvalue > LEVEL


def test_bonus_drawn_at_the_acceptance_uniform_biases_the_bonus_and_second_token():
    """Requirement (ii) must cover the bonus token too (review R10a finding 1): k = 1, the
    draft X ~ q and U independent, but the bonus is F_p⁻¹(U) with the slot's U. Exact law
    (TV 0.20597 given acceptance, 0.138 for the second emitted token; R10a's cex.py on a
    2·10⁶-point U grid) checked by simulation of the pipeline (G-tests, level 0.01);
    control: F_p⁻¹ at a fresh uniform gives p, both given acceptance and marginally."""
    p, q, v = P_ANIMALS, Q_ANIMALS, 5
    law = pf.bonus_at_acceptance_uniform_distribution(p, q)
    alpha = float(np.minimum(p, q).sum())
    second = (1 - alpha) * p + alpha * law
    assert abs(sm.tv_distance(law, p) - 0.20597) < 1e-5
    assert abs(sm.tv_distance(second, p) - 0.1380) < 1e-4
    # given acceptance U is below a(X): the bonus's CDF lies above p's
    assert np.all(np.cumsum(law)[:-1] > np.cumsum(p)[:-1])
    rng = np.random.default_rng(684)
    n = 400_000
    a, r, cp = np.minimum(1, p / q), sm.residual_distribution(p, q), np.cumsum(p)
    x, u, u_fresh = rng.choice(v, n, p=q), rng.random(n), rng.random(n)
    ok = u < a[x]
    bonus = np.minimum(np.searchsorted(cp, u, side="right"), v - 1)
    bonus_fresh = np.minimum(np.searchsorted(cp, u_fresh, side="right"), v - 1)
    assert stats.g_test(_counts(bonus[ok], v), law).pvalue > LEVEL
    assert stats.g_test(_counts(bonus[ok], v), p).pvalue < LEVEL          # caught
    assert stats.g_test(_counts(bonus_fresh[ok], v), p).pvalue > LEVEL    # control
    # the second emitted token: the bonus after an acceptance, else the next
    # iteration's first token (fresh draft and uniform, exact)
    x2, u2 = rng.choice(v, n, p=q), rng.random(n)
    nxt = np.where(u2 < a[x2], x2, rng.choice(v, n, p=r))
    y2 = np.where(ok, bonus, nxt)
    y2_fresh = np.where(ok, bonus_fresh, nxt)
    assert stats.g_test(_counts(y2, v), second).pvalue > LEVEL
    assert stats.g_test(_counts(y2, v), p).pvalue < LEVEL
    assert stats.g_test(_counts(y2_fresh, v), p).pvalue > LEVEL
    with pytest.raises(ValueError, match="overlap"):
        pf.bonus_at_acceptance_uniform_distribution([1.0, 0.0], [0.0, 1.0])


def test_exact_pitfall_laws_reject_bad_input_naming_the_argument():
    with pytest.raises(ValueError, match="1-D"):
        pf.shared_gumbel_recovery_distribution(np.stack([P_ANIMALS] * 2),
                                               np.stack([Q_ANIMALS] * 2))
    with pytest.raises(ValueError, match="p and q must differ"):
        pf.shared_gumbel_output_distribution(P_ANIMALS, P_ANIMALS)
    with pytest.raises(ValueError, match="q"):
        pf.one_uniform_per_block_second_token_distribution(P_ANIMALS, [0.5, 0.6, 0, 0, 0])


def test_exercise_ch2_ex6_phi_by_numerical_quadrature_matches_the_piecewise_exact_sum():
    """ch2-ex6(a): r(y) Φ(r(y)/q(y)) with Φ integrated by scipy quad equals the exact
    piecewise sum on 20 random pairs; (b) it sums to one; (c) the largest r/q gains and
    the smallest loses. Control: Φ with h² replaced by h (a wrong exponent) does not
    sum to one."""
    from scipy.integrate import quad

    rng = np.random.default_rng(66)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        r = sm.residual_distribution(p, q)
        on = np.flatnonzero(r > 0)
        knots = sorted(r[on] / q[on])

        def h(t: float, r=r, q=q) -> float:
            return float(np.maximum(q * t, r).sum())

        rec = np.zeros(5)
        wrong = np.zeros(5)
        for y in on:
            top = r[y] / q[y]
            rec[y] = r[y] * quad(lambda t: 1 / h(t) ** 2, 0, top, points=knots)[0]
            wrong[y] = r[y] * quad(lambda t: 1 / h(t), 0, top, points=knots)[0]
        np.testing.assert_allclose(rec, pf.shared_gumbel_recovery_distribution(p, q),
                                   atol=1e-8)
        assert abs(rec.sum() - 1) < 1e-8
        if on.size > 1:
            assert abs(wrong.sum() - 1) > 1e-3
            ratio = r[on] / q[on]
            y_hi, y_lo = on[ratio.argmax()], on[ratio.argmin()]
            assert rec[y_hi] > r[y_hi] and rec[y_lo] < r[y_lo]


# ---- requirement (ii) is sufficient, not necessary (review R14a finding 1) --------------

def _grid(n_cells: int) -> np.ndarray:
    """Midpoints of n_cells equal cells of [0, 1)."""
    return (np.arange(n_cells) + 0.5) / n_cells


def test_rescaled_draft_uniform_verifier_is_exact_and_accepts_alpha_with_no_fresh_number():
    """The draft's own uniform U, rescaled inside X's interval (U') and again after a
    rejection (U''), drives an exact verifier: the output is a step function of U with at
    most V(V + 2) steps, so on a grid of N midpoints its law is within TV V(V + 2)/N of
    the exact law (a bound, no false alarm). Exact and accepting with probability α on
    the animals and on 200 random pairs (some q(z) = 0, some p(z) = 0); the variant that
    inverts r at U' itself has the law of pitfall (d) and is caught (TV 0.138 ≫ bound)."""
    n = 2 ** 18
    u = _grid(n)
    v = P_ANIMALS.size
    tol = v * (v + 2) / n
    x, y = pf.rescaled_uniform_verifier(P_ANIMALS, Q_ANIMALS, u)
    law = _counts(y, v) / n
    assert sm.tv_distance(law, P_ANIMALS) <= tol
    assert abs(np.mean(x == y) - sm.acceptance_probability(P_ANIMALS, Q_ANIMALS)) <= tol
    assert sm.tv_distance(_counts(x, v) / n, Q_ANIMALS) <= tol          # X ~ q
    _, y_d = pf.rescaled_uniform_verifier(P_ANIMALS, Q_ANIMALS, u, rescale_residual=False)
    law_d = pf.residual_at_acceptance_uniform_output_distribution(P_ANIMALS, Q_ANIMALS)
    assert sm.tv_distance(_counts(y_d, v) / n, law_d) <= tol
    assert sm.tv_distance(_counts(y_d, v) / n, P_ANIMALS) > 0.1
    rng = np.random.default_rng(1414)
    n6 = 2 ** 16
    u6, tol6 = _grid(n6), 6 * 8 / n6
    caught = 0
    for _ in range(200):
        p, q = rng.dirichlet(np.full(6, 0.5)), rng.dirichlet(np.full(6, 0.5))
        q[rng.integers(6)] = 0.0
        p[rng.integers(6)] = 0.0
        p, q = p / p.sum(), q / q.sum()
        x6, y6 = pf.rescaled_uniform_verifier(p, q, u6)
        assert sm.tv_distance(_counts(y6, 6) / n6, p) <= tol6
        assert abs(np.mean(x6 == y6) - sm.acceptance_probability(p, q)) <= tol6
        _, b6 = pf.rescaled_uniform_verifier(p, q, u6, rescale_residual=False)
        law6 = pf.residual_at_acceptance_uniform_output_distribution(p, q)
        assert sm.tv_distance(_counts(b6, 6) / n6, law6) <= tol6
        caught += sm.tv_distance(_counts(b6, 6) / n6, p) > 2 * tol6
    assert caught > 150          # the unrescaled variant is off from p on most pairs


def test_inverse_cdf_and_gumbel_pairings_on_the_drafts_noise_emit_p_but_accept_less_on_animals():
    """Y = F_p⁻¹(U) at the draft's U, and Y = argmax(log p + G) with the draft's G, are
    exact samples from p that equal X less often than α (maximal coupling, chapter 3).
    The first by the grid bound; the second by a G-test (level 0.01, so a false alarm
    with probability about 0.01; seed fixed) that, at the same size, rejects the vLLM
    shared-noise verifier (b) (its power there is above 0.99: noncentral χ² at TV 0.009
    and 2·10⁵ draws), and an acceptance 5 standard errors below α."""
    n = 2 ** 18
    u = _grid(n)
    v = P_ANIMALS.size
    tol = v * (v + 2) / n
    alpha = sm.acceptance_probability(P_ANIMALS, Q_ANIMALS)
    x = np.minimum(np.searchsorted(np.cumsum(Q_ANIMALS), u, side="right"), v - 1)
    y = np.minimum(np.searchsorted(np.cumsum(P_ANIMALS), u, side="right"), v - 1)
    assert sm.tv_distance(_counts(y, v) / n, P_ANIMALS) <= tol
    assert np.mean(x == y) < alpha - tol
    rng = np.random.default_rng(2024)
    m = 200_000
    g = rng.gumbel(size=(m, v))
    xg = np.argmax(np.log(Q_ANIMALS) + g, axis=1)
    yg = np.argmax(np.log(P_ANIMALS) + g, axis=1)
    assert stats.g_test(_counts(yg, v), P_ANIMALS).pvalue > LEVEL
    assert np.mean(xg == yg) < alpha - 5 * np.sqrt(alpha * (1 - alpha) / m)
    _, y_sh = pf.gumbel_verifier_outputs(P_ANIMALS, Q_ANIMALS, m, rng)
    assert stats.g_test(_counts(y_sh, v), P_ANIMALS).pvalue < LEVEL     # (b) caught


def test_rescaled_uniform_verifier_rejects_uniforms_outside_the_unit_interval():
    for bad in ([0.5, 1.0], [-0.1], []):
        with pytest.raises(ValueError, match="u must"):
            pf.rescaled_uniform_verifier(P_ANIMALS, Q_ANIMALS, bad)
    with pytest.raises(ValueError, match="p"):
        pf.rescaled_uniform_verifier([0.5, 0.6], [0.5, 0.5], [0.2])


def test_slot_conditions_alone_are_not_enough_a_second_draft_at_slot_one_uniform_biases():
    """Review R15a finding 1: the proof of ch2-thm-sequence also uses that the drafted
    token, given the past (earlier slots' uniforms included), follows q. Pipeline (f):
    k = 2, X_2 = F_q⁻¹(U_1) at slot 1's acceptance uniform, all else fresh. X_2 ~ q and,
    given the past and X_2 = x, slot 2 accepts at a(x) and recovers from r (the
    (draft, verdict) counts fit the exact draft law times a(x), G-test level 0.01), yet
    given slot 1 accepted X_2 is off from q by TV 0.204 and the second token off from p
    by TV 0.124 (the reviewer's exact values); both caught. A fresh X_2 (the condition
    restored) gives p."""
    p, q, v = P_ANIMALS, Q_ANIMALS, 5
    law_x, law = pf.draft_at_earlier_uniform_distributions(p, q)
    np.testing.assert_allclose(law_x, [0.2239, 0.5299, 0.0896, 0.1343, 0.0224], atol=1e-4)
    np.testing.assert_allclose(law, [0.3931, 0.3312, 0.1742, 0.0537, 0.0478], atol=1e-4)
    assert abs(sm.tv_distance(law, p) - 0.12430) < 1e-4
    assert sm.tv_distance(law_x, q) > 0.2
    rng = np.random.default_rng(1515)
    n = 400_000
    a, r = np.minimum(1, p / q), sm.residual_distribution(p, q)
    x1, u1 = rng.choice(v, n, p=q), rng.random(n)
    ok1 = u1 < a[x1]
    x2 = np.minimum(np.searchsorted(np.cumsum(q), u1, side="right"), v - 1)
    assert stats.g_test(_counts(x2, v), q).pvalue > LEVEL             # X_2 ~ q
    ok2 = rng.random(n) < a[x2]
    cells = np.bincount(2 * x2[ok1] + ok2[ok1], minlength=2 * v)

    def verdicts(d: np.ndarray) -> np.ndarray:
        return np.column_stack([d * (1 - a), d * a]).ravel()

    assert stats.g_test(cells, verdicts(law_x)).pvalue > LEVEL       # accepts at a(x)
    assert stats.g_test(cells, verdicts(q)).pvalue < LEVEL           # X_2 not ~ q
    # slot 2's acceptance rate at each draft, directly: within 5 standard errors of a(x)
    for x in range(v):
        m = ok1 & (x2 == x)
        se = np.sqrt(a[x] * (1 - a[x]) / m.sum())
        assert abs(ok2[m].mean() - a[x]) <= max(5 * se, 1e-12)
    y2 = np.where(ok2, x2, rng.choice(v, n, p=r))[ok1]
    assert stats.g_test(_counts(y2, v), law).pvalue > LEVEL
    assert stats.g_test(_counts(y2, v), p).pvalue < LEVEL            # caught
    x2f = rng.choice(v, n, p=q)                                      # control
    y2f = np.where(rng.random(n) < a[x2f], x2f, rng.choice(v, n, p=r))[ok1]
    assert stats.g_test(_counts(y2f, v), p).pvalue > LEVEL
    with pytest.raises(ValueError, match="overlap"):
        pf.draft_at_earlier_uniform_distributions([1.0, 0.0], [0.0, 1.0])


def test_gumbel_pairing_closed_form_matches_simulation_and_both_pairings_reach_alpha_on_two_tokens():
    """Review R15a findings 2 and 3: P(argmax(log q + G) = argmax(log p + G)) equals
    Σ_x 1/Σ_z max(q_z/q_x, p_z/p_x): 0.64747 on the animals (simulation within 5 SE,
    false alarm about 6e-7 per pair; α lies > 10 SE away), and on random 5-token pairs
    with zeros. The inverse-CDF pairing's overlap agrees with a grid evaluation (bound
    V(V + 2)/N). On two-token rows both equal α (1000 random pairs); on the animals
    both are below α, so "can give up acceptance" is pair-dependent."""
    p, q, v = P_ANIMALS, Q_ANIMALS, 5
    alpha = sm.acceptance_probability(p, q)
    exact = pf.gumbel_pairing_acceptance(p, q)
    assert abs(exact - 0.64747) < 1e-5 and exact < alpha
    quant = pf.inverse_cdf_pairing_acceptance(p, q)
    assert abs(quant - 0.57) < 1e-12
    n_grid = 2 ** 18
    u = _grid(n_grid)
    xq = np.minimum(np.searchsorted(np.cumsum(q), u, side="right"), v - 1)
    yq = np.minimum(np.searchsorted(np.cumsum(p), u, side="right"), v - 1)
    assert abs(np.mean(xq == yq) - quant) <= v * (v + 2) / n_grid
    rng = np.random.default_rng(1516)
    m = 200_000
    pairs = [(p, q)]
    for _ in range(4):
        pr, qr = rng.dirichlet(np.full(v, 0.7)), rng.dirichlet(np.full(v, 0.7))
        pr[0], qr[1] = 0.0, 0.0
        pairs.append((pr / pr.sum(), qr / qr.sum()))
    for pr, qr in pairs:
        ex = pf.gumbel_pairing_acceptance(pr, qr)
        assert ex <= sm.acceptance_probability(pr, qr) + 1e-12      # coupling bound
        g = rng.gumbel(size=(m, v))
        with np.errstate(divide="ignore"):
            same = np.argmax(np.log(qr) + g, axis=1) == np.argmax(np.log(pr) + g, axis=1)
        assert abs(same.mean() - ex) < 5 * np.sqrt(ex * (1 - ex) / m)
    assert alpha - exact > 10 * np.sqrt(exact * (1 - exact) / m)   # power against α
    gap = 0.0
    for _ in range(1000):
        p2, q2 = rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(2))
        a2 = sm.acceptance_probability(p2, q2)
        gap = max(gap, abs(pf.gumbel_pairing_acceptance(p2, q2) - a2),
                  abs(pf.inverse_cdf_pairing_acceptance(p2, q2) - a2))
    assert gap < 1e-12
    assert pf.gumbel_pairing_acceptance([1.0, 0.0], [0.5, 0.5]) == 0.5
    with pytest.raises(ValueError, match="p"):
        pf.gumbel_pairing_acceptance([0.5, 0.6], [0.5, 0.5])


def test_mismatched_draft_is_biased_on_full_support_targets_and_can_be_exact_where_p_is_zero():
    """Review R16a finding 1 (ch2 pitfall): a draft sampled greedily or from q's top two,
    reported as q, biases the output on every random pair whose target gives each token
    positive mass; with zeros in p a mismatch can stay exact."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        p, q = rng.dirichlet(np.ones(6), size=2)
        top2 = np.where(q >= np.sort(q)[-2], q, 0.0)
        for q_s in (pf.greedy(q), top2 / top2.sum()):
            assert sm.tv_distance(pf.mismatched_output_distribution(p, q, q_s), p) > 1e-6
    q, q_s = np.array([0.5, 0.3, 0.2]), np.array([0.625, 0.375, 0.0])
    assert np.allclose(pf.mismatched_output_distribution(q_s, q, q_s), q_s)
    assert not np.allclose(q_s, q)           # a real mismatch
