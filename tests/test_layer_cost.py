"""Where a pass spends its CPU time (chapter 7, issue 16 / review N2): the layer-cost
benchmark (``benchmarks/layer_cost.py``, run in --quick mode on tiny in-process models)
and the committed ``layers_cpu.json`` the chapter reads, its claims recomputed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specmath import stats

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "specmath" / "data" / "results" / "layers_cpu.json"
PARTS = {"pass", "layer", "linears", "head", "hooked_pass"}
TD = ("target", "draft")


def _layer_weights(m: dict) -> int:
    """Weights of one Qwen2 decoder layer from its shapes: q, k, v (with biases), o, the
    three MLP matrices and two norms."""
    h, i, kv = m["hidden"], m["intermediate"], m["kv_heads"] * m["head_dim"]
    return (h * h + h) + 2 * (h * kv + kv) + h * h + 3 * h * i + 2 * h


def _check_bytes(m: dict, context: int) -> None:
    b, el = m["bytes"], m["bytes_per_weight"]
    assert b["layer_weights"] == el * _layer_weights(m)
    assert b["layer_kv_cache"] == el * 2 * (context + 1) * m["kv_heads"] * m["head_dim"]
    assert b["layer"] == b["layer_weights"] + b["layer_kv_cache"]
    assert b["linears"] == b["layer_weights"] - el * 2 * m["hidden"]   # minus the norms
    assert b["head"] == el * (m["vocab"] * m["hidden"] + m["hidden"])  # output + norm
    assert b["pass"] == m["layers"] * b["layer"] + b["head"] + el * m["hidden"]


def test_layer_cost_quick_on_tiny_models_times_every_part_and_replays_layers_exactly(
        tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch
    from tinymodels import load_benchmark, tiny_qwen, torch_threads

    lc = load_benchmark("layer_cost")
    out = tmp_path / "l.json"
    with torch_threads():
        R = lc.main(["--quick", "--out", str(out)],
                    models=(tiny_qwen(0), tiny_qwen(1), torch.tensor([[1, 2, 3, 4, 5]])))
    S = json.loads(out.read_text())
    assert S["quick"] and S["blocks"] == 3 and R["context_tokens"] == 5
    for r in TD:
        m = S["models"][r]
        # each layer called alone on its captured inputs gives what the pass gave
        assert m["layer_replay_max_rel_error"] < 1e-12
        assert not m["tied_embeddings"]
        _check_bytes(m, S["context_tokens"])
        assert set(S["cpu_s"][r]) == PARTS
        assert all(len(v) == 3 and min(v) > 0 for v in S["cpu_s"][r].values())
        assert len(S["wall_s"][r]["pass"]) == 3
        assert S["summary"][r]["head"]["bytes"] == m["bytes"]["head"]
        ip = S["in_pass_cpu_s"][r]
        assert np.shape(ip["layers_s"]) == (3, m["layers"]) and len(ip["head_s"]) == 3
        # the parts timed inside a pass fit inside that pass
        for lays, head, whole in zip(ip["layers_s"], ip["head_s"],
                                     S["cpu_s"][r]["hooked_pass"], strict=True):
            assert sum(lays) + head <= whole


def test_layer_cost_crop_leaves_every_layer_of_the_cache_at_the_prefix():
    pytest.importorskip("transformers")
    import torch
    from tinymodels import load_benchmark, tiny_qwen

    lc = load_benchmark("layer_cost")
    parts = lc.Parts(tiny_qwen(0), torch.tensor([[1, 2, 3, 4]]), seed=0)
    for part in ("layer", "linears", "head", "pass", "hooked_pass"):
        for j in range(3):
            parts.time(part, j)
            assert [lay.get_seq_length() for lay in parts.cache.layers] == [4, 4]


def _load():
    return json.loads(RESULT.read_text())


def test_committed_layer_result_has_provenance_the_pair_and_every_part_per_block():
    R = _load()
    prov = R["provenance"]
    for field in ("date_utc", "device_name", "cpu_count", "torch", "transformers",
                  "dtype", "torch_threads", "loadavg_start", "loadavg_end", "clock",
                  "note", "elapsed_s"):
        assert field in prov
    assert not R["quick"] and prov["device"] == "cpu" and prov["torch_threads"] == 1
    assert prov["dtype"] == "float32" and prov["target"].endswith("1.5B-Instruct")
    assert prov["draft"].endswith("0.5B-Instruct") and R["blocks"] >= 60
    assert R["context_tokens"] == 55          # realmodel.py's code prompt
    for r in TD:
        m = R["models"][r]
        assert m["vocab"] == 151936    # the shared vocabulary: heads of one height
        assert m["layer_replay_max_rel_error"] < 1e-5
        _check_bytes(m, R["context_tokens"])
        assert all(len(v) == R["blocks"] for v in R["cpu_s"][r].values())
        assert np.shape(R["in_pass_cpu_s"][r]["layers_s"]) == (R["blocks"], m["layers"])
    assert (R["models"]["target"]["layers"], R["models"]["draft"]["layers"]) == (28, 24)


def _ci(x):
    return np.median(x), *stats.median_ci(x, 0.95)[:2]


def test_committed_layer_result_supports_the_chapter_claims():
    """Chapter 7's sentences on where the draft loses speed, recomputed from the file:
    c below the byte ratio; layers and head timed inside the pass rebuild c within the
    5 % tolerance, layers called alone do not (a draft layer alone costs more than in the
    pass); the draft's layers, head and bare matrix products all read fewer GB per CPU
    second, the head less so than the layers, the products as the layers."""
    R = _load()
    t = {r: {p: np.array(v) for p, v in R["cpu_s"][r].items()} for r in TD}
    b = {r: R["models"][r]["bytes"] for r in TD}
    L = {r: R["models"][r]["layers"] for r in TD}
    lay = {r: np.array(R["in_pass_cpu_s"][r]["layers_s"]).sum(axis=1) / L[r] for r in TD}
    head = {r: np.array(R["in_pass_cpu_s"][r]["head_s"]) for r in TD}
    c = t["target"]["pass"] / t["draft"]["pass"]
    assert _ci(c)[2] < b["target"]["pass"] / b["draft"]["pass"]

    def rebuilt(lay_, head_):
        return ((L["target"] * lay_["target"] + head_["target"])
                / (L["draft"] * lay_["draft"] + head_["draft"]) / c - 1)

    _, lo, hi = _ci(rebuilt(lay, head))
    assert -0.05 < lo and hi < 0.05
    alone = {r: t[r]["layer"] for r in TD}
    _, lo, hi = _ci(rebuilt(alone, {r: t[r]["head"] for r in TD}))
    assert lo < -0.05 and hi < 0
    assert _ci(alone["draft"] / lay["draft"])[1] > _ci(alone["target"] / lay["target"])[2]

    def slower(part, x):
        return _ci((b["draft"][part] / x["draft"]) / (b["target"][part] / x["target"]))

    r_lay, r_head = slower("layer", lay), slower("head", head)
    r_lin = slower("linears", {r: t[r]["linears"] for r in TD})
    assert max(r_lay[2], r_head[2], r_lin[2]) < 1
    assert r_head[1] > r_lay[2]
    assert r_lin[1] < r_lay[2] and r_lay[1] < r_lin[2]


def test_a_missing_layer_result_is_an_error_naming_the_script_that_records_it(
        monkeypatch, tmp_path):
    import specmath.notebook as nb

    monkeypatch.setattr(nb, "RESULTS_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="layer_cost.py"):
        nb.load_result("layers_cpu.json")


def test_committed_summary_is_the_medians_intervals_and_rates_of_the_stored_times():
    R = _load()
    for r in TD:
        ip = R["in_pass_cpu_s"][r]
        series = {**R["cpu_s"][r], "in_pass_layer": np.mean(ip["layers_s"], axis=1),
                  "in_pass_head": ip["head_s"]}
        assert set(R["summary"][r]) == set(series)
        for part, x in series.items():
            S = R["summary"][r][part]
            lo, hi, cov = stats.median_ci(x, 0.95)
            assert S["median_s"] == pytest.approx(np.median(x), rel=1e-12)
            assert S["interval_s"] == pytest.approx([lo, hi], rel=1e-12)
            assert S["coverage"] == pytest.approx(cov) and cov >= 0.95
            assert lo <= S["median_s"] <= hi
            assert S["gb_per_cpu_s"] == pytest.approx(S["bytes"] / S["median_s"] / 1e9)
            g_lo, g_hi = S["gb_per_cpu_s_interval"]
            assert g_lo <= S["gb_per_cpu_s"] <= g_hi
