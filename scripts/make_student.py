"""Write the student edition of the chapter notebooks (``make student``).

Built from the **reader notebooks** (``notebooks/NN_*.ipynb``, plain Markdown with the
website's numbers, see ``scripts/reader_notebooks.py``), so exercise statements show the
values they ask about. For every chapter it writes ``student/NN_*.ipynb`` with

* every solution removed: the reader notebooks keep each solution in one collapsed
  ``<details>`` cell tagged ``solution``, and that cell goes;
* in its place, an empty code cell for the student's work, which names the exercise, the
  variable(s) its statement asks for and the checker call the statement names (e.g.
  ``check("ch5-ex3", [k_slow, k_fast])``), commented out so that the notebook runs top to
  bottom before the student has answered;
* the exercise statements (cells tagged ``exercise``) and everything else kept;
* all outputs, execution counts and saved widget state cleared.

``make book`` remains the instructor edition (solutions in collapsed drop-downs).

Usage: ``python scripts/make_student.py [--src notebooks] [--out student]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

NOTE = ("> **Student edition.** The solutions are removed. After each exercise there is an "
        "empty cell for your work; `check(\"key\", value)` from `specmath.exercises` (imported "
        "at the start of the exercises) says whether an answer is right and, if not, only "
        "roughly how far off it is (close, far, wrong sign or shape; for a list, which entry), "
        "never the answer. `check(\"key\", value, hint=True)` adds a nudge.")

_LABEL = re.compile(r'<a id="(ch\d+-ex\d+)"></a>')
_CALL = re.compile(r'check\("(ch\d+-ex\d+)", ([^`]+?)\)`')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def checker_call(statement: str, label: str) -> str | None:
    """The second argument of the ``check("label", …)`` call the statement names, if any."""
    for key, arg in _CALL.findall(statement):
        if key == label:
            return arg.strip()
    return None


def _placeholder(label: str | None, arg: str | None) -> nbformat.NotebookNode:
    if label and arg:
        names = _NAME.findall(arg)
        what = " and ".join(f"`{n}`" for n in names) if names else "your answer"
        src = (f"# Your solution to exercise {label}: compute {what}, then check with\n"
               f"# check(\"{label}\", {arg})\n")
    elif label:
        src = f"# Your solution to exercise {label}\n"
    else:
        src = "# Your solution\n"
    return nbformat.v4.new_code_cell(src)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def strip_solutions(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Return (student notebook, labels of the solutions removed); ``nb`` is not modified."""
    out = nbformat.v4.new_notebook(metadata={k: v for k, v in nb.metadata.items()
                                             if k != "widgets"})
    labels: list[str] = []
    label: str | None = None
    arg: str | None = None
    for cell in nb.cells:
        if "exercise" in _tags(cell):
            m = _LABEL.search(cell.source)
            if m and m.group(1) != label:
                label, arg = m.group(1), None
            arg = checker_call(cell.source, label) or arg if label else None
        if "solution" in _tags(cell):
            labels.append(label or "?")
            out.cells.append(_placeholder(label, arg))
            continue
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(cell.source)
        else:
            new = nbformat.v4.new_raw_cell(cell.source)
        new.metadata = {k: v for k, v in cell.metadata.items() if k != "execution"}
        out.cells.append(new)
    title = next((k for k, c in enumerate(out.cells)
                  if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), -1)
    out.cells.insert(title + 1, nbformat.v4.new_markdown_cell(NOTE))
    for i, c in enumerate(out.cells):
        c["id"] = f"s{i:03d}"
    nbformat.validate(out)
    return out, labels


def make_student(src: Path, dst: Path) -> list[Path]:
    """Write the student edition of every ``src/NN_*.ipynb`` into ``dst``; return the paths."""
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(src.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        student, _ = strip_solutions(nb)
        target = dst / path.name
        nbformat.write(student, target)
        written.append(target)
    (dst / "README.md").write_text(
        "# Student edition\n\nThe chapter notebooks of *The Mathematics of Speculative "
        "Decoding* without solutions and without outputs, written by `make student`. Open "
        "one in Jupyter or upload it to Colab (its first cell installs specmath there); "
        "check answers with `specmath.exercises.check(\"chN-exM\", value)`.\n",
        encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=repo / "notebooks")
    ap.add_argument("--out", type=Path, default=repo / "student")
    args = ap.parse_args(argv)
    written = make_student(args.src, args.out)
    for p in written:
        print(f"student edition: {p}")
    if not written:
        print(f"no chapter notebooks (NN_*.ipynb) in {args.src}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
