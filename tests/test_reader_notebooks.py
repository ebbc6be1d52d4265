"""The reader notebooks (``notebooks/``, what Colab opens) are plain Markdown + LaTeX.

Proves, without a build, that every chapter has a reader notebook; that no MyST syntax
survives in it (no roles, no directive fences, no ``:label:`` lines, no ``$$ (label)``
suffixes); that its code cells are the chapter's code cells, unchanged and in order, with
the Colab install cell first; and that every exercise is numbered and every solution sits
in a collapsed ``<details>`` cell. Whether they are *up to date* with the sources is
checked after the build, in ``tests/site/test_reader_notebooks.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from scriptload import load_script

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
READER = REPO / "notebooks"
CHAPTERS = sorted(p.name for p in BOOK.glob("[0-9][0-9]_*.ipynb"))

#: MyST constructs that must not reach a reader: a role ``{name}`text```, a directive fence
#: (```{name} or :::{name}), an option line (``:label: x``) and an equation label suffix.
RAW_MYST = {
    "role": re.compile(r"\{[a-zA-Z][\w:-]*\}`"),
    "directive fence": re.compile(r"^\s*(`{3,}|:{3,})\{[\w:-]+\}", re.M),
    "option line": re.compile(r"^:(label|class|name|nonumber|tags):", re.M),
    "equation label": re.compile(r"\$\$\s*\([\w:-]+\)"),
}


def raw_myst(text: str) -> list[str]:
    """Names of the MyST constructs found in ``text`` (empty when it reads as Markdown)."""
    return [name for name, rx in RAW_MYST.items() if rx.search(text)]


def test_raw_myst_detector_catches_each_construct():
    assert raw_myst("see {eq}`ch5-x` here") == ["role"]
    assert raw_myst("```{prf:theorem} T\n:label: ch5-t\n") == ["directive fence", "option line"]
    assert raw_myst("$$\nx\n$$ (ch5-eq)") == ["equation label"]
    assert raw_myst("**Theorem 5.1 (T).** $x^2$ and `code` and [(5.1)](https://x/#e)") == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_chapter_has_a_reader_notebook(name):
    assert (READER / name).is_file(), f"notebooks/{name} missing: run `make reader-notebooks`"


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_notebook_has_no_raw_myst(name):
    nb = nbformat.read(READER / name, as_version=4)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown":
            found = raw_myst(c.source)
            assert not found, f"notebooks/{name} cell {i}: raw MyST ({found}):\n{c.source[:400]}"


def _without_colab_title(cell) -> str:
    """A code cell's source; a Colab form cell (``cellView: form``) without its ``#@title``
    first line, which the reader notebook adds so that Colab hides the cell."""
    src = cell.source
    if cell.metadata.get("cellView") == "form" and src.startswith("#@title"):
        return src.partition("\n")[2]
    return src


def _filled(source: str) -> str:
    """A chapter's code cell as its reader notebook carries it: the install cell's repository
    placeholders filled in from ``_config.yml`` (``scripts/sphinx_specmath_repository.py``)."""
    mod = load_script("sphinx_specmath_repository")
    return mod.fill(source, *mod.read_repository(REPO))


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_code_cells_are_the_chapters_code_cells_unchanged(name):
    src = nbformat.read(BOOK / name, as_version=4)
    nb = nbformat.read(READER / name, as_version=4)
    code = [_without_colab_title(c) for c in nb.cells if c.cell_type == "code"]
    # solutions' code is shown inside their <details> cell, not as code cells
    solution_code = "\n".join(c.source for c in nb.cells if "solution" in c.metadata.get(
        "tags", []))
    want = [_filled(c.source) for c in src.cells if c.cell_type == "code"]
    kept = [s for s in want if s in code]
    assert kept == code, f"notebooks/{name}: code cells differ from book/{name}"
    for s in want:
        if s not in code:
            assert s.strip() in solution_code, f"notebooks/{name}: a code cell is lost:\n{s}"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "google.colab" in first.source, "the Colab install cell must be the first code cell"
    assert all(not c.outputs for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", CHAPTERS)
def test_exercises_are_numbered_and_solutions_collapsed(name):
    src = nbformat.read(BOOK / name, as_version=4)
    nb = nbformat.read(READER / name, as_version=4)
    md = "\n".join(c.source for c in src.cells if c.cell_type == "markdown")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", md)
    chapter = int(name[:2])
    heads = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    for i, label in enumerate(labels, start=1):
        cell = next((c for c in heads if f'<a id="{label}"></a>' in c.source), None)
        assert cell is not None, f"notebooks/{name}: exercise {label} missing"
        # numbered as on the site: 5.1, 5.2, … in the chapters; 1, 2, … in the preface
        number = f"{chapter}.{i}" if chapter else f"{i}"
        assert f"**Exercise {number} (" in cell.source or f"**Exercise {number}.**" in \
            cell.source, cell.source[:200]
    sols = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    assert len(sols) == md.count("{solution-start}")
    for c in sols:
        assert c.source.startswith("<details>") and c.source.rstrip().endswith("</details>")


# ---- sources and the translator's pieces that need no build ---------------------------------

@pytest.mark.parametrize("name", CHAPTERS)
def test_no_chapter_wraps_an_equation_reference_in_parentheses(name):
    """{eq} already prints "(2.1)"; "({eq}`x`)" printed "((2.1))" (issue 15 item 6)."""
    md = (BOOK / "md" / name.replace(".ipynb", ".md")).read_text(encoding="utf-8")
    hits = [ln.strip() for ln in md.splitlines() if re.search(r"\(\s*\{eq\}`[^`]*`\s*\)", ln)]
    assert not hits, f"book/md/{name}: write {{eq}}`label`, not ({{eq}}`label`): {hits}"


def _translator():
    return load_script("sphinx_specmath_notebooks")


def test_live_values_are_marked_once_per_sentence_at_its_end():
    tr = _translator()
    m, note = tr._LIVE_MARK, tr.LIVE_NOTE
    text = (f"It needed 9{m} passes, the plain loop 24, and 2.67{m} tokens over 9{m} "
            f"iterations. Sampling works the same way; took 3.2{m} s:")
    out = tr.mark_live_sentences(text)
    assert out == (f"It needed 9 passes, the plain loop 24, and 2.67 tokens over 9 "
                   f"iterations{note}. Sampling works the same way; took 3.2 s{note}:")
    assert out.count(note) == 2 and m not in out
    # a sentence that already names the build machine gets no note
    said = tr.mark_live_sentences(f"The chapter ran in 95.1{m} s on the build machine.")
    assert said == "The chapter ran in 95.1 s on the build machine."
    assert tr.mark_live_sentences("No live value here.") == "No live value here."


def test_only_values_measured_on_the_build_machine_have_live_glue_keys():
    """A ``_live_`` key marks a measured value: never a constant (N_LIVE, K_LIVE, …)."""
    consts = []
    for md in sorted((BOOK / "md").glob("[0-9][0-9]_*.md")):
        for key, value in re.findall(r'glue\("(\w*_live_\w*)",\s*([^,)]+)',
                                     md.read_text(encoding="utf-8")):
            if re.fullmatch(r"[A-Z][A-Z0-9_]*|[\d.e+-]+", value.strip()):
                consts.append(f"{md.name}: {key} = {value}")
    assert not consts, "constants glued under _live_ keys: " + "; ".join(consts)
