"""No executed cell that ends in ``glue(...)`` shows a result (issue 15, item 8).

``specmath.notebook.glue`` returns its value (so ``x = glue("key", f(...))`` both computes
and glues); a cell whose last statement is a bare ``glue(...)`` would echo that value under
the code, on the site and in the notebooks (``0.05999999999999994``). Such cells end with
``;``. Proved statically on every chapter here; ``tests/test_student_journey.py`` executes
every chapter (as the student edition) and fails on a glue cell that shows a result.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


def ends_in_echoing_glue(source: str) -> bool:
    """Whether the cell's last statement is a bare ``glue(...)`` that IPython would echo."""
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith("%"))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return False
    call = tree.body[-1].value
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "glue"):
        return False
    if any(k.arg == "display" for k in call.keywords):
        return False  # an explicit display is meant to show
    return not code.rstrip().endswith(";")


def test_the_detector_catches_a_bare_glue_and_accepts_a_silenced_one():
    assert ends_in_echoing_glue('x = 1\nglue("a", x)')
    assert ends_in_echoing_glue('glue("a", 1); glue("b", 2)')
    assert not ends_in_echoing_glue('glue("a", 1); glue("b", 2);')
    assert not ends_in_echoing_glue('x = glue("a", 1)')
    assert not ends_in_echoing_glue('glue("a", 1)\nprint(2)')
    assert not ends_in_echoing_glue('glue("a", 1, display=True)')


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_chapter_cell_ends_in_a_bare_glue(path):
    nb = nbformat.read(path, as_version=4)
    bad = [c.source.splitlines()[-1] for c in nb.cells
           if c.cell_type == "code" and ends_in_echoing_glue(c.source)]
    assert not bad, f"{path.name}: end these cells with ';' so they show no value: {bad}"
