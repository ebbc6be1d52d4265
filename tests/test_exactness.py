"""Statistical exactness of speculative sampling (ch. 2, theorem exactness).

Design, shared by every test in this file:

* H0 is "the emitted tokens follow the target". Each test is a G-test
  (:func:`specmath.stats.g_test`) at level ``LEVEL = 0.001``: a correct implementation
  fails it with probability 0.1 % (the false-alarm rate). Seeds are fixed, so the outcome
  is reproducible, not flaky.
* Power: against each biased rule of :data:`specmath.NAIVE_RULES` the test computes the
  *exact* distribution the biased rule emits (:func:`specmath.naive_output_distribution`
  for one position; for whole decodes, the stationary law of the Markov chain on
  (context, position in the iteration), built below from the same per-position biased
  distributions) and from it the noncentrality λ = min(2n·KL, n·χ²) summed over contexts,
  weighted by how often each context occurs. The power ncx2.sf(crit, dof, λ) is asserted
  to be ≥ 0.99 for the sample size used. The companion tests then run each biased rule
  through the same test and assert that it fails.
* With the sizes below the smallest noncentrality is λ ≈ 180 (accept-if-top at one
  position, 3 dof, critical value 16.3; resample-from-p in the toy decode, 12 dof, critical
  value 32.9), so the computed power exceeds 0.9999 against every rule. Over 20 other seeds
  the correct implementation passed every test and every biased rule failed with p < 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

import specmath as sm
from specmath import stats, toy

LEVEL = 1e-3       # false-alarm rate of every G-test in this file
MIN_POWER = 0.99   # required power against every biased rule

# ---- power calculation -------------------------------------------------------------------


def power_of_gtest(p0: np.ndarray, p1: np.ndarray, n_per_row: np.ndarray) -> float:
    """Power of the row-wise G-test of H0: rows p0 when the rows really follow p1.

    ``p0``, ``p1``: (rows, V); ``n_per_row``: expected number of observations per row.
    Noncentral chi-square approximation with the smaller of the two usual noncentralities.
    """
    p0, p1 = np.atleast_2d(p0), np.atleast_2d(p1)
    n_per_row = np.atleast_1d(np.asarray(n_per_row, dtype=float))
    m = p0 > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(m & (p1 > 0), p1 * np.log(p1 / np.where(m, p0, 1)), 0.0).sum(axis=1)
        chi = np.where(m, (p1 - p0) ** 2 / np.where(m, p0, 1), 0.0).sum(axis=1)
    lam = max(0.0, min(float(2 * n_per_row @ kl), float(n_per_row @ chi)))
    dof = int((m.sum(axis=1) - 1).sum())
    return float(sps.ncx2.sf(sps.chi2.isf(LEVEL, dof), dof, lam))


def _position_law(p: np.ndarray, q: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """(continue, stop) parts of what one draft position emits under ``rule``.

    ``continue[b]``: b is emitted and accepted (the iteration goes on);
    ``stop[b]``: b is emitted as the correction (the iteration ends). They sum to the
    position's output distribution, which is ``naive_output_distribution`` for the biased
    rules and p for the exact one (checked in the tests).
    """
    if rule == "exact":
        cont = np.minimum(p, q)
        return cont, (1 - cont.sum()) * sm.residual_distribution(p, q)
    if rule == "always-accept":
        return q.copy(), np.zeros_like(q)
    if rule == "accept-if-top":
        top = int(np.argmax(p))
        cont = np.zeros_like(q)
        cont[top] = q[top]
        return cont, (1 - q[top]) * p
    if rule == "resample-from-p":
        cont = np.minimum(p, q)
        return cont, (1 - cont.sum()) * p
    raise AssertionError(rule)


def long_run_rows(P, Q, nxt, k: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Long-run fraction of emitted tokens out of each context, and the next-token law there.

    Speculative decoding of a target P[s] / draft Q[s] over contexts s (next context
    ``nxt(s, b)``) is a Markov chain on (s, i), i = position inside the iteration (k is the
    bonus position, which samples P). Returns (mass (S,), rows (S, V)).
    """
    S, V = P.shape
    n = S * (k + 1)
    M = np.zeros((n, n))
    emit = np.zeros((n, V))
    for s in range(S):
        for i in range(k + 1):
            cont, stop = (np.zeros(V), P[s]) if i == k else _position_law(P[s], Q[s], rule)
            emit[s * (k + 1) + i] = cont + stop
            for b in range(V):
                t = nxt(s, b) * (k + 1)
                if i < k:
                    M[s * (k + 1) + i, t + i + 1] += cont[b]
                M[s * (k + 1) + i, t] += stop[b]
    w, vec = np.linalg.eig(M.T)
    pi = np.real(vec[:, np.argmin(np.abs(w - 1))])
    pi /= pi.sum()
    freq = (pi[:, None] * emit).reshape(S, k + 1, V).sum(axis=1)
    mass = freq.sum(axis=1)
    return mass, freq / mass[:, None]


# ---- one position ------------------------------------------------------------------------

# The target's rows for k = 2 (two draft positions and the bonus), and a mismatched draft.
P_STEP = np.array([[0.50, 0.25, 0.15, 0.10],
                   [0.10, 0.20, 0.30, 0.40],
                   [0.25, 0.25, 0.25, 0.25]])
Q_STEP = np.array([[0.15, 0.45, 0.10, 0.30],
                   [0.40, 0.30, 0.20, 0.10]])
N_STEP = 8_000


def first_tokens(rule: str, rng: np.random.Generator, n: int = N_STEP) -> np.ndarray:
    """Counts of the first emitted token over n independent verification rounds."""
    k, V = Q_STEP.shape
    cdf = np.cumsum(Q_STEP, axis=1)
    u = rng.random((n, k))
    drafts = np.minimum((u[:, :, None] >= cdf[None]).sum(axis=2), V - 1)  # inverse CDF
    counts = np.zeros(V, dtype=np.int64)
    for d in drafts:
        out = (sm.speculative_step(P_STEP, Q_STEP, d, rng) if rule == "exact"
               else sm.naive_step(P_STEP, Q_STEP, d, rng, rule))
        counts[out[0]] += 1
    return counts


def test_single_position_speculative_step_emits_p0(rng):
    # power against every biased rule, from their exact output distributions
    for rule in sm.NAIVE_RULES:
        biased = sm.naive_output_distribution(P_STEP[0], Q_STEP[0], rule)
        assert power_of_gtest(P_STEP[0], biased, N_STEP) >= MIN_POWER, rule
    assert stats.g_test(first_tokens("exact", rng), P_STEP[0]).pvalue > LEVEL


@pytest.mark.parametrize("rule", sm.NAIVE_RULES)
def test_single_position_biased_rule_fails_and_matches_its_own_law(rule, rng):
    counts = first_tokens(rule, rng)
    assert stats.g_test(counts, P_STEP[0]).pvalue < LEVEL
    # ... and naive_step really has the law naive_output_distribution claims (level 0.001)
    law = sm.naive_output_distribution(P_STEP[0], Q_STEP[0], rule)
    assert stats.g_test(counts, law).pvalue > LEVEL


# ---- whole decodes with speculative_step: a second-order target, a first-order draft ------

V2 = 3
_g = np.random.default_rng(7)
P_SECOND = _g.dirichlet(np.full(V2, 2.0), size=V2 * V2)  # P(next | prev2, prev1), row 3·a2 + a1
Q_FIRST = _g.dirichlet(np.full(V2, 1.0), size=V2)        # draft looks at the last token only
K_DECODE = 3
N_DECODE = 6_000


def _next_context(s: int, b: int) -> int:
    return (s % V2) * V2 + b


def decode_with_steps(rule: str, rng: np.random.Generator, n_tokens: int = N_DECODE):
    """Whole speculative decode, written out here around speculative_step / naive_step."""
    cdf = np.cumsum(Q_FIRST, axis=1)
    seq = [0, 0]  # the prompt
    while len(seq) - 2 < n_tokens:
        s = seq[-2] * V2 + seq[-1]
        drafted, ps, qs = [], [], []
        for _ in range(K_DECODE):
            q = Q_FIRST[s % V2]
            x = min(int(np.searchsorted(cdf[s % V2], rng.random(), side="right")), V2 - 1)
            ps.append(P_SECOND[s])
            qs.append(q)
            drafted.append(x)
            s = _next_context(s, x)
        ps.append(P_SECOND[s])
        args = (np.array(ps), np.array(qs), np.array(drafted), rng)
        out = sm.speculative_step(*args) if rule == "exact" else sm.naive_step(*args, rule)
        seq.extend(int(t) for t in out)
    seq = np.array(seq)
    counts = np.zeros((V2 * V2, V2), dtype=np.int64)
    np.add.at(counts, (seq[:-2] * V2 + seq[1:-1], seq[2:]), 1)
    return counts


def test_long_run_model_of_the_exact_rule_is_the_target():
    """Sanity check of the power model: under the exact rule every context emits P."""
    q_ctx = Q_FIRST[np.arange(V2 * V2) % V2]
    _, rows = long_run_rows(P_SECOND, q_ctx, _next_context, K_DECODE, "exact")
    np.testing.assert_allclose(rows, P_SECOND, atol=1e-10)
    for rule in sm.NAIVE_RULES:
        for s in range(V2 * V2):
            cont, stop = _position_law(P_SECOND[s], q_ctx[s], rule)
            np.testing.assert_allclose(cont + stop, sm.naive_output_distribution(
                P_SECOND[s], q_ctx[s], rule), atol=1e-12)


def test_whole_decode_with_speculative_step_reproduces_second_order_target(rng):
    q_ctx = Q_FIRST[np.arange(V2 * V2) % V2]
    for rule in sm.NAIVE_RULES:
        mass, rows = long_run_rows(P_SECOND, q_ctx, _next_context, K_DECODE, rule)
        assert power_of_gtest(P_SECOND, rows, N_DECODE * mass) >= MIN_POWER, rule
    counts = decode_with_steps("exact", rng)
    assert counts.sum() >= N_DECODE
    assert (counts.sum(axis=1) > 0).all()  # every context was visited
    assert stats.g_test(counts, P_SECOND).pvalue > LEVEL


@pytest.mark.parametrize("rule", sm.NAIVE_RULES)
def test_whole_decode_with_biased_naive_step_fails(rule, rng):
    assert stats.g_test(decode_with_steps(rule, rng), P_SECOND).pvalue < LEVEL


# ---- whole decodes with specmath.toy.speculative_decode ---------------------------------

TARGET, DRAFT = toy.toy_pair(vocab_size=4, closeness=0.2, seed=3, concentration=1.0)
K_TOY = 3
N_TOY = 5_000


def toy_counts(rule: str, rng: np.random.Generator) -> np.ndarray:
    res = toy.speculative_decode(TARGET, DRAFT, N_TOY, K_TOY, rng, context=(0,), rule=rule)
    assert len(res.tokens) == N_TOY
    return toy.transition_counts(res.tokens, TARGET.vocab_size, context_last=0)


def test_toy_speculative_decode_reproduces_target_transitions(rng):
    for rule in sm.NAIVE_RULES:
        mass, rows = long_run_rows(TARGET.transition, DRAFT.transition, lambda s, b: b,
                                   K_TOY, rule)
        assert power_of_gtest(TARGET.transition, rows, N_TOY * mass) >= MIN_POWER, rule
    counts = toy_counts("exact", rng)
    assert counts.sum() == N_TOY
    assert stats.g_test(counts, TARGET.transition).pvalue > LEVEL


@pytest.mark.parametrize("rule", sm.NAIVE_RULES)
def test_toy_speculative_decode_with_biased_rule_fails(rule, rng):
    assert stats.g_test(toy_counts(rule, rng), TARGET.transition).pvalue < LEVEL


def test_toy_autoregressive_decode_reproduces_target_transitions(rng):
    """The reference the chapters compare against: plain sampling passes the same test."""
    res = toy.autoregressive_decode(TARGET, N_TOY, rng, context=(0,))
    counts = toy.transition_counts(res.tokens, TARGET.vocab_size, context_last=0)
    assert stats.g_test(counts, TARGET.transition).pvalue > LEVEL
