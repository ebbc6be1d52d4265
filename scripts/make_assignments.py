"""Build the graded Otter-Grader assignments of every chapter (``make assignments``).

For each chapter with exercises, from the chapter's own sources -- the reader notebook
(``notebooks/NN_name.ipynb``: exercise statements with their numbers, solutions), the MyST
source (``book/md/NN_name.md``: which numbers in a statement are glued inputs) and the
answer module (``specmath/exercises/chN.py``: the expected answers) -- this writes an
Otter "master" notebook and runs ``otter assign`` on it::

    _build/assignments/NN_name/
        student/NN_name.ipynb        what the student receives (no solutions, public tests)
        autograder/NN_name.ipynb     the solved notebook
        autograder/autograder.zip    Gradescope-ready: hidden tests inside
        master/NN_name.ipynb         the generated Otter master notebook

Exercise ``chN-exM`` whose solution calls ``check("chN-exM", X)`` becomes an auto-graded
question ``chN_exM``: the student stores ``X`` in ``ans_chN_exM``; a public test checks its
form (numbers, shape, finite), a hidden test its value for the student's numbers
(``specmath.classroom.assert_correct``). Exercises without a checker (proofs), and the
parts of a numeric exercise that ask to show, prove, argue or explain, become manual
questions ``chN_exM_written``. Chapters listed in ``specmath.classroom.PERSONAL`` draw
their inputs from the student's ID unless ``--shared-numbers`` names them.

Usage: ``python scripts/make_assignments.py [--chapters 05 07] [--shared-numbers 05]
[--salt TEXT] [--out _build/assignments] [--otter-run-tests]``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specmath.classroom import PERSONAL, answer_name  # noqa: E402

_LABEL = re.compile(r'<a id="(ch\d+-ex\d+)"></a>\s*')
_CHECK_SPAN = re.compile(r'`check\(\s*"(ch\d+-ex\d+)"\s*,\s*(.*?)\)`')
_WRITTEN = re.compile(r"\b(show|prove|argue|explain|why|derive|justify)\b", re.IGNORECASE)
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_FENCE = re.compile(r"```python\n(.*?)```", re.DOTALL)


@dataclass
class Exercise:
    label: str                       # chN-exM
    statement: str                   # Markdown, header included, anchor removed
    prose: str = ""                  # the solution's text
    code: str = ""                   # the solution's code
    key: str | None = None           # the checker key, when auto-graded
    answer_expr: str | None = None   # what the solution passes to check()
    written: bool = False            # has parts graded by hand


@dataclass
class Chapter:
    name: str                        # NN_name
    number: int
    title: str
    install: str
    install_meta: dict = field(default_factory=dict)
    body: list[str] = field(default_factory=list)      # the chapter's code before the exercises
    setup: list[str] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)
    glue_exprs: dict[str, str] = field(default_factory=dict)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _strip_glue(src: str, exprs: dict[str, str]) -> str:
    """Remove top-level ``glue(...)`` calls from ``src``; record ``key -> expression``."""
    tree = ast.parse(src)
    drop: set[int] = set()
    for node in tree.body:
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "glue"):
            args = node.value.args
            if len(args) >= 2 and isinstance(args[0], ast.Constant):
                exprs[args[0].value] = ast.get_source_segment(src, args[1])
            drop.update(range(node.lineno, node.end_lineno + 1))
    lines = src.splitlines()
    kept = []
    for i, line in enumerate(lines, 1):
        if i not in drop:
            kept.append(line)
        elif ";" in line:             # glue(...); glue(...) on one line: all dropped
            continue
    text = "\n".join(kept)
    text = text.replace("from specmath.notebook import glue\n", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _drop_check_import(src: str) -> str:
    """The chapter's ``from specmath.exercises import check`` is not in a graded notebook."""
    out = []
    for line in src.splitlines():
        m = re.match(r"(\s*)from specmath\.exercises import (.*)$", line)
        if m:
            names = [n.strip() for n in m.group(2).split(",") if n.strip() != "check"]
            if not names:
                continue
            line = f"{m.group(1)}from specmath.exercises import {', '.join(names)}"
        out.append(line)
    return "\n".join(out)


class _Names(ast.NodeVisitor):
    """Names a top-level statement binds (not inside nested scopes), uses, and mutates."""

    def __init__(self):
        self.defined: set[str] = set()
        self.used: set[str] = set()
        self.mutated: set[str] = set()
        self.local: set[str] = set()      # bound inside a nested scope (or a parameter)
        self._depth = 0

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.used.add(node.id)
        elif self._depth == 0:
            self.defined.add(node.id)
        else:
            self.local.add(node.id)

    def visit_arg(self, node):
        self.local.add(node.arg)

    def _scope(self, node):
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    def visit_FunctionDef(self, node):
        if self._depth == 0:
            self.defined.add(node.name)
        self._scope(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef
    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _scope
    visit_GeneratorExp = _scope

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.used.add(node.target.id)      # x += 1 reads x too
        self.generic_visit(node)

    def visit_Import(self, node):
        for a in node.names:
            self.defined.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def _store_base(self, node):
        if isinstance(node.ctx, ast.Store) and self._depth == 0:
            base = node.value
            while isinstance(base, ast.Subscript | ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                self.mutated.add(base.id)
        self.generic_visit(node)

    visit_Subscript = visit_Attribute = _store_base


def _names(node) -> _Names:
    v = _Names()
    v.visit(node)
    v.used -= v.local                  # comprehension variables, parameters: not needed
    return v


def _free_names(sources: list[str]) -> set[str]:
    used, defined = set(), set()
    for src in sources:
        for stmt in ast.parse(src).body:
            n = _names(stmt)
            used |= n.used
            defined |= n.defined
    return used - defined


def slice_body(body: list[str], needed: set[str]) -> list[str]:
    """The chapter's statements the exercises need: [its imports, the other statements].

    A backward slice over top-level statements: a statement is kept when it binds or
    mutates a needed name; what it uses becomes needed. Every import is kept too (the
    student works in the chapter's namespace). ``glue`` calls and checks are left out.
    """
    stmts = []
    for cell, src in enumerate(body):
        for stmt in ast.parse(src).body:
            stmts.append((cell, stmt, ast.get_source_segment(src, stmt)))
    needed = set(needed)
    keep: set[int] = set()
    for i in range(len(stmts) - 1, -1, -1):
        _, stmt, _ = stmts[i]
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            keep.add(i)
            continue
        n = _names(stmt)
        if n.defined & needed or n.mutated & needed:
            keep.add(i)
            if not isinstance(stmt, ast.If | ast.For | ast.While | ast.Try | ast.With):
                needed -= n.defined
            needed |= n.used
    imports: list[str] = []
    code: dict[int, list[str]] = {}
    for i in sorted(keep):
        cell, stmt, text = stmts[i]
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            text = _drop_check_import(text)
            if text and text not in imports:
                imports.append(text)
        else:
            code.setdefault(cell, []).append(text)
    cells = ["\n".join(imports)] if imports else []
    if code:
        cells.append("\n\n".join("\n".join(v) for _, v in sorted(code.items())))
    return cells


def _split_solution(md: str) -> tuple[str, str]:
    """A reader notebook's ``<details>`` solution -> (prose, code)."""
    body = re.sub(r"^<details>\s*<summary>.*?</summary>\s*", "", md.strip(), flags=re.DOTALL)
    body = re.sub(r"\s*</details>\s*$", "", body)
    code = "\n\n".join(c.strip() for c in _FENCE.findall(body))
    prose = _FENCE.sub("", body).strip()
    return re.sub(r"\n{3,}", "\n\n", prose), code


def _answer_from_check(ex: Exercise) -> None:
    """Find ``check("key", X)`` (or ``assert check(...)``) in the solution code: record
    the key and X, remove that statement."""
    if not ex.code:
        return
    tree = ast.parse(ex.code)
    for node in tree.body:
        call = (node.value if isinstance(node, ast.Expr)
                else node.test if isinstance(node, ast.Assert) else None)
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "check" and call.args
                and isinstance(call.args[0], ast.Constant)):
            ex.key = call.args[0].value
            ex.answer_expr = ast.get_source_segment(ex.code, call.args[1])
            lines = ex.code.splitlines()
            del lines[node.lineno - 1:node.end_lineno]
            ex.code = "\n".join(lines).rstrip()
            return


def read_chapter(reader: Path) -> Chapter | None:
    """The parts of a reader notebook an assignment needs (None: no exercises)."""
    nb = nbformat.read(reader, as_version=4)
    cells = nb.cells
    ex_idx = [i for i, c in enumerate(cells) if "exercise" in _tags(c)]
    if not ex_idx:
        return None
    install_cell = next(c for c in cells
                        if c.cell_type == "code" and "google.colab" in c.source)
    install = install_cell.source
    title = next(c.source.lstrip("# ").strip() for c in cells
                 if c.cell_type == "markdown" and c.source.startswith("# "))
    ch = Chapter(reader.stem, int(reader.stem[:2]), title, install,
                 dict(install_cell.metadata))
    heading = max(i for i in range(ex_idx[0]) if cells[i].cell_type == "markdown"
                  and cells[i].source.startswith("## "))
    ch.body = [c.source for c in cells[:heading]
               if c.cell_type == "code" and "google.colab" not in c.source]
    for c in cells[heading + 1:ex_idx[0]]:
        if c.cell_type == "code":
            setup = _drop_check_import(_strip_glue(c.source, ch.glue_exprs))
            if setup:
                ch.setup.append(setup)
    for i in ex_idx:
        src = cells[i].source
        label = _LABEL.search(src).group(1)
        ex = Exercise(label, _LABEL.sub("", src, count=1).strip())
        if i + 1 < len(cells) and "solution" in _tags(cells[i + 1]):
            ex.prose, ex.code = _split_solution(cells[i + 1].source)
        _answer_from_check(ex)
        ex.written = ex.key is None or bool(_WRITTEN.search(ex.statement))
        ch.exercises.append(ex)
    return ch


def _literal_pattern(text: str) -> str:
    out = []
    for part in re.split(r"(\s+)", text):
        if not part:
            continue
        if part.isspace():
            out.append(r"\s+")
            continue
        esc = re.escape(part)
        esc = esc.replace("'", "['’]").replace('"', '["“”]')
        out.append(esc)
    return "".join(out)


def personal_statement(md_source: str, ex: Exercise, exprs: dict[str, str]) -> str:
    """The statement with each glued input replaced by the expression it reads (``P[...]``).

    The reader notebook's statement is the MyST statement with its roles rendered; aligning
    the two locates each glued value. Raises ``ValueError`` when they do not align.
    """
    m = re.search(r"```\{exercise\}[^\n]*\n:label: " + re.escape(ex.label)
                  + r"\n(.*?)\n```", md_source, re.DOTALL)
    if m is None:
        raise ValueError(f"{ex.label}: no exercise block in the MyST source")
    body = "\n".join(line for line in m.group(1).splitlines()
                     if not line.startswith(":")).strip()
    pattern, keys, pos = [], [], 0
    for role in _ROLE.finditer(body):
        pattern.append(_literal_pattern(body[pos:role.start()]))
        if role.group(1) == "glue:text":
            keys.append(role.group(2).split(":")[0])
            pattern.append(r"(.+?)")
        else:
            pattern.append(r".+?")
        pos = role.end()
    pattern.append(_literal_pattern(body[pos:]))
    header, _, text = ex.statement.partition("\n")
    hit = re.fullmatch(r"\s*" + "".join(pattern) + r"\s*", text, re.DOTALL)
    if hit is None:
        raise ValueError(f"{ex.label}: the reader notebook's statement does not align with "
                         "the MyST source")
    out, pos = [], 0
    for g, key in enumerate(keys, 1):
        out.append(text[pos:hit.start(g)])
        out.append(_placeholder(exprs[key]) if key in exprs
                   else text[hit.start(g):hit.end(g)])
        pos = hit.end(g)
    out.append(text[pos:])
    return header + "\n" + "".join(out)


def _outside_math(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` outside ``$...$`` math, code spans and link targets."""
    blocked = [m.span() for m in re.finditer(r"\$[^$]*\$|`[^`]*`|\]\([^)]*\)", text)]
    spans, pos = [], 0
    for a, b in blocked:
        spans.append((pos, a))
        pos = b
    spans.append((pos, len(text)))
    return spans


def personal_statement_by_value(ex: Exercise, exprs: dict[str, str],
                                env: dict) -> str:
    """Fallback of :func:`personal_statement` that needs only the reader notebook.

    Each glued input of the exercise (glue keys ``chN_exM_*``) is evaluated with the
    chapter's own inputs and looked up, as printed, in the statement's text outside math,
    code and links; it must occur exactly once, and no two inputs may print alike.
    """
    prefix = ex.label.replace("-", "_") + "_"
    header, _, text = ex.statement.partition("\n")
    found: dict[tuple[int, int], str] = {}
    for key, expr in exprs.items():
        if not key.startswith(prefix):
            continue
        v = eval(expr, env)  # noqa: S307 -- the chapter's own glue expression
        tries = [{str(v)} | ({f"{v:g}"} if isinstance(v, int | float) else set())]
        if isinstance(v, float):
            tries.append({f"{v:.{n}f}" for n in range(1, 5)})
        hits: set[tuple[int, int]] = set()
        for forms in tries:          # as printed plainly first, then with fixed decimals
            for a, b in _outside_math(text):
                for form in forms:
                    for m in re.finditer(r"(?<![\w.])" + re.escape(form)
                                         + r"(?![\w]|\.\d)", text[a:b]):
                        hits.add((a + m.start(), a + m.end()))
            if hits:
                break
        if len(hits) != 1 or next(iter(hits)) in found:
            raise ValueError(f"{ex.label}: cannot locate the input {key} = {v!r} in the "
                             "statement (run `make reader-notebooks` if the chapter changed)")
        found[next(iter(hits))] = _placeholder(expr)
    out, pos = [], 0
    for (a, b), repl in sorted(found.items()):
        out += [text[pos:a], repl]
        pos = b
    return header + "\n" + "".join(out) + text[pos:]


def _with_classroom(requirement: str) -> str:
    """``specmath @ URL`` -> ``specmath[classroom] @ URL`` (extras kept): Otter too."""
    m = re.match(r"specmath(?:\[([^\]]*)\])?(.*)$", requirement)
    if m is None:
        return requirement
    extras = [e for e in (m.group(1) or "").split(",") if e] + ["classroom"]
    return f"specmath[{','.join(extras)}]{m.group(2)}"


def _placeholder(expr: str) -> str:
    """How a statement shows a personal input: the expression that holds it, with the
    chapter's list formatting (``", ".join(f"{v:g}" for v in X)``) reduced to ``X``."""
    m = re.fullmatch(r"""["'], ["']\.join\(.* for \w+ in (.+)\)""", expr.strip())
    return f"`{m.group(1) if m else expr}`"


def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _md(text: str):
    return nbformat.v4.new_markdown_cell(text)


def _code(text: str):
    return nbformat.v4.new_code_cell(text)


def master_notebook(ch: Chapter, *, personal: bool, salt: str,
                    md_source: str | None) -> nbformat.NotebookNode:
    """The Otter master notebook of one chapter (Otter's v1 format)."""
    chapter_key = f"ch{ch.number}"
    spec = PERSONAL.get(chapter_key) if personal else None
    url = re.search(r'"(specmath @ [^"]+)"', ch.install)
    install_url = url.group(1) if url else "specmath"
    config = {
        "name": ch.name,
        "init_cell": False,
        "export_cell": False,
        "check_all_cell": False,
        "strip_solutions_from_all_cells": True,
        "requirements": "requirements.txt",
        "tests": {"files": False, "ok_format": True},
        "generate": {"pdf": False, "filtering": False, "show_stdout": False,
                     "show_hidden": False},
    }
    cells = [
        _code('# Type your student ID between the quotes, then run the whole notebook.\n'
              '# BEGIN SOLUTION NO PROMPT\nSTUDENT_ID = "instructor"\n# END SOLUTION\n'
              '""" # BEGIN PROMPT\nSTUDENT_ID = ""\n""" # END PROMPT'),
        _raw("# ASSIGNMENT CONFIG\n" + json.dumps(config, indent=2)),
        _md(f"# Chapter {ch.number} assignment: {ch.title}"),
    ]
    numbers = ""
    if spec is not None:
        numbers = (" **Your numbers are your own:** they are drawn from your student ID, "
                   f"printed by the setup cell, and the statements write them as "
                   f"`{spec.name}[...]`; another student's answers do not fit them.")
    cells.append(_md(
        "> **Graded assignment.** Type your student ID in the first cell, then run the "
        "notebook from the top. Each exercise names the variable for your answer "
        "(`ans_chN_exM`); `grader.check(\"chN_exM\")` says whether the answer has the "
        "right form (numbers, shape), not whether its value is right: values are graded "
        "after you submit, by tests you do not see. Parts marked *written* are graded by "
        "hand: answer them in their Markdown cell." + numbers))
    install = ch.install.replace(f'"{install_url}"', f'"{_with_classroom(install_url)}"')
    inst = _code(install)
    inst.metadata = {k: v for k, v in ch.install_meta.items() if k != "tags"}
    cells.append(inst)
    start = (f'P = start("{ch.name}", STUDENT_ID, salt={salt!r})' if spec is not None
             else f'start("{ch.name}", STUDENT_ID, personal=False, salt={salt!r})')
    cells.append(_code(f'import otter\n\ngrader = otter.Notebook("{ch.name}.ipynb")'))
    exercise_code = ch.setup + [e.code for e in ch.exercises if e.code] + [
        e.answer_expr for e in ch.exercises if e.answer_expr]
    needed = _free_names(exercise_code)
    sliced = slice_body(ch.body, needed)
    if sliced:
        cells.append(_md("The chapter's code that the exercises build on (run it; "
                         "nothing to change here)."))
        cells += [_code(c) for c in sliced]
    cells.append(_code("\n\n".join([*ch.setup,
                                     f"from specmath.classroom import start\n\n{start}"])))
    glue_env: dict = {}
    if spec is not None:   # the chapter's own exercise inputs, to find them in the text
        for src in ch.setup:
            exec(src, glue_env)  # noqa: S102 -- the chapter's own code
    for ex in ch.exercises:
        q = ex.label.replace("-", "_")
        statement = ex.statement
        if spec is not None and ex.key is not None:
            try:
                if md_source is None:
                    raise ValueError("no MyST source")
                statement = personal_statement(md_source, ex, ch.glue_exprs)
            except ValueError:
                statement = personal_statement_by_value(ex, ch.glue_exprs, glue_env)
        if ex.key is not None:
            name = answer_name(ex.key)
            statement = _CHECK_SPAN.sub(f'`grader.check("{q}")`', statement)
            statement += (f"\n\n*Graded:* store your answer in `{name}` "
                          f"(what the self-check would receive: `{ex.answer_expr}`); "
                          f'`grader.check("{q}")` checks its form, not its value.')
            cells += [_raw(f"# BEGIN QUESTION\nname: {q}\npoints: [0, 1]"),
                      _md(statement), _raw("# BEGIN SOLUTION")]
            body = ex.code.strip() or "pass"
            number = re.search(r"\*\*Exercise ([\d.]+)", ex.statement)
            cells.append(_code(
                f"# Exercise {number.group(1) if number else ex.label}: your work here; "
                f"store the answer in {name}\n"
                f"# BEGIN SOLUTION NO PROMPT\n{body}\n# END SOLUTION\n"
                f"{name} = {ex.answer_expr}  # SOLUTION"))
            pers = spec is not None
            cells += [
                _raw("# END SOLUTION"), _raw("# BEGIN TESTS"),
                _code(f"from specmath.classroom import assert_form\n\n"
                      f'assert_form("{ex.key}", {name})'),
                _code('""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n'
                      "import importlib\n\nimport specmath.classroom\n\n"
                      "importlib.reload(specmath.classroom).assert_correct(\n"
                      f'    "{ch.name}", "{ex.key}", {name}, STUDENT_ID, '
                      f"personal={pers}, salt={salt!r})"),
                _raw("# END TESTS"), _raw("# END QUESTION")]
        if ex.written:
            if ex.key is not None:
                number = re.search(r"\*\*Exercise ([\d.]+)", ex.statement)
                prompt = (f"**Exercise {number.group(1) if number else ex.label}, written "
                          "part** (graded by hand): answer "
                          "the parts of the exercise above that ask you to show, prove, "
                          "argue or explain.")
            else:
                prompt = statement + "\n\n*Written:* graded by hand."
            cells += [_raw(f"# BEGIN QUESTION\nname: {q}_written\nmanual: true\npoints: 1"),
                      _md(prompt), _raw("# BEGIN SOLUTION"),
                      _md(ex.prose or "(see the solution's code)")]
            if ex.key is None and ex.code:
                cells.append(_code(f"# BEGIN SOLUTION NO PROMPT\n{ex.code}\n# END SOLUTION"))
            cells += [_raw("# END SOLUTION"), _raw("# END QUESTION")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                  "name": "python3"},
                   "language_info": {"name": "python"}}
    # Otter's config cell must be the first raw cell; the ID cell stays first on screen.
    return nb


def verify_solved(dest: Path, name: str, student_id: str | None = None) -> dict[str, bool]:
    """Run the solved notebook's code here (as student ``student_id``, or as the solved
    notebook's own ID) and every test of ``autograder.zip`` (hidden ones included)
    against it; return question -> passed."""
    from otter.test_files.ok_test import OKTestFile

    nb = nbformat.read(dest / "autograder" / f"{name}.ipynb", as_version=4)
    if student_id is not None:
        nb.cells[0].source = f"STUDENT_ID = {student_id!r}\n"
    env: dict = {"__name__": "__main__"}
    here = os.getcwd()
    os.chdir(dest / "autograder")
    import specmath.exercises as exercises
    self_check = exercises.check          # the solved notebook switches it off
    try:
        with contextlib.redirect_stdout(io.StringIO()), tempfile.TemporaryDirectory() as tmp:
            for cell in nb.cells:
                if cell.cell_type == "code" and "grader.check(" not in cell.source:
                    exec(compile(cell.source, f"{name}.ipynb", "exec"), env)
            with zipfile.ZipFile("autograder.zip") as z:
                tests = sorted(n for n in z.namelist() if n.startswith("tests/"))
                z.extractall(tmp, members=tests)
            passed = {}
            for t in tests:
                tf = OKTestFile.from_file(str(Path(tmp) / t))
                tf.run(env)
                passed[tf.name] = tf.passed_all
                if not tf.passed_all:
                    print(f"{name}: {tf.summary()}", file=sys.stderr)
    finally:
        os.chdir(here)
        exercises.check = self_check
    return passed


def build(ch: Chapter, out: Path, *, personal: bool, salt: str, md_source: str | None,
          run_tests: bool) -> Path:
    """Write the master notebook, run ``otter assign``, tidy the output; return its folder."""
    dest = out / ch.name
    if dest.exists():
        shutil.rmtree(dest)
    nb = master_notebook(ch, personal=personal, salt=salt, md_source=md_source)
    master_dir = dest / "master"
    master_dir.mkdir(parents=True)
    master = master_dir / f"{ch.name}.ipynb"
    nbformat.write(nb, master)
    install_url = re.search(r'"(specmath @ [^"]+)"', ch.install)
    (master_dir / "requirements.txt").write_text(
        _with_classroom(install_url.group(1) if install_url else "specmath") + "\n",
        encoding="utf-8")
    from otter.assign import main as otter_assign

    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            otter_assign(str(master), str(dest / "dist"), no_run_tests=not run_tests)
        except Exception as err:
            shutil.rmtree(dest)
            raise RuntimeError(f"otter assign failed for {ch.name}: {err}\n"
                               f"{log.getvalue()}") from err
    for sub in ("student", "autograder"):
        shutil.move(dest / "dist" / sub, dest / sub)
    shutil.rmtree(dest / "dist")
    zips = sorted((dest / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"{ch.name}: expected one autograder zip, found {zips}")
    zips[0].rename(dest / "autograder" / "autograder.zip")
    failed = [q for q, ok in verify_solved(dest, ch.name).items() if not ok]
    if failed:
        shutil.rmtree(dest)                  # never leave an assignment that fails itself
        raise RuntimeError(f"{ch.name}: the solved notebook fails its tests {failed}")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=REPO / "notebooks")
    ap.add_argument("--md", type=Path, default=REPO / "book" / "md")
    ap.add_argument("--out", type=Path, default=REPO / "_build" / "assignments")
    ap.add_argument("--chapters", nargs="*", default=None,
                    help="two-digit chapter numbers (default: every chapter with exercises)")
    ap.add_argument("--shared-numbers", nargs="*", default=[],
                    help="chapters whose inputs are the same for everyone (no personal "
                         "numbers)")
    ap.add_argument("--salt", default="",
                    help="mixed into every student's seed: new numbers for a new class")
    ap.add_argument("--otter-run-tests", action="store_true",
                    help="also let otter assign run the solved notebook in a kernel (slow; "
                         "the solved notebook is always checked against every test here)")
    args = ap.parse_args(argv)
    shared = {f"{int(s):02d}" for s in args.shared_numbers}
    wanted = None if args.chapters is None else {f"{int(s):02d}" for s in args.chapters}
    built, failed = 0, []
    for reader in sorted(args.src.glob("[0-9][0-9]_*.ipynb")):
        nn = reader.stem[:2]
        if wanted is not None and nn not in wanted:
            continue
        ch = read_chapter(reader)
        if ch is None:
            continue
        md = args.md / f"{reader.stem}.md"
        try:
            dest = build(ch, args.out, personal=nn not in shared, salt=args.salt,
                         md_source=md.read_text(encoding="utf-8") if md.exists() else None,
                         run_tests=args.otter_run_tests)
        except Exception as err:  # noqa: BLE001 -- report every chapter, then fail
            failed.append(reader.stem)
            print(f"{reader.stem}: FAILED: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        auto = sum(e.key is not None for e in ch.exercises)
        manual = sum(e.written for e in ch.exercises)
        personal = f"ch{ch.number}" in PERSONAL and nn not in shared
        print(f"{dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}: "
              f"{auto} auto-graded, {manual} written; personal numbers: "
              f"{'yes' if personal else 'no'}")
        built += 1
    if not built and not failed:
        print(f"no chapter with exercises in {args.src}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
