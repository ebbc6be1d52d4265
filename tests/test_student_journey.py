"""The student journey, end to end (issue 15, "Student journey").

Builds the student edition (``scripts/make_student.py``) from the reader notebooks, then,
for every chapter, runs the student notebook top to bottom in a fresh kernel from an empty
folder outside the repository, answering every exercise where its placeholder stands,
through the checker call the placeholder names (``check("ch5-ex3", [c_low, c_high])``,
the statement's own variables): the instructor's value must print ✅; a wrong number must
print a ❌ message, never a traceback. A ``NameError`` for ``check`` (issue 15, item 3) or
any other error fails the test with the cell; so does a cell ending in ``glue(...)`` that
shows a result (item 8).

The reader notebooks come from ``notebooks/`` (set ``SPECMATH_READER_DIR`` to test a fresh
build, e.g. ``_build/jupyter/book``). Chapter 7 runs its live model cells on the offline
pair, so it needs ``make models``; it is the slowest notebook (about two minutes on the
2-core build machine, the others take 5–40 s each).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from scriptload import load_script, student_edition

REPO = Path(__file__).resolve().parents[1]
READER = Path(os.environ.get("SPECMATH_READER_DIR", REPO / "notebooks"))
CHAPTERS = sorted(p.name for p in READER.glob("[0-9][0-9]_*.ipynb"))
PLACEHOLDER = re.compile(
    r'^# Your solution to exercise (ch\d+-ex\d+)\b.*\n# check\("\1", (.+)\)\s*$', re.S)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _maker():
    return load_script("make_student")


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    return student_edition(tmp_path_factory, READER)


def answer_cell(key: str, arg: str) -> str:
    """A cell that answers exercise ``key`` as a student would: sets the statement's
    variables (first to the instructor's value, then to a wrong one) and runs the
    placeholder's own checker call, ``check(key, arg)``."""
    names = NAME.findall(arg)
    is_list = arg.strip().startswith("[")
    assert names and (is_list or len(names) == 1), f"{key}: cannot answer {arg!r}"
    return f"""
import numpy as _np
from specmath.exercises import _REGISTRY as _REG, exercise_keys as _keys
_keys()  # loads every chapter's checkers
_truth = _np.atleast_1d(_np.asarray(_REG[{key!r}].compute(), dtype=float))
_names = {names!r}
for _values, _want in ((_truth, True), (_truth * 1.5 + 1.0, False)):
    if {is_list!r}:
        assert len(_names) == _values.size, "the statement names {len(names)} values"
        for _n, _v in zip(_names, _values):
            globals()[_n] = float(_v)
    else:
        globals()[_names[0]] = _values.tolist() if _values.size > 1 else float(_values[0])
    _ok = check({key!r}, {arg})
    assert _ok is _want, ({key!r}, _want)
"""


def test_answer_cell_sets_the_statements_variables():
    src = answer_cell("ch5-ex3", "[c_low, c_high]")
    assert "check('ch5-ex3', [c_low, c_high])" in src
    assert "_names = ['c_low', 'c_high']" in src
    m = PLACEHOLDER.match('# Your solution to exercise ch5-ex4: compute `alpha`, then check '
                          'with\n# check("ch5-ex4", alpha)\n')
    assert m and m.groups() == ("ch5-ex4", "alpha")


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", CHAPTERS)
def test_student_notebook_runs_top_to_bottom_and_every_exercise_is_answered(
        student_dir, name, tmp_path):
    from nbclient import NotebookClient

    from specmath.exercises import exercise_keys

    nb = nbformat.read(student_dir / name, as_version=4)
    chapter = f"ch{int(name[:2])}-"
    answered = []
    for i, cell in enumerate(nb.cells):
        m = PLACEHOLDER.match(cell.source) if cell.cell_type == "code" else None
        if m:
            nb.cells[i] = nbformat.v4.new_code_cell(answer_cell(*m.groups()))
            nb.cells[i]["id"] = cell.get("id", f"a{i:03d}")
            answered.append(m.group(1))
    registered = [k for k in exercise_keys() if k.startswith(chapter)]
    assert sorted(answered) == sorted(registered), (
        f"{name}: placeholders name checker calls for {answered}, the chapter registers "
        f"{registered}")
    work = tmp_path / "empty"  # outside the repository, nothing in it
    work.mkdir()
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    client.execute()  # CellExecutionError (with the cell and traceback) on any error
    out = {k: "" for k in answered}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert not any(o.output_type == "error" for o in cell.outputs)
        for k in answered:
            if f"check({k!r}" in cell.source:
                out[k] += text
    # issue 15, item 8: no executed cell that ends in glue(...) shows a result
    for cell in nb.cells:
        if cell.cell_type == "code" and "glue(" in (cell.source.strip().splitlines() or [""])[-1]:
            shown = [o for o in cell.outputs if o.output_type == "execute_result"]
            assert not shown, f"{name}: a glue cell shows {shown[0]['data']}:\n{cell.source}"
    for k, text in out.items():
        assert f"✅ {k}: correct." in text, f"{name}: the instructor's value of {k}: {text}"
        assert f"❌ {k}:" in text, f"{name}: a wrong value of {k} got no message: {text}"
        assert "Traceback" not in text


def test_every_checked_exercise_statement_names_its_checker_call():
    """Each registered exercise's statement (book/md) names ``check("key", variables)`` with
    the variables the student edition's placeholder then names; the Exercises setup cell
    (not a solution) imports ``check``."""
    from specmath.exercises import exercise_keys

    statements, setup_imports = {}, {}
    for md in sorted((REPO / "book" / "md").glob("[0-9][0-9]_*.md")):
        text = md.read_text(encoding="utf-8")
        for m in re.finditer(r"```\{exercise\}[^\n]*\n:label: (\S+)\n(.*?)\n```", text, re.S):
            statements[m.group(1)] = m.group(2)
        section = re.split(r"^## [^\n]*[Ee]xercises\s*$", text, maxsplit=1, flags=re.M)
        assert len(section) == 2, f"{md.name}: no Exercises section"
        first_solution = section[1].find("{solution-start}")
        setup = section[1][:first_solution]
        setup_imports[md.name] = "from specmath.exercises import check" in setup
    missing = [k for k in exercise_keys() if k not in statements
               or _maker().checker_call(statements[k], k) is None]
    assert not missing, f"statements that name no checker call: {missing}"
    for k in exercise_keys():
        arg = _maker().checker_call(statements[k], k)
        assert NAME.findall(arg) and "..." not in arg, f"{k}: check({k!r}, {arg}) names no value"
    assert all(setup_imports.values()), (
        f"chapters whose Exercises setup does not import check: "
        f"{[n for n, ok in setup_imports.items() if not ok]}")
