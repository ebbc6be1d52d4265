"""Publish the reader notebooks: ``_build/jupyter/book/NN_*.ipynb`` → ``notebooks/``.

``make book`` runs the notebook builder (``scripts/sphinx_specmath_notebooks.py`` on top
of sphinx-tojupyter), which writes each chapter as plain CommonMark + LaTeX with the
site's numbers and values into ``_build/jupyter/book``. This script gives each one the
notebook-level metadata of its source (kernel, Colab accelerator) and a short header that
links the chapter's page on the website, and writes it to ``notebooks/`` (committed:
Colab opens notebooks from the repository, and the site's Colab buttons point there).

``--check`` writes nothing and exits 1 when a committed notebook differs from a fresh one,
ignoring only the values that depend on the machine that built the site (see
:func:`normalise`). ``tests/site/test_reader_notebooks.py`` runs the same comparison.

Usage: ``python scripts/reader_notebooks.py [--check]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
BUILT = REPO / "_build" / "jupyter" / "book"
SOURCES = REPO / "book"
OUT = REPO / "notebooks"

sys.path.insert(0, str(REPO / "scripts"))
from sphinx_specmath_notebooks import LIVE_NOTE, LIVE_PHRASES  # noqa: E402, F401

HEADER = ("> *This notebook is generated from the course's sources; the website version is "
          "[{title}]({url}). Run the cells in order; numbers quoted in the text are the "
          "website's, computed when it was built.*")

_SENTENCE = re.compile(r"(?<=[.!?])(?=\s)")
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _blank_live(text: str) -> str:
    """Blank the numbers of every sentence marked as the build machine's (``LIVE_NOTE``)."""
    if not any(ph in text for ph in LIVE_PHRASES):
        return text
    return "".join(_NUMBER.sub("…", s) if any(ph in s for ph in LIVE_PHRASES) else s
                   for s in _SENTENCE.split(text))


def normalise(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """The cells as (type, source), with machine-dependent glued values blanked out.

    The reader notebook marks each sentence with values from the machine that built the
    site once (``LIVE_NOTE``, or the sentence names the build machine itself); the numbers
    in those sentences, and only there, are ignored.
    """
    return [(c.cell_type, _blank_live(c.source) if c.cell_type == "markdown" else c.source)
            for c in nb.cells]


def _site_url(name: str) -> str:
    import yaml

    cfg = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    return cfg["html"]["baseurl"].rstrip("/") + "/book/" + Path(name).stem + ".html"


def reader_notebook(built: Path) -> nbformat.NotebookNode:
    """The publishable reader notebook for one built chapter."""
    nb = nbformat.read(built, as_version=4)
    src = nbformat.read(SOURCES / built.name, as_version=4)
    nb.metadata = nbformat.NotebookNode(
        {k: v for k, v in src.metadata.items() if k not in ("jupytext", "widgets")})
    title = next((c.source.splitlines()[0].lstrip("# ").strip() for c in nb.cells
                  if c.cell_type == "markdown" and c.source.startswith("# ")), built.stem)
    first = nb.cells[0] if nb.cells else None
    note = nbformat.v4.new_markdown_cell(HEADER.format(title=title, url=_site_url(built.name)))
    if first is not None and first.cell_type == "markdown" and first.source.startswith("# "):
        head, _, rest = first.source.partition("\n")
        cells = [nbformat.v4.new_markdown_cell(head), note]
        if rest.strip():
            cells.append(nbformat.v4.new_markdown_cell(rest.strip("\n")))
        nb.cells = cells + nb.cells[1:]
    else:
        nb.cells.insert(0, note)
    for i, c in enumerate(nb.cells):
        c["id"] = f"c{i:03d}"   # stable ids: regenerating changes nothing
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbformat.validate(nb)
    return nb


def chapters(folder: Path) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with notebooks/, write nothing")
    args = ap.parse_args(argv)
    built = chapters(BUILT)
    if not built:
        print(f"no built notebooks in {BUILT}: run `make book` first", file=sys.stderr)
        return 2
    stale = []
    OUT.mkdir(exist_ok=True)
    for path in built:
        nb = reader_notebook(path)
        target = OUT / path.name
        if args.check:
            if not target.exists() or normalise(nbformat.read(target, 4)) != normalise(nb):
                stale.append(target.name)
            continue
        nbformat.write(nb, target)
        print(f"reader notebook: {target.relative_to(REPO)}")
    extra = {p.name for p in chapters(OUT)} - {p.name for p in built}
    if args.check and (stale or extra):
        print("stale reader notebooks (run `make reader-notebooks` and commit notebooks/): "
              + ", ".join(sorted(stale) + sorted(extra)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
