"""specmath.notebook: glue and md_table, the helpers every chapter imports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import specmath
from specmath.notebook import glue, md_table


def test_md_table_renders_header_rule_and_formatted_rows():
    t = md_table(["k", "E[N]", "note"], [[np.int64(1), np.float64(1.8), "a|b"],
                                         [2, 2.44, None]], fmt=".2f")
    assert t.data.splitlines() == [
        "| k | E[N] | note |",
        "|---|---|---|",
        "| 1 | 1.80 | a\\|b |",
        "| 2 | 2.44 | None |",
    ]


def test_md_table_without_fmt_uses_str_as_chapter_5_did():
    assert md_table(["x"], [[0.5]]).data.splitlines()[-1] == "| 0.5 |"


@pytest.mark.parametrize(("args", "match"), [
    (([], []), r"header must name at least one column"),
    ((["a", "b"], [[1]]), r"rows\[0\] must have 2 cells"),
    ((["a"], [[1.0]], "zz"), r"fmt must be a format spec"),
])
def test_md_table_bad_input_raises_value_error_naming_argument(args, match):
    with pytest.raises(ValueError, match=match):
        md_table(*args)


def test_glue_returns_plain_python_numbers():
    v = glue("test_value", np.float32(0.25))
    assert type(v) is float and v == 0.25
    assert type(glue("test_int", np.int64(3))) is int


def test_load_result_reads_the_packaged_file_and_rejects_bad_names():
    import pytest

    from specmath.notebook import RESULTS_DIR, load_result

    assert RESULTS_DIR == Path(specmath.__file__).parent / "data" / "results"
    R = load_result("block_cpu.json")
    assert "provenance" in R
    for bad in ("block_cpu", "../x.json", 3):
        with pytest.raises(ValueError, match="name"):
            load_result(bad)


def test_a_missing_result_is_an_error_naming_the_file_and_how_to_get_it_never_none(
        monkeypatch, tmp_path):
    import pytest

    import specmath.notebook as nb
    from specmath import batching, traces
    from specmath.plots import realmodel as rm

    monkeypatch.setattr(nb, "RESULTS_DIR", tmp_path)  # an installation without the files
    loaders = [(lambda: nb.load_result("block_cpu.json"), "block_cpu.json", "block_realmodel"),
               (lambda: rm.load_results("cpu"), "realmodel_cpu.json", "benchmarks/realmodel.py"),
               (lambda: traces.load_traces(), "traces_cpu.json", "record_traces"),
               (lambda: batching.load_batch_cost(), "batch_cpu.json", "batch_cost")]
    for load, name, script in loaders:
        with pytest.raises(FileNotFoundError) as err:
            load()
        msg = str(err.value)
        assert name in msg and script in msg and "reinstall specmath" in msg, msg
        assert "book/results" not in msg and "site-packages/book" not in msg
    assert not nb.has_result("realmodel_gpu.json")


def test_every_reader_of_recorded_results_uses_the_one_location_and_no_network():
    """specmath reads recorded results only through notebook.RESULTS_DIR: no other module
    names the folder, builds a path to it or fetches anything over the network."""
    import re

    pkg = Path(specmath.__file__).parent
    for f in sorted(pkg.rglob("*.py")):
        src = f.read_text(encoding="utf-8")
        rel = f.relative_to(pkg).as_posix()
        if rel in ("notebook.py", "traces.py", "batching.py", "plots/realmodel.py"):
            assert "urllib" not in src and "urlopen" not in src, f"{rel} reaches for the network"
        if rel != "notebook.py":
            assert not re.search(r'"results"|book/results', src), (
                f"{rel} builds its own path to the recorded results; use "
                f"specmath.notebook.load_result / result_path")
    for name in ("batch_cpu", "block_cpu", "lossy_cpu", "multidraft_cpu", "realmodel_cpu",
                 "traces_cpu"):
        assert (pkg / "data" / "results" / f"{name}.json").is_file(), name
