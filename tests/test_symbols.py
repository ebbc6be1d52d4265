"""One meaning per symbol (issue 16): the preface's notation tables are the authority, and
the symbol box at the head of each chapter copies its rows from them verbatim.

The box format (see the preface's "Notation" section and CONTRIBUTING notes)::

    :::{admonition} Symbols in this chapter
    :class: note symbols

    | symbol | meaning |
    | --- | --- |
    | $p$ | <meaning copied verbatim from the preface's notation table> |
    :::
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MD = ROOT / "book" / "md"
PREFACE = MD / "00_preface.md"
SOURCES = sorted(MD.glob("[0-9][0-9]_*.md"))
# Chapters that must carry a box. Chapters 8-11 join this list when their boxes land.
REQUIRED = ["00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"]

BOX = re.compile(
    r"^:::\{admonition\} Symbols in this chapter\n:class: note symbols\n\n"
    r"\| symbol \| meaning \|\n\| --- \| --- \|\n((?:\|.*\|\n)+):::$", re.M)
_SEPARATOR = re.compile(r"^\|\s*:?-{3,}")


def _cells(row: str) -> list[str]:
    # split on '|' that is not inside $...$ (a conditional bar is written \mid, so a plain
    # split is safe; the test below rejects a box row that does not have two cells)
    return [c.strip() for c in row.strip().strip("|").split("|")]


def notation_table() -> dict[str, str]:
    """symbol -> meaning, from every table in the preface's Notation section."""
    text = PREFACE.read_text()
    start = text.index("\n## Notation\n")
    end = text.index("\n#", start + 1)
    lines = text[start:end].splitlines()
    table: dict[str, str] = {}
    for i, line in enumerate(lines):
        if not line.startswith("|") or _SEPARATOR.match(line):
            continue
        if i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
            continue                                        # a header row
        sym, meaning = _cells(line)[:2]
        assert sym not in table, f"the preface defines {sym} twice"
        table[sym] = meaning
    return table


def boxes(path: Path) -> list[list[tuple[str, str]]]:
    found = []
    for m in BOX.finditer(path.read_text()):
        rows = []
        for line in m.group(1).splitlines():
            cells = _cells(line)
            assert len(cells) == 2, f"{path.name}: box row {line!r} needs exactly 2 cells"
            rows.append((cells[0], cells[1]))
        found.append(rows)
    return found


def test_preface_notation_table_parses_and_holds_the_core_symbols():
    table = notation_table()
    for sym in ("$p$", "$q$", "$\\alpha$", "$k$", "$c$", "$N$", "$S$", "$r$", "$\\tau$"):
        assert sym in table, f"{sym} missing from the preface's notation table"
    assert table["$p$"].startswith("**target**")
    assert all(meaning for meaning in table.values())


def mismatches(path: Path, table: dict[str, str]) -> list[str]:
    """Every way the boxes of ``path`` disagree with the preface's table."""
    problems = []
    for rows in boxes(path):
        syms = [s for s, _ in rows]
        if len(syms) != len(set(syms)):
            problems.append(f"{path.name}: a symbol is listed twice")
        for sym, meaning in rows:
            if sym not in table:
                problems.append(f"{path.name}: {sym} is not in the preface's notation table")
            elif meaning != table[sym]:
                problems.append(f"{path.name}: {sym} means {meaning!r} in its box but "
                                f"{table[sym]!r} in the preface's notation table")
    return problems


def test_the_check_catches_a_reworded_meaning_and_an_unknown_symbol(tmp_path):
    table = notation_table()
    bad = tmp_path / "99_bad.md"
    bad.write_text(":::{admonition} Symbols in this chapter\n:class: note symbols\n\n"
                   "| symbol | meaning |\n| --- | --- |\n"
                   f"| $r$ | {table['$r$']} |\n"
                   "| $\\tau$ | the number of accepted drafts |\n"
                   "| $\\zeta$ | something new |\n:::\n")
    problems = mismatches(bad, table)
    assert len(problems) == 2
    assert "tau" in problems[0] and "zeta" in problems[1]


@pytest.mark.parametrize("stem", REQUIRED)
def test_required_chapter_has_one_symbol_box_before_its_first_section(stem):
    (path,) = [p for p in SOURCES if p.name.startswith(stem + "_")]
    text = path.read_text()
    found = list(BOX.finditer(text))
    assert len(found) == 1, f"{path.name}: expected one 'Symbols in this chapter' box"
    first_section = re.search(r"^## ", text, re.M)
    assert first_section is None or found[0].start() < first_section.start(), (
        f"{path.name}: the symbol box must come before the first section")


@pytest.mark.parametrize("md", SOURCES, ids=[p.stem for p in SOURCES])
def test_every_symbol_box_row_is_verbatim_in_the_preface_table(md):
    assert mismatches(md, notation_table()) == []


def test_a_malformed_box_is_not_silently_skipped():
    # a box whose title matches must also match the exact format, or the check above
    # would pass vacuously on it
    for md in SOURCES:
        text = md.read_text()
        titles = text.count(":::{admonition} Symbols in this chapter")
        assert titles == len(boxes(md)), f"{md.name}: a symbol box is not in the format"


def _math_spans(path: Path) -> list[str]:
    """The $...$ and $$...$$ spans of a chapter's prose (code cells left out)."""
    text = re.sub(r"```\{code-cell\}.*?```", "", path.read_text(), flags=re.S)
    return re.findall(r"\$\$.*?\$\$|\$[^$\n]+\$", text, flags=re.S)


EARLY = [p for p in SOURCES if p.name[:2] <= "07"]


def test_chapters_0_7_write_a_probability_as_pr_never_as_a_bare_p():
    # R3 finding 2: P is the parameter count; a probability of an event is \Pr
    bare = [(p.name, s) for p in EARLY for s in _math_spans(p)
            if re.search(r"(?<![\\A-Za-z_])P\(", s)]
    assert not bare, bare


def test_chapters_0_7_use_b_only_for_bytes_per_parameter_in_chapter_1():
    # R3 finding 2: tokens are x, y (P(a, y) = p(y | a)); real numbers in identities u, v
    uses = {p.name[:2] for p in EARLY for s in _math_spans(p)
            if re.search(r"(?<![\\A-Za-z_{])b(?![A-Za-z])", s)}
    assert uses <= {"00", "01"}, uses


def test_the_preface_list_of_reused_letters_names_every_reuse_the_review_found():
    # R3 finding 2: the list claims to be complete for chapters 0-7; every reuse found
    # by review (and not renamed) must be in it
    text = PREFACE.read_text()
    para = text[text.index("A few letters are also reused"):]
    para = para[:para.index("\n\n")]
    for item in ["$M$", "$P_{\\text{always}}$", "$P_{\\text{agree}}$", "$P_A$", "$y$",
                 "$w$", "$w_r$", "$r$", "$A$", "$A_j$", "subscript $i$", "$k_i$",
                 "$\\alpha_i$", "$V(k)$", "$W_0$",
                 # review R14a P2: a(X) and h(τ) of chapter 2 against the table's a_i and
                 # h_i; the G statistic against the Gumbel noise G_x; the tilt Φ against
                 # chapter 11's normal distribution function
                 "$a$", "$a_i$", "$h$", "$h_i$", "$G$", "$G_x$", "$\\Phi$",
                 # Part II (review R9c 14, audit MAP2 S6): local reuses in chapters 8-11
                 "In chapters 8–11", "$m$", "$\\psi$"]:
        assert item in para, item
    # the renamed ones stay renamed: ch2-ex1's token set is A, not S
    ch2 = next(p for p in SOURCES if p.name.startswith("02_"))
    assert not any(re.search(r"(?<![\\A-Za-z_])S(?![A-Za-z])", s) and "in S" in s
                   for s in _math_spans(ch2))


# S7 (student walk-through): α is an acceptance *probability* everywhere. "Acceptance
# rate" stays allowed for an empirical count (accepted ÷ drafted, ρ, a simulated or pooled
# frequency) or an engine's metric, and then its sentence must say so; an unqualified
# "acceptance rate" (a caption "Acceptance rate against …", "an acceptance rate of 0.4") is
# read as α and fails, and so does "rate" written next to α or for an average or
# per-position α ("the mean rate", "per-position rates").
_RATE = re.compile(r"acceptance[ \t\n-]+rates?\b", re.I)
_EMPIRICAL = re.compile(r"\b(draft|drafted|simulated|measured|pooled|empirical|observed|"
                        r"vLLM|engine)\b", re.I)
_RATE_ALPHA = re.compile(r"\brates?[ \t\n]+(α|\$\\alpha)|\b(mean|average|per-position|"
                         r"first-position|position's|per-iteration|conditional)"
                         r"[ \t\n-]+rates?\b", re.I)
_SENTENCE_END = re.compile(r"(\.\s|:\s|\n\s*\n|\|)")
LABEL_SOURCES = sorted((ROOT / "specmath" / "plots").glob("*.py")) + sorted(
    (ROOT / "specmath" / "widgets").glob("*.py"))


def alpha_called_a_rate(text: str) -> tuple[list[str], int]:
    """The places in ``text`` that call α an acceptance rate, and how many uses of
    "acceptance rate" were allowed (qualified as empirical within their sentence)."""
    bad, allowed = [], 0
    for m in _RATE.finditer(text):
        before = text[max(0, m.start() - 80):m.start()]
        ends = list(_SENTENCE_END.finditer(before))
        sentence = before[ends[-1].end():] if ends else before
        if _EMPIRICAL.search(sentence):
            allowed += 1
        else:
            bad.append(text[max(0, m.start() - 40):m.end() + 20].replace("\n", " "))
    bad += [text[max(0, m.start() - 40):m.end() + 10].replace("\n", " ")
            for m in _RATE_ALPHA.finditer(text)]
    return bad, allowed


def test_the_rate_check_catches_alpha_called_a_rate_and_allows_the_empirical_rate():
    old_captions = ("    caption: 'Acceptance rate against temperature for a three-token\n"
                    "    caption: Acceptance rate at $T = 1$ against the entropy\n"
                    "Ch5 once said: an acceptance rate of 0.4 is too low.\n"
                    "The draft acceptance rate α is wrong too.\n"
                    "the i.i.d. formula at the mean rate is too low; per-position rates\n")
    bad, allowed = alpha_called_a_rate(old_captions)
    assert len(bad) == 6, bad
    fine = ("The draft acceptance rate $\\rho$ = accepted ÷ drafted.\n"
            "In 5,000 simulated drafts, the acceptance rate was 0.6.\n"
            "alt: Pooled acceptance rate per draft position.\n"
            "For a measured acceptance rate from a real system, ...\n")
    assert alpha_called_a_rate(fine) == ([], 4)


def test_chapters_0_7_and_plot_labels_never_call_alpha_an_acceptance_rate():
    allowed = 0
    for path in EARLY + LABEL_SOURCES:
        bad, n = alpha_called_a_rate(path.read_text(encoding="utf-8"))
        assert not bad, f"{path.relative_to(ROOT)} calls α an acceptance rate: {bad}"
        allowed += n
    assert allowed >= 8        # the empirical uses are seen, so the check is not vacuous
