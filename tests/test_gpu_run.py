"""benchmarks/gpu_run.py --smoke: the GPU script's every section, on CPU with tiny configs.

The GPU machine is lent rarely; this keeps the one-command GPU run from rotting between
runs (issue 12). Timings from the smoke run mean nothing and are not checked; structure,
labels, provenance and the exactness verdicts are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]


def _gpu_run():
    from tinymodels import load_benchmark
    return load_benchmark("gpu_run")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "gpu_run.json"
    threads = torch.get_num_threads()
    try:
        _gpu_run().main(["--smoke", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    return json.loads(out.read_text())


def test_smoke_run_records_provenance_and_labels_random_weights(smoke):
    prov = smoke["provenance"]
    for key in ("date_utc", "torch", "transformers", "dtype", "device", "weights"):
        assert key in prov
    assert prov["smoke"] is True and "random" in prov["weights"]
    assert "random weights" in smoke["cost"]["label"]
    assert smoke["replay"]["label"].startswith("REPLAYED")


def test_smoke_run_every_section_finishes_without_error(smoke):
    for sec in ("exactness", "cost", "replay", "overhead"):
        assert "error" not in smoke[sec], smoke[sec].get("traceback", smoke[sec])
        assert not smoke[sec].get("skipped"), smoke[sec].get("skipped")
        assert not smoke[sec].get("errors"), smoke[sec].get("errors")


def test_smoke_exactness_holds_on_every_path(smoke):
    paths = smoke["exactness"]["paths"]
    assert set(paths) >= {"eager", "device", "static", "static+graphs"}
    for name, r in paths.items():
        assert "error" not in r, (name, r.get("traceback"))
        assert r["greedy_identity"] is True and r["greedy_rejections"] > 0, name
        # the smoke draws few samples: only that a G-test ran and did not reject at 1e-3
        assert r["sampling_passes"] in (True, None), (name, r)


def test_smoke_cost_side_gives_c_and_V_for_k_0_to_8(smoke):
    for mode, m in smoke["cost"]["modes"].items():
        assert m["c"] > 0, mode
        assert sorted(int(k) for k in m["V"]) == list(range(9))
        assert m["V"]["0"] == pytest.approx(1.0)


def test_smoke_replay_follows_the_recorded_pattern_and_predicts(smoke):
    rep = smoke["replay"]
    assert rep["runs"] and not rep["skipped"]
    rows = [r for r in rep["summary"] if r["task"] == "all"]
    assert rows and all("predicted_with_V" in r and r["measured_speedup"] > 0 for r in rows)
    # E[N] from the agreement strings: between 1 and k + 1
    assert all(1 <= r["E_N"] <= r["k"] + 1 for r in rows)


def test_smoke_overhead_compares_our_loop_with_assisted_generation(smoke):
    loops = smoke["overhead"]["loops"]
    assert {"hf_assisted", "ours_eager", "ours_device"} <= set(loops)
    for name, r in loops.items():
        assert r["iterations"] >= 1 and r["per_iteration_s"] > 0, name


GPU_COMMAND = "PYTHONPATH=. python3 benchmarks/gpu_run.py --out $OUT/gpu_run.json"


def test_the_exact_gpu_command_stands_in_the_script_and_in_the_readme():
    assert GPU_COMMAND in (ROOT / "benchmarks" / "gpu_run.py").read_text()
    assert GPU_COMMAND in (ROOT / "README.md").read_text()


def _stub_exactness(*args, **kw):
    return {"paths": {"eager": {"greedy_identity": True, "greedy_rejections": 1,
                                "sampling_passes": True}}}


def test_run_cut_short_keeps_the_sections_it_finished_and_prints_its_plan_first(
        tmp_path, monkeypatch, capsys):
    # The hard stop raises OutOfTime wherever the run is: here in section 2. Section 1's
    # result must be in the JSON, section 2 marked stopped, nothing after it run.
    gr = _gpu_run()

    def stop(*args, **kw):
        raise gr.OutOfTime("hard stop")
    monkeypatch.setattr(gr, "exactness", _stub_exactness)
    monkeypatch.setattr(gr, "cost_side", stop)
    out = tmp_path / "cut.json"
    gr.main(["--smoke", "--out", str(out)])
    saved = json.loads(out.read_text())
    assert saved["exactness"]["paths"]["eager"]["greedy_identity"] is True
    assert "stopped" in saved["cost"] and saved["stopped"].startswith("hard stop")
    assert "replay" not in saved and "overhead" not in saved
    printed = capsys.readouterr().out
    assert printed.startswith("plan") and "hard stop at 540" in printed
    assert set(saved["plan"]) >= {"1 exactness", "2 cost", "3 replay", "4 overhead"}


def test_the_hard_stop_timer_ends_a_section_that_runs_too_long(tmp_path, monkeypatch):
    import time

    gr = _gpu_run()

    def slow(*args, **kw):
        time.sleep(30)
        return _stub_exactness()
    monkeypatch.setattr(gr, "exactness", slow)
    out = tmp_path / "cut.json"
    t0 = time.perf_counter()
    gr.main(["--smoke", "--out", str(out), "--hard-stop-s", "2"])
    assert time.perf_counter() - t0 < 20
    saved = json.loads(out.read_text())
    assert "stopped" in saved["exactness"] and "stopped" in saved
