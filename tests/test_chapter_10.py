"""Chapter 10: its exercise checkers against independent computations, its figures, and the
real-pair script (``benchmarks/multidraft_realmodel.py``, run in --quick mode on tiny
in-process models) with the committed result file the chapter reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from specmath import multidraft as md  # noqa: E402
from specmath import trees as tr  # noqa: E402
from specmath.exercises import ch10, check, exercise_keys  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_chapter_10_exercises_are_registered_and_reject_wrong_answers():
    keys = [k for k in exercise_keys() if k.startswith("ch10-")]
    assert keys == ["ch10-ex1", "ch10-ex2", "ch10-ex3", "ch10-ex4", "ch10-ex5", "ch10-ex6",
                    "ch10-ex7"]
    from specmath.exercises import _REGISTRY
    for key in keys:
        truth = np.asarray(_REGISTRY[key].compute(), float)
        assert check(key, truth, quiet=True)
        assert not check(key, truth * 1.05 + 1, quiet=True)


def test_exercise_answers_agree_with_hand_formulas():
    p, q = np.array(ch10.EX1_P), np.array(ch10.EX1_Q)
    b1 = np.minimum(p, q).sum()
    r2 = np.maximum(p - q, 0) / (1 - b1)
    b2 = np.minimum(r2, q).sum()
    assert check("ch10-ex1", 1 - (1 - b1) * (1 - b2), quiet=True)
    # one-hot target: recursive rejection reaches the LP ceiling
    e, q2 = np.array([1.0, 0.0]), np.array([ch10.EX2_QY, 1 - ch10.EX2_QY])
    assert check("ch10-ex2", md.multidraft_ot_ceiling(e, q2, ch10.EX2_M), quiet=True)
    # without replacement, conditioning on the first candidate
    p3, q3 = np.array(ch10.EX3_P), np.array(ch10.EX3_Q)
    r = np.maximum(p3 - q3, 0) / np.maximum(p3 - q3, 0).sum()
    wo = 0.0
    for x in range(3):
        a = min(1.0, p3[x] / q3[x])
        qm = q3.copy()
        qm[x] = 0
        wo += q3[x] * (a + (1 - a) * np.minimum(r, qm / qm.sum()).sum())
    b1 = np.minimum(p3, q3).sum()
    iid = 1 - (1 - b1) * (1 - np.minimum(r, q3).sum())
    assert check("ch10-ex3", [iid, wo], quiet=True)
    # chain of n with a₁ only: 1 + a + … + a^n
    a1, n = ch10.EX4_A[0], ch10.EX4_N
    chain = sum(a1 ** j for j in range(n + 1))
    from specmath.exercises import _REGISTRY
    assert _REGISTRY["ch10-ex4"].compute()[1] == pytest.approx(chain)
    _, par = tr.best_tree(np.array(ch10.EX4_A), ch10.EX5_N)
    assert check("ch10-ex5", int(tr.tree_depths(par).sum()), quiet=True)


def test_without_replacement_never_loses_with_two_candidates():
    # the exercise-3 argument: with two candidates, drawing without replacement keeps a
    # candidate at least as often as i.i.d. drawing
    rng = np.random.default_rng(5)
    for _ in range(300):
        p, q = rng.dirichlet(np.full(4, 0.4)), rng.dirichlet(np.full(4, 0.4))
        assert (md.multidraft_acceptance(p, q, 2, replacement=False)
                >= md.multidraft_acceptance(p, q, 2) - 1e-12)


def test_figures_draw_without_error():
    from specmath.plots import trees as pt
    p, q = np.array([0.5, 0.25, 0.15, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    for fig in (pt.plot_multidraft(p, q), pt.plot_tree_budget(tr.rank_acceptance(p, q, 4), 12),
                pt.draw_tree(tr.best_tree(tr.rank_acceptance(p, q, 4), 8)[1])):
        assert fig.axes
        plt.close(fig)
    from specmath.widgets.trees import trees_explorer, trees_figure, trees_pair
    p, q = trees_pair(1.0)
    assert np.allclose(p, q)                                 # closeness one is q = p
    assert len(trees_figure(0.5, 2, 8).axes) == 2
    plt.close("all")
    pytest.importorskip("ipywidgets")
    trees_explorer(show_controls=False)
    plt.close("all")


def test_chain_EN_is_chapter_4_formula_and_the_second_candidate_adds_a2():
    import multidraft_realmodel as mr

    from specmath import expected_tokens
    a = np.full(10, 0.7)
    for k in (1, 3, 5):
        assert mr.chain_EN(a, k) == pytest.approx(expected_tokens(0.7, k))
    second = np.full(10, 0.8)
    assert mr.chain_EN(a, 3, second) == pytest.approx(expected_tokens(0.7, 3) + 0.1)
    # and it equals the tree value of {two root children, chain below the first}
    rank = np.array([[0.7, 0.1], [0.7, 0.0], [0.7, 0.0]])
    tree = np.array([-1, -1, 0, 2])
    assert mr.chain_EN(a, 3, second)[0] == pytest.approx(
        tr.tree_expected_accepted(tree, rank) + 1)


def test_benchmark_quick_mode_runs_on_tiny_models(tmp_path):
    from tinymodels import run_quick

    R = run_quick("multidraft_realmodel", tmp_path / "m.json")
    assert (tmp_path / "m.json").exists()
    for row in R["prompts"]:
        acc = np.array([row["accept_m"][str(m)] for m in R["ms"]])
        up = np.array([row["upper_m"][str(m)] for m in R["ms"]])
        assert np.all(np.diff(acc, axis=0) >= -1e-12)      # non-decreasing in m
        assert np.all(acc <= up + 1e-12)                    # below the upper bound
    assert R["provenance"]["shared_machine"] is True


def test_committed_result_file_is_consistent():
    path = ROOT / "specmath" / "data" / "results" / "multidraft_cpu.json"
    if not path.exists():
        pytest.skip("specmath/data/results/multidraft_cpu.json not recorded yet")
    import multidraft_realmodel as mr
    R = json.loads(path.read_text())
    assert not R["quick"]
    for key in ("date_utc", "device_name", "torch", "transformers", "target", "draft"):
        assert R["provenance"][key]
    # the summary is recomputed from the per-position rows
    S = mr.summarise(R["prompts"])
    for key, v in S["overall"].items():
        assert R["summary"]["overall"][key]["mean"] == pytest.approx(v["mean"])


def test_multidraft_record_and_script_call_the_six_prompt_bootstrap_nominal_only():
    """Review R7b finding 11: the percentile bootstrap over 6 prompts is stored under
    ``bootstrap_nominal95`` (no ``ci95`` key) and the script's docstring says the level is
    nominal and not a confidence level; the docstring no longer says only U_m is
    available (the exact ceiling is recorded by multidraft_ceiling.py)."""
    path = ROOT / "specmath" / "data" / "results" / "multidraft_cpu.json"
    if not path.exists():
        pytest.skip("specmath/data/results/multidraft_cpu.json not recorded yet")
    import multidraft_realmodel as mr
    R = json.loads(path.read_text())
    assert len(R["prompts"]) == 6
    for v in R["summary"]["overall"].values():
        assert set(v) == {"mean", "bootstrap_nominal95"}
    doc = " ".join(mr.__doc__.split())
    assert "nominal level of 95 %" in doc and "not a confidence interval" in doc
    assert "Interval: 95 %" not in doc and "multidraft_ceiling.py" in doc


def test_ceiling_benchmark_quick_mode_on_tiny_models_orders_recursive_ceiling_bound(tmp_path):
    from tinymodels import run_quick

    R = run_quick("multidraft_ceiling", tmp_path / "c.json", {"a-0": ("a", [1, 2, 3])})
    for row in R["prompts"]:
        for m in R["ms"]:
            acc, ot = np.array(row["accept_m"][str(m)]), np.array(row["ceiling_m"][str(m)])
            up, tk = np.array(row["upper_m"][str(m)]), np.array(row["topk_m"][str(m)])
            assert np.all(acc <= ot + 1e-9) and np.all(ot <= up + 1e-9)
            assert np.all((tk >= 0) & (tk <= 1 + 1e-12))
        assert row["ceiling_m"]["1"] == pytest.approx(row["alpha"], abs=1e-9)


def test_committed_ceiling_file_matches_the_multidraft_file_and_the_theorems():
    """multidraft_ceiling_cpu.json re-scores the texts of multidraft_cpu.json: α and
    recursive rejection agree position by position; OT_1 = α (theorem ch10-thm-cut);
    recursive ≤ exact ceiling ≤ U_m; top-1 = p(argmax q) ≤ 1."""
    base = ROOT / "specmath" / "data" / "results"
    if not (base / "multidraft_ceiling_cpu.json").exists():
        pytest.skip("multidraft_ceiling_cpu.json not recorded yet")
    R = json.loads((base / "multidraft_cpu.json").read_text())
    RC = json.loads((base / "multidraft_ceiling_cpu.json").read_text())
    assert not RC["quick"] and RC["provenance"]["target"] and RC["provenance"]["date_utc"]
    for row, rc in zip(R["prompts"], RC["prompts"], strict=True):
        assert row["prompt"] == rc["prompt"]
        assert np.abs(np.subtract(row["accept_m"]["1"], rc["alpha"])).max() < 1e-4
        assert np.abs(np.subtract(rc["ceiling_m"]["1"], rc["alpha"])).max() < 1e-9
        for m in RC["ms"]:
            acc, ot = np.array(rc["accept_m"][str(m)]), np.array(rc["ceiling_m"][str(m)])
            up = np.array(rc["upper_m"][str(m)])
            assert np.abs(acc - np.array(row["accept_m"][str(m)])).max() < 1e-4
            assert np.all(acc <= ot + 1e-9) and np.all(ot <= up + 1e-9)


def _shared_coin_law(p, cands, th_acc=1.0, th_single=1.0):
    """Exact law of SGLang's one-coin-per-level rule (tree_speculative_sampling_target_only
    at sglang 120affb): sibling r is kept if it is the first with u ≤ cum_r / th_acc or
    p(c_r) ≥ th_single; if none is kept, a draw from p with the siblings zeroed."""
    cum = np.cumsum(p[cands]) / th_acc
    law, lo = np.zeros(p.size), 0.0
    for r, c in enumerate(cands):
        hi = 1.0 if p[c] >= th_single else min(1.0, max(lo, cum[r]))
        law[c] += hi - lo
        lo = hi
    rest = p.copy()
    rest[cands] = 0.0
    if rest.sum() > 0:
        law += (1 - lo) * rest / rest.sum()
    return law


def test_sglang_shared_coin_keeps_sibling_r_with_target_mass_and_is_lossy_off_defaults():
    """Review R2 finding 9: at the default thresholds (1, 1) the shared coin keeps sibling
    r with probability p(c_r), the law of Proposition ch10-prop-topk, and emits p; with
    threshold_acc = 1/2 it over-emits the candidates. Exact law on random pairs, then a
    simulation (fixed seed, n = 20,000, |z| < 4 per token: false-alarm rate ≈ 6e-5 each).
    Review R7b finding 4: at (1, 1) the exact law equal to p, and its kept mass equal to
    topk_keep_probability, are algebra once the rule is transcribed (interval lengths
    p(c_r)); they test our transcription, not SGLang's kernel. What can fail is the
    simulation and the lossy threshold."""
    rng = np.random.default_rng(21)
    for _ in range(300):
        V = int(rng.integers(2, 9))
        p, q = rng.dirichlet(np.full(V, 0.7)), rng.dirichlet(np.full(V, 0.7))
        for m in range(1, V + 1):
            cands = np.argsort(-q, kind="stable")[:m]
            law = _shared_coin_law(p, cands)
            np.testing.assert_allclose(law, p, atol=1e-12)
            assert law[cands].sum() == pytest.approx(md.topk_keep_probability(p, q, m))
        cands = np.argsort(-q, kind="stable")[:2]
        lossy = _shared_coin_law(p, cands, th_acc=0.5)
        assert lossy[cands].sum() >= p[cands].sum() - 1e-12
    p = np.array([0.3, 0.25, 0.25, 0.2])
    cands = np.array([2, 3])
    n = 20_000
    u = rng.random(n)
    pick = np.searchsorted(np.cumsum(p[cands]), u, side="right")   # strict u < cum_r
    rest = p.copy()
    rest[cands] = 0
    draws = np.where(pick < 2, cands[np.minimum(pick, 1)],
                     rng.choice(4, n, p=rest / rest.sum()))
    freq = np.bincount(draws, minlength=4) / n
    z = np.abs(freq - p) / np.sqrt(p * (1 - p) / n)
    assert z.max() < 4
    lossy = _shared_coin_law(p, cands, th_acc=0.5)
    assert np.abs(lossy - p).max() > 0.1          # kept mass 0.9 instead of 0.45
    assert lossy[cands].sum() == pytest.approx(min(1.0, 2 * p[cands].sum()))


def test_inclusive_shared_coin_at_u_zero_keeps_a_zero_mass_sibling_and_strict_does_not():
    """Review R7b finding 3 (SGLang issue #35771, fixed by pull request #35798): the
    kernel's test u ≤ cum_r with coins on [0, 1) keeps the first sibling at u = 0 even when
    its target probability is 0; the strict test u < cum_r never does, and for continuous
    u the two have the same law (the exact law gives that sibling 0)."""
    p = np.array([0.0, 0.6, 0.4])
    cands = np.array([0, 1])
    cum = np.cumsum(p[cands])
    assert np.searchsorted(cum, 0.0, side="left") == 0       # inclusive: kept, p = 0
    assert np.searchsorted(cum, 0.0, side="right") == 1      # strict: the next sibling
    assert _shared_coin_law(p, cands)[0] == 0
    u = np.random.default_rng(3).random(10_000)
    assert (np.searchsorted(cum, u, side="left") != 0).all()  # u > 0 here: same picks
    np.testing.assert_array_equal(np.searchsorted(cum, u, side="left"),
                                  np.searchsorted(cum, u, side="right"))


def test_ch10_ex6_best_deterministic_tree_is_the_most_probable_paths_by_brute_force():
    """Exercise 10.6 (review R7b finding 16, a proof exercise on finding 8's formula): the
    checker's best value (sum of the n largest target path probabilities, + 1) equals a
    brute force over every tree of n nodes (every parent-closed set of n paths, grown one
    node at a time), and the draft's top-2 tree of depth 2 falls short of it."""
    from specmath import toy
    from specmath.exercises import _REGISTRY
    best, draft_tree = _REGISTRY["ch10-ex6"].compute()
    assert (ch10.EX6_V, ch10.EX6_CLOSE) == (3, 0.4)    # the count 7752 below needs V = 3
    target, draft = toy.toy_pair(ch10.EX6_V, ch10.EX6_CLOSE, seed=ch10.EX6_SEED)
    par, tok = tr.top_m_tree(draft, ch10.EX6_M, ch10.EX6_DEPTH)
    n = par.size
    assert draft_tree == pytest.approx(1 + tr.deterministic_tree_value(target, par, tok))
    cache = {}

    def prob(v):
        if v not in cache:
            cache[v] = (1.0 if len(v) == 1 else prob(v[:-1])) * float(
                target.next_distribution(list(v[:-1]))[v[-1]])
        return cache[v]

    trees = {frozenset()}
    for _ in range(n):
        trees = {t | {u + (x,)} for t in trees for u in [()] + list(t) for x in range(3)
                 if u + (x,) not in t}
    assert len(trees) == 7752      # with the root: ternary trees of 7 nodes, C(21, 7)/15
    brute = max(sum(prob(v) for v in t) for t in trees)
    assert best == pytest.approx(1 + brute, abs=1e-12)
    assert best > draft_tree


def test_a_better_draft_first_raises_then_lowers_a2_and_the_tree_gain_on_the_explorer_pair():
    """Review R11c finding 2: on the explorer's pair (closeness 0, 0.05, …, 1) a second
    candidate's worth a₂ rises to a peak at 0.35 and the best 40-node tree's gain over the
    chain at 0.55, then both fall to zero at q = p; the first branching size never falls."""
    from specmath.widgets.trees import trees_pair

    cs = np.round(np.arange(0, 1.0001, 0.05), 2)
    a2, gain, first = [], [], []
    for c in cs:
        a = tr.rank_acceptance(*trees_pair(c), 60)
        a2.append(a[1])
        gain.append(tr.best_tree_values(a[:40], 40)[40]
                    - tr.tree_expected_accepted(tr.chain_tree(40), a))
        first.append(next((n for n in range(1, 61) if a[0] ** n < a[1]), 61))
    for eff, peak in ((np.array(a2), 0.35), (np.array(gain), 0.55)):
        i = int(np.argmax(eff))
        assert cs[i] == peak and eff[i] > eff[0] + 0.01
        assert (np.diff(eff[:i + 1]) > 0).all() and (np.diff(eff[i:]) < 1e-12).all()
    assert (np.diff(first) >= 0).all()


def test_cost_section_best_depth_two_has_depth_three_within_one_percent():
    """Review R11c finding 3: with c = 10 and 16 nodes in the running example (uncapped
    ranks) depth 2 gives speedup 1.9262 and depth 3 gives 1.9157: close behind, not far."""
    p, q = np.array([0.5, 0.25, 0.15, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    a = tr.rank_acceptance(p, q, 16)
    s = {}
    for D in range(1, 7):
        v, par = tr.best_tree(a, 16, max_depth=D)
        d = int(tr.tree_depths(par).max())
        s[d] = max(s.get(d, 0.0), (v + 1) / (1 + d / 10))
    ranked = sorted(s, key=lambda d: -s[d])
    assert ranked[:2] == [2, 3]
    assert s[2] == pytest.approx(1.92617, abs=1e-5) and s[3] == pytest.approx(1.91573, abs=1e-5)
    assert s[2] - s[3] < 0.01 * s[2]


def test_topk_expansion_at_q_equal_p_misses_the_best_tree_when_a_node_needs_over_k_children():
    """Review R14c finding 7: even at q = p the per-level top-k expansion loses to the
    best deterministic tree when that tree has more than k children at a node (on these
    toys it matches the best tree otherwise; the converse is not a law, see the next
    test)."""
    from collections import Counter

    from specmath import toy
    seen = set()
    for seed in range(3):
        for conc in (0.5, 2.0, 5.0):
            target, _ = toy.toy_pair(8, 0.4, seed=seed, concentration=conc)
            for k, n in ((2, 6), (3, 10), (4, 10)):
                best = tr.best_paths(target, n)
                got = tr.topk_expansion(target, k, n)
                assert all(v[:-1] in {u for _, u in got} | {()} for _, v in got)
                wide = max(Counter(v[:-1] for _, v in best).values()) > k
                v_best, v_got = sum(p for p, _ in best), sum(p for p, _ in got)
                if wide:
                    assert v_got < v_best - 1e-3
                else:
                    assert v_got == pytest.approx(v_best, abs=1e-12)
                seen.add(wide)
    assert seen == {True, False}
    # the chapter's example: flat rows, k = 2, six nodes, six children at the root
    target, _ = toy.toy_pair(8, 0.4, seed=0, concentration=2.0)
    best = tr.best_paths(target, 6)
    assert sum(1 for _, v in best if len(v) == 1) == 6


def test_best_forty_node_iid_tree_of_the_running_example_has_thirteen_root_children():
    """Review R14c finding 7 (the reviewer's own slot filling gives 13 as well)."""
    p, q = np.array([0.5, 0.25, 0.15, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    _, par = tr.best_tree(tr.rank_acceptance(p, q, 40), 40)
    assert int((par == -1).sum()) == 13


def test_without_replacement_passes_the_iid_ceiling_at_three_by_under_a_thousandth():
    """Review R14c finding 8: fig-ch10-multidraft's dashed curve meets the ceiling at
    m = 3 (0.77190 against 0.77100, the reviewer's own LP and recursion) and passes it
    clearly at m = 4."""
    p, q = np.array([0.5, 0.25, 0.15, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    wo = [md.multidraft_acceptance(p, q, m, replacement=False) for m in (2, 3, 4)]
    ot = [md.multidraft_ot_ceiling(p, q, m) for m in (2, 3, 4)]
    assert wo[0] < ot[0]
    assert 0 < wo[1] - ot[1] < 1e-3
    assert wo[1] == pytest.approx(0.77190, abs=1e-5) and ot[1] == pytest.approx(0.771, abs=1e-5)
    assert wo[2] > ot[2] + 0.1


def test_topk_expansion_misses_a_best_tree_with_at_most_k_children_per_node_through_its_path_cap():
    """Review R15c finding 1: the expansion also keeps only the k best paths of a level, so
    a best tree with at most k children per node can still be out of reach (same row
    (0.5, 0.45, 0.05) after every context, k = 2, 12 nodes), while at 8 nodes it is
    reached."""
    from collections import Counter

    target = np.array([0.5, 0.45, 0.05])        # the same row after every context
    for n, misses in ((8, False), (12, True)):
        best, got = tr.best_paths(target, n), tr.topk_expansion(target, 2, n)
        assert max(Counter(v[:-1] for _, v in best).values()) <= 2
        v_best, v_got = sum(p for p, _ in best), sum(p for p, _ in got)
        assert (v_got < v_best - 1e-3) if misses else v_got == pytest.approx(v_best)


def test_best_paths_and_topk_expansion_reject_bad_input_by_name():
    with pytest.raises(ValueError, match="target"):
        tr.best_paths(lambda ctx: None, 3)
    with pytest.raises(ValueError, match="target"):
        tr.topk_expansion([0.5, 0.6], 2, 3)
    with pytest.raises(ValueError, match="^k must be an integer"):
        tr.topk_expansion([0.5, 0.5], 1.5, 3)
    with pytest.raises(ValueError, match="^k must be an integer ≥ 1"):
        tr.topk_expansion([0.5, 0.5], 0, 3)
    with pytest.raises(ValueError, match="^n must be an integer ≥ 1"):
        tr.best_paths([0.5, 0.5], 0)
    with pytest.raises(ValueError, match="^context must be a sequence of token ids"):
        tr.topk_expansion([0.5, 0.5], 2, 3, context="ab")
    with pytest.raises(ValueError, match=r"^context tokens must be in \[0, 2\)"):
        tr.best_paths([0.5, 0.5], 3, context=[5])

    class BadRows:                       # a model whose rows are not distributions
        vocab_size = 3

        def next_distribution(self, ctx):
            return [0.9, 0.9, 0.9]

    with pytest.raises(ValueError, match="^target row must sum to 1"):
        tr.best_paths(BadRows(), 2)


def test_best_paths_and_topk_expansion_keep_every_parent_when_probabilities_tie():
    # a one-hot row makes every path along token 0 equally probable; the kept paths must
    # still form a tree (each parent kept), so their probabilities sum to E[N] - 1
    for paths in (tr.best_paths([1.0, 0.0, 0.0], 3), tr.topk_expansion([1.0, 0.0, 0.0], 2, 3)):
        kept = {v for _, v in paths}
        assert kept == {(0,), (0, 0), (0, 0, 0)}
        assert all(v[:-1] in kept or len(v) == 1 for v in kept)


def test_ch10_ex7_answer_is_the_min_cut_ceiling_and_recursive_rejection_by_hand():
    """Exercise 10.7 (review R21): the checker's ceiling equals the minimum cut of
    ch10-thm-cut over every subset (not the same linear program), and its recursive value
    equals alpha + (1 - alpha) * sum min(r, q) for two candidates, written out here."""
    import itertools

    from specmath.exercises import _REGISTRY
    ceiling, recursive = _REGISTRY["ch10-ex7"].compute()
    p, q = np.array(ch10.EX1_P), np.array(ch10.EX1_Q)
    assert ch10.EX7_M == 2
    cut = min(1 - p[list(S)].sum() + 1 - (1 - q[list(S)].sum()) ** 2
              for n in range(p.size + 1) for S in itertools.combinations(range(p.size), n))
    alpha = np.minimum(p, q).sum()
    r = np.maximum(p - q, 0) / (1 - alpha)
    assert ceiling == pytest.approx(cut, abs=1e-7)
    assert recursive == pytest.approx(alpha + (1 - alpha) * np.minimum(r, q).sum())
    assert ceiling - recursive > 0.05         # the exercise's point: a visible gap
