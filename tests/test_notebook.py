"""specmath.notebook: glue and md_table, the helpers every chapter imports."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_load_result_reads_the_committed_file_and_rejects_bad_names():
    import pytest

    from specmath.notebook import load_result

    R = load_result("block_cpu.json", download=False)
    assert "provenance" in R
    for bad in ("block_cpu", "../x.json", 3):
        with pytest.raises(ValueError, match="name"):
            load_result(bad)
    with pytest.raises(FileNotFoundError):
        load_result("no_such_result.json", download=False)
