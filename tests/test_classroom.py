"""The classroom kit (issue 17): Otter-Grader assignments, personal numbers, grading.

The first tests need no book: seeds, personal inputs, the public and hidden checks, the
grader's bookkeeping and its sandbox. The tests marked ``site`` build every assignment
from the reader notebooks that ``make book`` has just written (``_build/jupyter/book``,
current with the chapters and their answer modules) and grade a simulated class for
chapter 5 with ``otter run`` in the bubblewrap sandbox.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from scriptload import load_script

from specmath import classroom, exercises

REPO = Path(__file__).resolve().parents[1]
BUILT = REPO / "_build" / "jupyter" / "book"
CH5 = "05_speedup"
KEYS5 = [f"ch5-ex{i}" for i in range(1, 8)]   # every auto-graded ch5 exercise


def _load(name: str):
    return load_script(name, register=True)


grade = _load("grade")
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get(
    "SPECMATH_REQUIRE_SITE"), reason="bubblewrap not installed (make bubblewrap)")


# ---- personal numbers -----------------------------------------------------------------

def test_seed_depends_on_student_assignment_and_salt_but_not_case_or_spaces():
    s = classroom.seed_for("Ada 123", CH5)
    assert s == classroom.seed_for("  ada   123 ", "ch5")
    assert s != classroom.seed_for("Ada 124", CH5)
    assert s != classroom.seed_for("Ada 123", "04_tokens_per_iteration")
    assert s != classroom.seed_for("Ada 123", CH5, salt="spring")


@pytest.mark.parametrize("bad", ["", "   ", None, 42])
def test_missing_student_id_is_a_clear_error_naming_it(bad):
    with pytest.raises(ValueError, match="student_id"):
        classroom.start(CH5, bad)


def test_personal_inputs_keep_every_chapter5_exercise_well_posed():
    # 200 IDs: every expected answer is finite, ex2's optimum is interior, ex4's and
    # ex5's acceptance probabilities lie strictly inside (0, 1), ex6's lengths are monotone
    for i in range(200):
        sid = f"student-{i}"
        got = {k: classroom.expected(CH5, k, sid) for k in KEYS5}
        assert all(np.isfinite(v).all() for v in got.values()), sid
        assert got["ch5-ex2"][0] > 0 and got["ch5-ex2"][2] >= 1
        assert 0 < float(got["ch5-ex4"]) < 1 and 0 < float(got["ch5-ex5"]) < 1
        ks = got["ch5-ex6"]                   # ex6: never falls, never capped by k_max
        assert np.all(np.diff(ks) >= 0) and ks.max() < 64, sid


def test_every_personal_chapter_gives_finite_answers_for_every_student():
    for chapter in classroom.PERSONAL:
        keys = [k for k in exercises.exercise_keys() if k.startswith(f"{chapter}-")]
        assert keys, chapter
        for i in range(100):
            for key in keys:
                got = classroom.expected(chapter, key, f"student-{i}")
                assert np.isfinite(got).all(), (key, i)


def test_two_students_rarely_share_an_answer():
    # measured over 120 IDs; the bound (10 % per question) is what makes copying visible:
    # a copied notebook fails most personalised questions
    ids = [f"s{i}" for i in range(120)]
    for key in KEYS5:
        vals = [tuple(np.round(classroom.expected(CH5, key, s), 8).ravel()) for s in ids]
        same = sum(a == b for i, a in enumerate(vals) for b in vals[i + 1:])
        assert same / (len(ids) * (len(ids) - 1) / 2) < 0.10, key


def _ch5_solution_cell(label: str) -> str:
    """The code cell of the chapter's solution to exercise ``label``."""
    text = (REPO / "book" / "md" / f"{CH5}.md").read_text()
    body = text.split(f"```{{solution-start}} {label}", 1)[1].split("```{solution-end}")[0]
    return re.search(r"```\{code-cell\}[^\n]*\n(.*?)\n```", body, re.S).group(1)


@pytest.mark.slow
def test_every_personal_ch5_ex7_passes_the_chapters_own_solution_checks():
    # the chapter's solution cell (coverage within 4 binomial sd, the interval without the
    # noise term failing, the plug-in interval covering) runs under every distinct
    # personal input in 400 IDs; a draw whose sigma is too small for the no-noise
    # interval to fail would stop the instructor's solution notebook
    import specmath as sm

    cell = _ch5_solution_cell("ch5-ex7")
    seen = set()
    for i in range(400):
        params = classroom.personal_overrides(CH5, f"student-{i}")["PARAMS"]
        combo = tuple(sorted(params["ch5-ex7"].items()))
        if combo in seen:
            continue
        seen.add(combo)
        exec(cell, {"P": params, "np": np, "sm": sm, "check": lambda *a: None,
                    "glue": lambda *a, **k: None})
    assert len(seen) > 100             # the draw really varies the inputs


def test_shared_numbers_are_the_chapters_own():
    reg = exercises._REGISTRY
    for key in KEYS5:
        assert np.allclose(classroom.expected(CH5, key, "anyone", personal=False),
                           np.asarray(reg[key].compute(), dtype=float))


def test_personal_draw_leaves_the_chapters_inputs_untouched():
    from specmath.exercises import ch5
    before = copy.deepcopy(ch5.PARAMS)
    classroom.expected(CH5, "ch5-ex2", "someone")
    classroom.personal_overrides(CH5, "someone else")
    assert ch5.PARAMS == before


# ---- the checks the assignments run ---------------------------------------------------

def test_public_check_says_what_is_wrong_with_the_form_never_the_value():
    truth = classroom.expected(CH5, "ch5-ex2", "x")
    with pytest.raises(AssertionError, match="not answered yet"):
        classroom.assert_form("ch5-ex2", ...)
    with pytest.raises(AssertionError, match="4 number"):
        classroom.assert_form("ch5-ex2", [1.0, 2.0])
    with pytest.raises(AssertionError, match="NaN"):
        classroom.assert_form("ch5-ex2", [1.0, 2.0, float("nan"), 3.0])
    classroom.assert_form("ch5-ex2", [9.0, 9.0, 9.0, 9.0])     # wrong value, right form
    with pytest.raises(AssertionError) as err:
        classroom.assert_correct(CH5, "ch5-ex2", [9.0, 9.0, 9.0, 9.0], "x")
    assert all(f"{v:.3g}" not in str(err.value) for v in truth)


def test_hidden_check_accepts_the_own_answer_and_rejects_another_students():
    a, b = classroom.expected(CH5, "ch5-ex2", "alice"), classroom.expected(CH5, "ch5-ex2",
                                                                          "bob")
    assert not np.allclose(a, b)
    classroom.assert_correct(CH5, "ch5-ex2", a, "alice")
    with pytest.raises(AssertionError):
        classroom.assert_correct(CH5, "ch5-ex2", a, "bob")


def test_graded_notebook_has_no_self_check():
    original = exercises.check
    try:
        classroom.start(CH5, "alice")
        with pytest.raises(RuntimeError, match="not available in a graded assignment"):
            exercises.check("ch5-ex1", 0.5)
    finally:
        exercises.check = original


# ---- the grader's bookkeeping and sandbox ---------------------------------------------

def _fake_assignment(root: Path) -> Path:
    ag = root / "05_fake" / "autograder"
    ag.mkdir(parents=True)
    with zipfile.ZipFile(ag / "autograder.zip", "w") as z:
        for q in ("q1", "q2"):
            z.writestr(f"tests/{q}.py", f"OK_FORMAT = True\ntest = {{'name': '{q}', "
                       "'points': [0, 1], 'suites': []}\n")
    return root


def test_grade_gives_empty_and_invalid_files_their_row_and_the_same_csv_twice(tmp_path):
    root = _fake_assignment(tmp_path / "assignments")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "empty.ipynb").write_bytes(b"")
    (subs / "broken.ipynb").write_text("{ not json", encoding="utf-8")
    (subs / "notanotebook.ipynb").write_text('{"cells": 3}', encoding="utf-8")
    (subs / "notes.txt").write_text("ignored", encoding="utf-8")
    out = grade.grade("05", subs, assignments=root)
    first = out.read_bytes()
    rows = list(csv.DictReader(first.decode().splitlines()))
    assert [r["file"] for r in rows] == ["broken.ipynb", "empty.ipynb", "notanotebook.ipynb"]
    assert {r["status"] for r in rows} == {"unreadable"}
    assert list(rows[0]) == ["file", "status", "score", "max_score", "q1", "q2", "student_id"]
    assert all(r["score"] == "0" and r["max_score"] == "2" for r in rows)
    assert grade.grade("05", subs, assignments=root).read_bytes() == first


@pytest.mark.parametrize("kwargs, word", [({"timeout": 0}, "timeout"),
                                          ({"memory_mb": 10}, "memory_mb"),
                                          ({"jobs": 0}, "jobs")])
def test_grade_rejects_bad_settings_naming_them(tmp_path, kwargs, word):
    root = _fake_assignment(tmp_path / "a")
    with pytest.raises(ValueError, match=word):
        grade.grade("05", tmp_path, assignments=root, **kwargs)


def test_grade_needs_a_built_assignment(tmp_path):
    with pytest.raises(ValueError, match="assignment must match one built assignment"):
        grade.grade("07", tmp_path, assignments=_fake_assignment(tmp_path / "a"))


@needs_bwrap
def test_sandbox_lets_code_write_only_its_scratch_folder(tmp_path):
    # the submissions folder outside /tmp, so that hiding it is what the test exercises
    outside = Path("/var/tmp") if Path("/var/tmp").is_dir() else None
    subs = Path(tempfile.mkdtemp(prefix="specmath-subs-", dir=outside))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (subs / "grades.csv").write_text("original\n", encoding="utf-8")
    probe = (
        "import json, os, socket\n"
        "r = {}\n"
        f"for name, path in [('grades', {str(subs / 'grades.csv')!r}),"
        f" ('repo', {str(REPO / 'pyproject.toml')!r}), ('etc', '/etc/hostname')]:\n"
        "    try:\n"
        "        open(path, 'a').write('x'); r[name] = 'written'\n"
        "    except OSError as e:\n"
        "        r[name] = type(e).__name__\n"
        f"r['subs_visible'] = os.path.exists({str(subs / 'grades.csv')!r})\n"
        "open('mine.txt', 'w').write('ok'); r['scratch'] = 'written'\n"
        "try:\n"
        "    socket.create_connection(('pypi.org', 443), timeout=3); r['net'] = 'up'\n"
        "except OSError as e:\n"
        "    r['net'] = type(e).__name__\n"
        "print(json.dumps(r))\n")
    cmd = grade.sandbox_command(scratch, [subs], [sys.executable, "-c", probe])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    finally:
        grades = (subs / "grades.csv").read_text(encoding="utf-8")
        shutil.rmtree(subs)
    r = json.loads(out.stdout)
    assert r["scratch"] == "written" and (scratch / "mine.txt").read_text() == "ok"
    assert r["grades"] != "written" and grades == "original\n"
    assert r["repo"] != "written" and r["etc"] != "written"
    assert r["net"] != "up" and r["subs_visible"] is False


def test_sandbox_keeps_a_clone_under_tmp_visible_and_still_hides_its_assignments(
        tmp_path, monkeypatch):
    # CI may clone the course under /tmp, which the sandbox replaces by an empty folder:
    # the clone must be bound back (read-only), and folders to hide inside it hidden again
    clone = tmp_path / "clone"
    built = clone / "_build" / "assignments"
    built.mkdir(parents=True)
    monkeypatch.setattr(grade, "REPO", clone)
    monkeypatch.setattr(grade.shutil, "which", lambda name: "/usr/bin/bwrap")
    cmd = grade.sandbox_command(tmp_path / "scratch", [built], ["python"])
    i = cmd.index(str(clone.resolve()))
    assert cmd[i - 1] == "--ro-bind"
    j = cmd.index("--tmpfs", i)
    assert cmd[j + 1] == str(built.resolve()) and "--remount-ro" in cmd[j:]


@needs_bwrap
def test_sandbox_memory_limit_stops_a_large_allocation(tmp_path):
    hog = "b = bytearray(2 * 2**30)\nprint('allocated')"
    cmd = grade.sandbox_command(tmp_path, [], [sys.executable, "-c", hog])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                         preexec_fn=grade._limits(512))
    assert out.returncode != 0 and "MemoryError" in out.stderr
    assert "allocated" not in out.stdout


# ---- every assignment, built from the chapters, and a simulated class ----------------

def _sources() -> Path:
    if not BUILT.is_dir():
        if os.environ.get("SPECMATH_REQUIRE_SITE"):
            pytest.fail("_build/jupyter/book is missing: run `make book` first")
        pytest.skip("needs the reader notebooks of a fresh `make book`")
    return BUILT


@pytest.fixture(scope="module")
def assignments(tmp_path_factory) -> Path:
    prebuilt = os.environ.get("SPECMATH_TEST_ASSIGNMENTS")   # reuse a build (debugging)
    if prebuilt:
        return Path(prebuilt)
    src = _sources()
    out = tmp_path_factory.mktemp("assignments")
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "make_assignments.py"),
                          "--src", str(src), "--out", str(out)],
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def _chapters_with_exercises() -> list[str]:
    names = []
    for p in sorted(_sources().glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(p, as_version=4)
        if any("exercise" in c.metadata.get("tags", []) for c in nb.cells):
            names.append(p.stem)
    return names


@pytest.mark.site
def test_every_chapter_with_exercises_builds_an_assignment_whose_solutions_pass(
        assignments):
    # make_assignments.py exits non-zero unless every solved notebook passes every test
    # of its autograder.zip, hidden ones included (checked in the fixture)
    names = _chapters_with_exercises()
    assert names and sorted(p.name for p in assignments.iterdir()) == names
    for name in names:
        d = assignments / name
        assert (d / "student" / f"{name}.ipynb").is_file()
        assert (d / "autograder" / f"{name}.ipynb").is_file()
        with zipfile.ZipFile(d / "autograder" / "autograder.zip") as z:
            files = z.namelist()
            assert "run_autograder" in files and "environment.yml" in files
            assert "specmath[classroom" in z.read("environment.yml").decode()
            tests = [f for f in files if f.startswith("tests/")]
            assert tests and all("assert_correct" in z.read(t).decode() for t in tests)


@pytest.mark.site
def test_student_notebooks_hold_no_solution_no_hidden_test_and_no_self_check(assignments):
    for d in sorted(assignments.iterdir()):
        text = (d / "student" / f"{d.name}.ipynb").read_text(encoding="utf-8")
        nb = nbformat.reads(text, as_version=4)
        assert "assert_correct" not in text and "BEGIN SOLUTION" not in text
        assert "specmath.exercises import check" not in text
        assert 'STUDENT_ID = ""' in nb.cells[0].source
        answers = [c.source for c in nb.cells if c.cell_type == "code"
                   and "otter_assign_solution_cell" in c.metadata.get("tags", [])]
        assert answers and all(line.startswith("#") or line.endswith("= ...")
                               for a in answers for line in a.splitlines() if line)
        solved = nbformat.read(d / "autograder" / f"{d.name}.ipynb", as_version=4)
        manual = [c for c in solved.cells if "written part" in c.source
                  or "*Written:*" in c.source]
        meta = json.dumps(nb.metadata["otter"])
        assert "hidden" not in meta.replace('"hidden": false', "")
        assert len(manual) == text.count("_Type your answer here, replacing this text._")


@pytest.mark.site
def test_solved_notebooks_with_personal_numbers_pass_for_many_students(assignments):
    # the chapter's own solution code, run with the inputs of 12 students, passes every
    # test: the drawn inputs keep the exercises (and their solutions' checks) well posed
    ma = _load("make_assignments")
    for chapter in classroom.PERSONAL:
        nn = f"{int(chapter[2:]):02d}_"
        name = next(p.name for p in assignments.iterdir() if p.name.startswith(nn))
        for i in range(12):
            passed = ma.verify_solved(assignments / name, name, f"student-{i}")
            assert passed and all(passed.values()), (name, i, passed)


@pytest.mark.site
def test_personal_numbers_can_be_turned_off_per_assignment(tmp_path):
    src = _sources()
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "make_assignments.py"),
                          "--src", str(src), "--out", str(tmp_path), "--chapters", "05",
                          "--shared-numbers", "05"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr   # solved notebook passes too
    assert "personal numbers: no" in run.stdout
    text = (tmp_path / CH5 / "student" / f"{CH5}.ipynb").read_text(encoding="utf-8")
    assert 'P[\\"ch5-ex' not in text and "P = start(" not in text
    with zipfile.ZipFile(tmp_path / CH5 / "autograder" / "autograder.zip") as z:
        hidden = z.read("tests/ch5_ex2.py").decode()
    assert "personal=False" in hidden


def _set_id(nb, sid: str):
    nb = copy.deepcopy(nb)
    nb.cells[0].source = f'STUDENT_ID = "{sid}"\n'
    return nb


def _answer_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"
            and "otter_assign_solution_cell" in c.metadata.get("tags", [])]


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.site
@pytest.mark.slow
@needs_bwrap
def test_simulated_class_for_chapter_5(assignments, tmp_path_factory):
    folder = assignments / CH5
    solved = nbformat.read(folder / "autograder" / f"{CH5}.ipynb", as_version=4)
    student = nbformat.read(folder / "student" / f"{CH5}.ipynb", as_version=4)
    subs = tmp_path_factory.mktemp("submissions")
    write = lambda name, nb: nbformat.write(nb, subs / name)  # noqa: E731

    write("alice.ipynb", _set_id(solved, "alice"))                 # full marks
    write("bob.ipynb", student)                                     # as handed out
    loop = _set_id(solved, "carol")
    _answer_cells(loop)[0].source += "\nwhile True:\n    pass\n"
    write("carol.ipynb", loop)                                      # hangs
    crash = _set_id(solved, "gina")
    crash.cells.insert(2, nbformat.v4.new_code_cell("import os\n\nos._exit(1)"))
    write("gina.ipynb", crash)                                      # kills its kernel
    (subs / "dave.ipynb").write_text("{this is not json", encoding="utf-8")
    (subs / "erin.ipynb").write_bytes(b"")
    fake = _set_id(student, "frank")                                # fakes the grader,
    cells_f = _answer_cells(fake)       # ch5-ex1 … ex5, then later exercises' pairs
    values = ["0.5", "[1, 2, 3, 4]", "[1, 2]", "0.5", "0.5"]
    values += ["[1, 2]"] * (len(cells_f) - len(values))
    for cell, value in zip(cells_f, values, strict=True):  # right form, wrong
        cell.source = cell.source.replace("= ...", f"= {value}")   # values,
    fake.cells = [c for c in fake.cells if "grader.check(" not in c.source]  # no tests
    fake.cells.insert(1, nbformat.v4.new_code_cell(
        "class _Pass:\n    def check(self, *a, **k):\n        return True\n"
        "    def check_all(self, *a, **k):\n        return True\n\n"
        "import otter\notter.Notebook = lambda *a, **k: _Pass()\ngrader = _Pass()"))
    write("frank.ipynb", fake)
    attack = _set_id(solved, "mallory")                             # tries everything
    csv_path, zip_path = subs / "grades.csv", folder / "autograder" / "autograder.zip"
    attack.cells.insert(1, nbformat.v4.new_code_cell(
        "import glob, os\nstolen = []\n"
        f"for path in [{str(csv_path)!r}, {str(subs / 'alice.ipynb')!r}, "
        f"{str(zip_path)!r}]:\n"
        "    try:\n        open(path, 'w').write('owned')\n    except OSError:\n"
        "        pass\n"
        f"for path in [{str(subs / 'bob.ipynb')!r}, {str(zip_path)!r}]:\n"
        "    try:\n        os.remove(path)\n    except OSError:\n        pass\n"
        "for path in glob.glob('/tmp/**/tests/*.py', recursive=True):\n"
        "    stolen.append(open(path).read())          # the hidden tests, read\n"
        "assert stolen, 'the hidden tests are in the grading folder'"))
    write("mallory.ipynb", attack)
    copied = _set_id(student, "trent")                              # alice's numbers
    alice_answers = {k: classroom.expected(CH5, k, "alice") for k in KEYS5}
    for cell, key in zip(_answer_cells(copied), KEYS5, strict=True):
        cell.source = cell.source.replace(
            "= ...", f"= {alice_answers[key].tolist()!r}")
    write("trent.ipynb", copied)

    before = {p.name: _sha(p) for p in subs.iterdir()} | {"zip": _sha(zip_path)}
    grade.grade("05", subs, timeout=float(os.environ.get("SPECMATH_TEST_GRADE_TIMEOUT",
                                                          150)), jobs=3,
                assignments=assignments)
    after = {p.name: _sha(p) for p in subs.iterdir() if p.suffix == ".ipynb"}
    assert after == {k: v for k, v in before.items() if k != "zip"}     # nothing touched
    assert _sha(zip_path) == before["zip"]
    rows = {r["file"]: r for r in csv.DictReader(csv_path.open(encoding="utf-8"))}
    print("\n" + csv_path.read_text(encoding="utf-8"))

    assert sorted(rows) == sorted(p for p in before if p.endswith(".ipynb"))
    full = rows["alice.ipynb"]["max_score"]
    assert full == str(len(KEYS5))            # one point per auto-graded exercise
    assert (rows["alice.ipynb"]["status"], rows["alice.ipynb"]["score"]) == ("graded", full)
    assert rows["alice.ipynb"]["student_id"] == "alice"
    assert rows["bob.ipynb"]["status"] == "graded" and float(rows["bob.ipynb"]["score"]) < len(KEYS5)
    assert rows["carol.ipynb"]["status"] == "timeout"
    assert rows["dave.ipynb"]["status"] == rows["erin.ipynb"]["status"] == "unreadable"
    assert rows["gina.ipynb"]["status"] == "error"
    assert rows["frank.ipynb"]["status"] == "graded"
    assert float(rows["frank.ipynb"]["score"]) < len(KEYS5)
    # the attacker's own row: graded as its (correct) answers deserve, nothing else moved
    assert (rows["mallory.ipynb"]["status"], rows["mallory.ipynb"]["score"]) == ("graded",
                                                                                 full)
    # the copy passes exactly the questions where alice's and trent's answers coincide
    for key in KEYS5:
        same = np.allclose(alice_answers[key], classroom.expected(CH5, key, "trent"),
                           rtol=1e-3)
        assert rows["trent.ipynb"][key.replace("-", "_")] == ("1" if same else "0"), key
    assert float(rows["trent.ipynb"]["score"]) < 5
