"""The chapters keep the course's promises: sources in sync, no typed numbers in prose,
exercises with hidden executed solutions, a Colab cell, captioned figures, no outputs."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
SOURCES = sorted((BOOK / "md").glob("[0-9][0-9]_*.md"))
NOTEBOOKS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def _ids(paths):
    return [p.stem for p in paths]


def _read_md_as_notebook(path: Path):
    import jupytext

    return jupytext.read(path)


@pytest.mark.parametrize("md", SOURCES, ids=_ids(SOURCES))
def test_markdown_source_and_committed_notebook_are_in_sync(md):
    ipynb = BOOK / (md.stem + ".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `make notebooks` and commit it"
    a = _read_md_as_notebook(md)
    b = nbformat.read(ipynb, as_version=4)
    cells_a = [(c.cell_type, c.source.strip()) for c in a.cells]
    cells_b = [(c.cell_type, c.source.strip()) for c in b.cells]
    assert cells_a == cells_b, f"{ipynb.name} is out of date with {md.name}: run `make notebooks`"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_notebook_has_no_outputs(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.get("outputs"), f"{nb_path.name} has committed outputs"
            assert c.get("execution_count") is None


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_first_code_cell_installs_specmath_only_in_colab_and_is_hidden(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "google.colab" in first.source
    assert "remove-cell" in first.metadata.get("tags", [])


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
_CODE = re.compile(r"`[^`\n]*`")
_DIRECTIVE_LINE = re.compile(r"^\s*(```|:::|:[a-z-]+:|\(|\[\^)")
_LINK = re.compile(r"\]\([^)]*\)|<[^>]+>")
# Numbered references to a paper's parts ("Theorem 3.8", "Appendix A.1") and versions are
# names, not results.
_NAMED = re.compile(r"(Theorem|Corollary|Lemma|Proposition|Section|Table|Figure|Eq\.|Equation|"
                    r"Appendix|Algorithm|Definition|arXiv:?|version|v)\s?[A-Z]?\d+(\.\d+)*", re.I)
# A decimal number, a percentage or a multiplier ("2.5", "25%", "3×") in running prose is
# a typed result; glue it instead. Integers alone (chapter numbers, "two ways") are fine.
_TYPED = re.compile(r"(?<![\w.])\d+\.\d+|\d+\s?%|\d+(\.\d+)?\s?×")


def _prose_lines(nb):
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        text = _MATH.sub(" ", c.source)
        for line in text.splitlines():
            if _DIRECTIVE_LINE.match(line) or line.lstrip().startswith("|"):
                # tables of published figures are quoted data, checked by the table's code
                continue
            line = _ROLE.sub(" ", line)
            line = _CODE.sub(" ", line)
            line = _LINK.sub(" ", line)
            line = _NAMED.sub(" ", line)
            yield line


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_prose_has_no_typed_decimal_numbers_percentages_or_multipliers(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    offenders = [ln.strip() for ln in _prose_lines(nb) if _TYPED.search(ln)]
    assert not offenders, "typed numbers in prose (glue them):\n" + "\n".join(offenders)


CHAPTERS = [p for p in NOTEBOOKS if not p.stem.startswith("00_")]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_chapter_ends_with_at_least_four_exercises_with_hidden_executed_solutions(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    exercises = re.findall(r"```\{exercise\}", text)
    starts = re.findall(r"```\{solution-start\}[^\n]*\n:class: dropdown", text)
    assert len(exercises) >= 4, f"{nb_path.name}: {len(exercises)} exercises"
    assert len(starts) >= 4, f"{nb_path.name}: solutions must be collapsed dropdowns"
    # each solution contains executed code: a code cell between start and end markers
    inside, code_in_solution = False, 0
    for c in nb.cells:
        if c.cell_type == "markdown" and "{solution-start}" in c.source:
            inside = True
        if inside and c.cell_type == "code":
            code_in_solution += 1
        if c.cell_type == "markdown" and "{solution-end}" in c.source:
            inside = False
    assert code_in_solution >= 4


@pytest.mark.parametrize("nb_path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_has_a_captioned_figure_with_alt_text_and_glued_numbers(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    figs = [c for c in nb.cells if c.cell_type == "code"
            and c.metadata.get("mystnb", {}).get("figure", {}).get("caption")]
    assert figs, f"{nb_path.name} has no captioned figure"
    assert all(c.metadata["mystnb"].get("image", {}).get("alt") for c in figs), \
        f"{nb_path.name}: every captioned figure needs alt text"
    text = "\n".join(c.source for c in nb.cells)
    assert "{glue:text}" in text or "{glue:}" in text or "{glue}" in text


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_code_lines_are_at_most_88_characters(nb_path):
    """The site clips longer code lines (issue 9), and so do narrow notebook views."""
    nb = nbformat.read(nb_path, as_version=4)
    long = [ln for c in nb.cells if c.cell_type == "code"
            for ln in c.source.splitlines() if len(ln) > 88]
    assert not long, f"{nb_path.name}: code lines over 88 characters:\n" + "\n".join(long)
