"""The student edition (`make student`, scripts/make_student.py).

The student edition is built from the reader notebooks (``notebooks/``), so exercise
statements show their numbers. Proves that no solution survives (checked against an
independent reading of the MyST sources: no line of solution text, no solution code, no
collapsed solution cell), that no MyST syntax is left, that every exercise statement and
the checker calls it names are kept, that outputs are cleared, and that each student
notebook still runs, in a fresh kernel, up to its first exercise.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from scriptload import student_edition

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
READER = REPO / "notebooks"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
CHAPTER_PARAMS = [p.name for p in CHAPTERS] or [
    pytest.param("-", marks=pytest.mark.skip(reason="no chapter notebooks yet"))]


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    return student_edition(tmp_path_factory, READER)


def _solution_parts(nb) -> tuple[list[str], list[str], str]:
    """(solution code cells, solution text lines, text outside solutions) — an independent
    reading: a cell is inside a solution when the last marker before it was a start."""
    code, text, outside = [], [], []
    inside = False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            (code if inside else outside).append(cell.source)
            continue
        for line in cell.source.split("\n"):
            if "{solution-start}" in line:
                inside = True
            elif "{solution-end}" in line:
                inside = False
            (text if inside else outside).append(line)
    return code, text, "\n".join(outside)


@pytest.mark.parametrize("name", CHAPTER_PARAMS)
def test_no_solution_survives_in_the_student_edition(student_dir, name):
    original = nbformat.read(BOOK / name, as_version=4)
    student = nbformat.read(student_dir / name, as_version=4)
    nbformat.validate(student)
    everything = "\n".join(c.source for c in student.cells)
    for marker in ("{solution-start}", "{solution-end}", "{solution}", "<details>",
                   "Solution to Exercise"):
        assert marker not in everything, f"{name}: {marker} left in the student edition"
    assert not [c for c in student.cells if "solution" in c.metadata.get("tags", [])]
    from test_reader_notebooks import raw_myst

    for c in student.cells:
        if c.cell_type == "markdown":
            assert not raw_myst(c.source), f"{name}: raw MyST in the student edition"
    code, text, outside = _solution_parts(original)
    for src in code:
        if src.strip():
            assert src.strip() not in everything, f"{name}: solution code survived:\n{src}"
    for line in text:
        s = line.strip()
        if len(s) >= 25 and s not in outside:
            assert s not in everything, f"{name}: solution text survived: {s!r}"


@pytest.mark.parametrize("name", CHAPTER_PARAMS)
def test_exercises_and_their_checker_calls_are_kept(student_dir, name):
    original = nbformat.read(BOOK / name, as_version=4)
    student = nbformat.read(student_dir / name, as_version=4)
    src_o = "\n".join(c.source for c in original.cells if c.cell_type == "markdown")
    src_s = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    exercises = re.findall(r"\{exercise(?:-start)?\}.*", src_o)
    statements = [c for c in student.cells if "exercise" in c.metadata.get("tags", [])]
    assert len({re.search(r'<a id="([^"]+)"', c.source).group(1) for c in statements
                if '<a id="' in c.source}) == len(exercises)
    _, _, outside = _solution_parts(original)
    keys = set(re.findall(r'check\("(ch\d+-ex\d+)"', outside))
    for key in keys:
        assert f'check("{key}"' in src_s, f"{name}: the checker call for {key} was lost"
    n_solutions = src_o.count("{solution-start}")
    placeholders = [c for c in student.cells if c.cell_type == "code"
                    and c.source.startswith("# Your solution")]
    assert len(placeholders) == n_solutions


@pytest.mark.parametrize("name", CHAPTER_PARAMS)
def test_outputs_are_cleared(student_dir, name):
    student = nbformat.read(student_dir / name, as_version=4)
    for cell in student.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "widgets" not in student.metadata


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTER_PARAMS)
def test_student_notebook_runs_up_to_its_first_exercise(student_dir, name):
    from nbclient import NotebookClient

    student = nbformat.read(student_dir / name, as_version=4)
    first = next((i for i, c in enumerate(student.cells)
                  if "exercise" in c.metadata.get("tags", [])), len(student.cells))
    assert first < len(student.cells), f"{name} has no exercise"
    student.cells = student.cells[:first]
    client = NotebookClient(student, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(READER)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
