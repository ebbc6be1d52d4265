"""Write the student edition of the chapter notebooks (``make student``).

For every ``book/NN_*.ipynb`` it writes ``student/NN_*.ipynb`` with

* every solution removed: the text and code from a ``{solution-start}`` directive through
  its ``{solution-end}`` (inclusive), and any ``{solution}`` block;
* in its place, an empty code cell for the student's work, which names the exercise and
  the checker call (``check("chN-exM", answer)``) to run;
* the exercise statements (with the checker calls they mention) and everything else kept;
* all outputs, execution counts and saved widget state cleared.

``make book`` remains the instructor edition (solutions in collapsed drop-downs).

Usage: ``python scripts/make_student.py [--src book] [--out student]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[A-Za-z:_-]+)\}"
                   r"(?P<arg>.*)$")
NOTE = ("> **Student edition.** The solutions are removed. After each exercise there is an "
        "empty cell for your work; `check(\"key\", answer)` from `specmath.exercises` says "
        "whether an answer is right, and how far off it is if not, without revealing it.")


def _closes(line: str, fence: str) -> bool:
    s = line.strip()
    return len(s) >= len(fence) and set(s) == {fence[0]}


def _placeholder(label: str | None) -> nbformat.NotebookNode:
    if label:
        src = (f"# Your solution to exercise {label}: compute `answer`, then check it with\n"
               f"# check(\"{label}\", answer)\n")
    else:
        src = "# Your solution\n"
    return nbformat.v4.new_code_cell(src)


def strip_solutions(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Return (student notebook, labels of the solutions removed); ``nb`` is not modified."""
    out = nbformat.v4.new_notebook(metadata={k: v for k, v in nb.metadata.items()
                                             if k != "widgets"})
    labels: list[str] = []
    in_solution = False   # between solution-start and solution-end
    label: str | None = None

    def emit_markdown(lines: list[str]) -> None:
        text = "\n".join(lines).strip("\n")
        if text.strip():
            out.cells.append(nbformat.v4.new_markdown_cell(text))

    for cell in nb.cells:
        if cell.cell_type != "markdown":
            if not in_solution:
                new = nbformat.v4.new_code_cell(cell.source) if cell.cell_type == "code" \
                    else nbformat.v4.new_raw_cell(cell.source)
                new.metadata = dict(cell.metadata)
                new.metadata.pop("execution", None)
                out.cells.append(new)
            continue
        kept: list[str] = []
        lines = cell.source.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            m = FENCE.match(line)
            name = m.group("name") if m else None
            if in_solution:
                if name == "solution-end":
                    # skip the directive through its closing fence, then resume
                    j = i + 1
                    while j < len(lines) and not _closes(lines[j], m.group("fence")):
                        j += 1
                    i = j + 1
                    in_solution = False
                    emit_markdown(kept)
                    kept = []
                    out.cells.append(_placeholder(label))
                    continue
                i += 1
                continue
            if name == "solution-start":
                in_solution = True
                label = m.group("arg").strip() or None
                labels.append(label or "?")
                i += 1
                continue
            if name == "solution":
                # a self-contained solution block: drop it through its closing fence
                j = i + 1
                while j < len(lines) and not _closes(lines[j], m.group("fence")):
                    j += 1
                labels.append(m.group("arg").strip() or "?")
                emit_markdown(kept)
                kept = []
                out.cells.append(_placeholder(m.group("arg").strip() or None))
                i = j + 1
                continue
            kept.append(line)
            i += 1
        emit_markdown(kept)
    if in_solution:
        raise ValueError("a solution-start has no matching solution-end")
    # the student-edition note, after the title
    title = next((k for k, c in enumerate(out.cells)
                  if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), -1)
    out.cells.insert(title + 1, nbformat.v4.new_markdown_cell(NOTE))
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
        "check answers with `specmath.exercises.check(\"chN-exM\", answer)`.\n",
        encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=repo / "book")
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
