"""Teaching and verification kept apart (issue 16, student walk-through S8/S67).

Chapters 2 and 4 check their own claims with statistical machinery a first reading does
not need: the power of a test from a non-central χ², Hoeffding and binomial false-alarm
bounds, t-distribution false-alarm rates, bfloat16 bit rounding. Every code cell of the
teaching text that uses such machinery must sit in a passage marked optional for a first
reading, in the style the chapters already use: a lead-in
``*(Check, optional on a first reading …)*`` (or ``*(Optional …)*``, or "optional on a
first reading") between the cell's section heading and the cell. The cells still run
(nothing is hidden), so every glued value is produced.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

MD = Path(__file__).resolve().parents[1] / "book" / "md"
CHAPTERS = [MD / "02_acceptance_rule.md", MD / "04_tokens_per_iteration.md"]
# what makes a cell verification machinery rather than teaching
MACHINERY = re.compile(r"ncx2|Hoeffding|math\.comb|0x7FFF|sps\.t\.sf")
MARK = re.compile(r"\*\(Check, optional on a first reading|\*\(Optional|"
                  r"optional on a first reading", re.I)
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)\n```", re.S)
HEADING = re.compile(r"^#{2,3} ", re.M)


def unmarked_machinery_cells(text: str) -> tuple[list[str], int]:
    """The machinery cells of ``text`` outside a marked passage, and how many there are
    (the Exercises section, whose solutions the student edition strips, is left out)."""
    text = text.split("\n## Exercises", 1)[0]
    bad, n = [], 0
    for m in CELL.finditer(text):
        if not MACHINERY.search(m.group(1)):
            continue
        n += 1
        heads = [h.start() for h in HEADING.finditer(text, 0, m.start())]
        passage = text[heads[-1] if heads else 0:m.start()]
        # code cells of the passage do not count as a lead-in
        if not MARK.search(CELL.sub("", passage)):
            bad.append(m.group(1).splitlines()[0])
    return bad, n


def test_the_marker_check_flags_an_unmarked_power_cell_and_passes_a_marked_one():
    cell = "```{code-cell} ipython3\npower = sps.ncx2.sf(crit, dof, lam)\n```\n"
    unmarked = "## A section\n\nSome teaching.\n\n" + cell
    marked = ("## A section\n\n*(Check, optional on a first reading: the power.)*\n\n"
              + cell)
    in_code_only = ("## A section\n\n```{code-cell} ipython3\n# optional on a first "
                    "reading\n```\n\n" + cell)
    assert unmarked_machinery_cells(unmarked) == (["power = sps.ncx2.sf(crit, dof, lam)"], 1)
    assert unmarked_machinery_cells(marked) == ([], 1)
    assert unmarked_machinery_cells(in_code_only)[0]       # a comment is no lead-in


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_verification_machinery_cells_of_chapters_2_and_4_are_marked_optional(md):
    bad, n = unmarked_machinery_cells(md.read_text(encoding="utf-8"))
    assert n >= 3, f"{md.name}: only {n} machinery cells found; is the pattern stale?"
    assert not bad, f"{md.name}: machinery cells without an optional lead-in: {bad}"
