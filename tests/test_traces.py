"""specmath.traces and benchmarks/record_traces.py (chapter 7's shared real-model traces).

The exact replay of greedy iterations is checked against specmath.llm's real loop on tiny
in-process Qwen2 models (as in tests/test_llm.py); the recording script runs in --quick
mode on the same tiny models; the committed traces file, when present, is checked for its
documented layout and invariants.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specmath as sm
from specmath import traces as tr
from specmath.stats import g_test

ROOT = Path(__file__).resolve().parents[1]


# ---- the greedy replay ------------------------------------------------------------------

def test_greedy_iterations_worked_example_by_hand():
    # k = 2 along 1 1 0 1 1 1 1 0: [1 1 | bonus] [1 1 | bonus] then 1 draft (text end): [1 | 0]
    N, d = tr.greedy_iterations([1, 1, 0, 1, 1, 1, 1, 0], 2)
    assert N.tolist() == [3, 3, 2] and d.tolist() == [2, 2, 1]
    assert tr.tokens_per_iteration_greedy([1, 1, 0, 1, 1, 1, 1, 0], 2).tolist() == [3, 3]
    # a rejection at the first draft emits one token (the target's correction)
    assert tr.greedy_iterations([0, 0, 0, 0], 3)[0].tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_greedy_iterations_emit_exactly_the_text_and_at_most_k_plus_one(k):
    rng = np.random.default_rng(k)
    agree = (rng.random(500) < 0.7).astype(int)
    N, d = tr.greedy_iterations(agree, k)
    assert N.sum() == agree.size
    assert (N <= d + 1).all() and (d <= k).all()
    full = tr.tokens_per_iteration_greedy(agree, k)
    assert full.size == (d == k).sum() and (full <= k + 1).all()


def test_simulated_iterations_follow_truncated_geometric_law_at_constant_alpha():
    # constant α: N of full iterations must follow chapter 4's law; G-test at level 1e-3
    # (false alarm 1 in 1000); 60 000 positions give ~20 000 iterations, enough to reject
    # the law at α + 0.02 (checked below: the same counts against that law are rejected).
    α, k = 0.7, 4
    N = tr.simulate_iterations(np.full(60_000, α), k, np.random.default_rng(1))
    counts = np.bincount(N, minlength=k + 2)[1:]
    assert g_test(counts, sm.tokens_per_iteration_pmf(α, k)).pvalue > 1e-3
    assert g_test(counts, sm.tokens_per_iteration_pmf(α + 0.02, k)).pvalue < 1e-3


def test_simulated_iterations_use_each_positions_own_alpha():
    # α = 1 on even positions, 0 on odd: from an even start the draft survives exactly one
    # position, so with k = 3 every iteration is [accept, reject] → N = 2 deterministically
    α = np.tile([1.0, 0.0], 500)
    N = tr.simulate_iterations(α, 3, np.random.default_rng(0))
    assert (N == 2).all()


# ---- the replay equals the real loop on tiny models ----------------------------------------

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def pair(tiny_pair):
    return tiny_pair


def _record_traces():
    from tinymodels import load_benchmark
    return load_benchmark("record_traces")


@pytest.mark.parametrize("k", [1, 2, 4])
def test_greedy_replay_equals_speculative_generate_iterations(pair, k):
    from specmath import llm
    rt = _record_traces()
    target, draft = pair
    prompt = [1, 2, 3]
    L = 40
    spec = llm.speculative_generate(target, draft, torch.tensor([prompt]), k=k,
                                    temperature=0, max_new_tokens=L)
    # teacher-forced agreement on the loop's own output (= the target's greedy text)
    agree = (torch.argmax(rt._logits(target, prompt, spec.tokens), -1)
             == torch.argmax(rt._logits(draft, prompt, spec.tokens), -1)).long().numpy()
    N, d = tr.greedy_iterations(agree, k)
    assert N[d > 0].tolist() == spec.tokens_per_iteration
    assert d[d > 0].tolist() == spec.drafted
    assert 0 < agree.mean() < 1  # tested through both acceptances and rejections


def test_record_traces_quick_on_tiny_models_writes_a_loadable_file(pair, tmp_path):
    rt = _record_traces()
    target, draft = pair
    prompts = [{"id": f"toy-{i}", "task": "toy", "split": rt.split_of(i), "ids": ids}
               for i, ids in enumerate([[1, 2, 3], [5, 4]])]
    out = tmp_path / "traces.json"
    rt.main(["--quick", "--out", str(out)], models=(target, draft, None, prompts))
    R = tr.load_traces(out)
    assert len(R["prompts"]) == 4 and R["provenance"]["quick"]
    assert [r["split"] for r in R["prompts"]] == ["train", "train", "test", "test"]
    for rec in R["prompts"]:
        L = rec["L"]
        assert L == 8 and len(rec["agree"]) == L and len(rec["draws"]) == L
        assert set(rec["alpha"]) == {"0.3", "0.7", "1.0"}
        for T in rec["alpha"]:
            a = np.array(rec["alpha"][T])
            assert a.shape == (L,) and ((a >= 0) & (a <= 1)).all()
        if rec["text_temperature"] == 0:
            assert rec["text_is_target_argmax"] == 1.0  # the greedy text is the argmax
    assert tr.select(R, split="test", text_temperature=1)[0]["id"] == "toy-1"


def test_trace_fields_are_the_defining_sums_and_draws_estimate_alpha():
    rt = _record_traces()
    g = torch.Generator().manual_seed(0)
    pl, ql = torch.randn(3, 20, generator=g).double(), torch.randn(3, 20, generator=g).double()
    f = rt.trace_fields(pl, ql, np.random.default_rng(0), temperatures=(0.5, 1.0), m=4000)
    p, q = torch.softmax(pl, -1), torch.softmax(ql, -1)
    α = torch.minimum(p, q).sum(-1).numpy()
    assert np.allclose(f["alpha"]["1.0"], α, atol=1e-4)
    assert f["agree"] == (p.argmax(-1) == q.argmax(-1)).long().tolist()
    assert np.allclose(f["alpha_greedy_draft"]["1.0"],
                       p[torch.arange(3), q.argmax(-1)].numpy(), atol=1e-4)
    # E_{x~q} min(1, p(x)/q(x)) = Σ min(p, q): the draws' mean is within 5 standard errors
    # (each draw is in [0, 1], so its s.d. is ≤ 1/2; 5 s.e. is a ~1e-6 false alarm)
    acc = np.array([[a for _, a in row] for row in f["draws"]])
    assert (np.abs(acc.mean(1) - α) < 5 * 0.5 / np.sqrt(4000)).all()


# ---- the committed file --------------------------------------------------------------------

COMMITTED = ROOT / "specmath" / "data" / "results" / "traces_cpu.json"


@pytest.mark.skipif(not COMMITTED.is_file(), reason="traces not recorded yet")
def test_committed_traces_have_the_documented_layout_and_balance():
    R = tr.load_traces()
    assert COMMITTED.stat().st_size < 2e6
    P = R["prompts"]
    tasks = {r["task"] for r in P}
    assert len(tasks) >= 3
    for task in tasks:
        ids = {r["id"] for r in P if r["task"] == task}
        assert len(ids) >= 4
        splits = [r["split"] for r in P if r["task"] == task]
        assert splits.count("train") == splits.count("test")
    for r in P:
        assert r["L"] >= 64 and len(r["agree"]) == r["L"] == len(r["tokens"])
        assert {0, 1} >= set(r["agree"])
        if r["text_temperature"] == 0:
            # greedy text = the target's argmax at (nearly) every position; fp ties aside
            assert r["text_is_target_argmax"] >= 0.97


# ---- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "match"), [
    (lambda: tr.greedy_iterations([0, 2, 1], 2), r"agree must contain only 0 and 1"),
    (lambda: tr.greedy_iterations([[0, 1]], 2), r"agree must be a 1-D"),
    (lambda: tr.greedy_iterations([0, 1], -1), r"k must be an integer ≥ 0"),
    (lambda: tr.tokens_per_iteration_greedy([0, 1], 1.5), r"k must be an integer"),
    (lambda: tr.simulate_iterations([0.5, 1.2], 2, np.random.default_rng(0)),
     r"alpha_list must be in \[0, 1\]"),
    (lambda: tr.simulate_iterations([0.5], 2, 0), r"rng must be a numpy.random.Generator"),
    (lambda: tr.load_traces(3), r"path must be a str or pathlib.Path"),
    (lambda: tr.load_traces("/nonexistent/traces.json"), r"path must name an existing"),
    (lambda: tr.select({"prompts": []}, split="dev"), r"split must be 'train', 'test'"),
    (lambda: tr.traces_path("tpu"), r"device must be 'cpu' or 'gpu'"),
    (lambda: tr.greedy_run_cost([1, 0], 2, [1.0, 2.0], 0.2), r"t_target must hold k \+ 1"),
    (lambda: tr.greedy_run_cost([1, 0], 1, [1.0, 2.0], -0.2), r"t_draft must be a positive"),
])
def test_traces_bad_input_raises_value_error_naming_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_alpha_reached_averages_only_checked_positions_at_greedy(pair):
    # at T = 0 a reached position is an accepted draft (1) or the first rejection (0), so
    # the mean over reached positions is Σ accepted ÷ Σ min(accepted + 1, drafted)
    from specmath import llm
    target, draft = pair
    r = llm.speculative_generate(target, draft, torch.tensor([[7, 0, 7, 0, 2, 6]]), k=4,
                                 temperature=0, max_new_tokens=30)
    acc, d = np.array(r.accepted), np.array(r.drafted)
    assert r.alpha_reached == pytest.approx(acc.sum() / np.minimum(acc + 1, d).sum())
    assert (acc < d).any()  # some iteration had unreached positions


def test_greedy_run_cost_counts_each_pass_of_a_hand_example():
    # k = 2 along 1 1 0 1 1 1 1 0 (iterations [3, 3, 2], drafted [2, 2, 1]):
    # draft passes 2 + 2 + 1, the second and third iterations start with a catch-up
    # (2-token) draft pass after a fully accepted iteration; target passes score 3, 3, 2
    tt = [1.0, 1.5, 2.0]
    cost = tr.greedy_run_cost([1, 1, 0, 1, 1, 1, 1, 0], 2, tt, 0.25, t_draft2=0.4,
                              prefill_target=5.0, prefill_draft=2.0)
    draft = 5 * 0.25 + 2 * (0.4 - 0.25) - 0.25 + 2.0
    target = 2.0 + 2.0 + 1.5 - 2.0 + 5.0
    assert cost == pytest.approx(draft + target)
    # k = 0: the prefill and L − 1 one-token passes
    assert tr.greedy_run_cost([0, 1, 1], 0, [1.0], 0.25, prefill_target=5.0) == 7.0
    # without prefills, in target steps: Σ drafted/c + V(drafted)
    c, V = 4.0, np.array([1.0, 1.5, 2.0])
    a = (np.random.default_rng(0).random(200) < 0.8).astype(int)
    N, d = tr.greedy_iterations(a, 2)
    assert tr.greedy_run_cost(a, 2, V, 1 / c) == pytest.approx((d / c + V[d]).sum())
    assert tr.greedy_run_cost(a, 0, V, 1 / c) == a.size  # plain decoding: L steps


def test_partial_recordings_merge_into_one_file_in_prompt_order(pair, tmp_path):
    rt = _record_traces()
    target, draft = pair
    prompts = [{"id": f"{t}-{i}", "task": t, "split": rt.split_of(i), "ids": [1, 2, 3 + i]}
               for t in ("code", "chat") for i in range(2)]
    for T in (0, 1):
        rt.main(["--quick", "--text-temps", str(T), "--out", str(tmp_path / f"p{T}.json")],
                models=(target, draft, None, prompts))
    rt.main(["--merge", str(tmp_path / "p1.json"), str(tmp_path / "p0.json"),
             "--out", str(tmp_path / "all.json")])
    R = tr.load_traces(tmp_path / "all.json")
    assert [(r["id"], r["text_temperature"]) for r in R["prompts"]] == [
        (f"{t}-{i}", T) for t in ("code", "chat") for i in range(2) for T in (0, 1)]
    assert len(R["provenance"]["parts"]) == 2
