"""Grade a folder of submissions of one assignment (``make grade ASSIGNMENT=NN SUBMISSIONS=DIR``).

Every ``DIR/*.ipynb`` is graded by Otter-Grader's ``otter run`` against the assignment's
``autograder.zip`` (built by ``make assignments``), each submission on its own:

* in its own process tree, inside a bubblewrap sandbox (``bwrap``, Debian's
  ``bubblewrap``): a private scratch folder (a copy of the submission and of the
  autograder) is the only place it can write; the rest of the file system is read-only;
  the submissions folder, the built assignments and the home folder are hidden; no
  network; its own process, IPC and user namespaces, killed with the grader;
* with a wall-clock limit (``--timeout``, ``GRADE_TIMEOUT``, 300 s by default) and a
  per-process address-space limit (``--memory``, ``GRADE_MEMORY_MB``, 4096 MiB) and a
  256 MiB limit on any file it writes.

``DIR/grades.csv`` gets one row per submission, sorted by file name: ``file``, ``status``
(``graded``, ``timeout``, ``unreadable``: empty or not a notebook, ``error``: anything
else), ``score``, ``max_score``, one column per auto-graded question and ``student_id``
(the ID typed in the notebook's first cell, to compare with who submitted it). Nothing
depends on timing, so grading the same folder twice gives the same file. Each
submission's grading log goes to ``DIR/grading-logs/NAME.log``.

Usage: ``python scripts/grade.py ASSIGNMENT SUBMISSIONS [--timeout S] [--memory MiB]
[--jobs N] [--assignments _build/assignments] [--no-sandbox]``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STATUSES = ("graded", "timeout", "unreadable", "error")
SANDBOX_DIR = "/tmp/grade"  # where the scratch folder appears inside the sandbox
_ID = re.compile(r"""^\s*STUDENT_ID\s*=\s*(['"])(.*?)\1""", re.MULTILINE)


@dataclass
class Row:
    file: str
    status: str
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    student_id: str = ""


def find_assignment(assignment: str, root: Path) -> Path:
    """``"05"``, ``"5"`` or ``"05_speedup"`` -> the assignment's folder under ``root``."""
    if not isinstance(assignment, str) or not assignment.strip():
        raise ValueError("assignment must name a chapter, e.g. '05' or '05_speedup'")
    head = assignment.strip()
    nn = f"{int(head):02d}" if head.isdigit() else head
    hits = sorted(p for p in root.glob(f"{nn}*") if (p / "autograder" / "autograder.zip")
                  .is_file())
    if len(hits) != 1:
        raise ValueError(f"assignment must match one built assignment in {root} (run `make "
                         f"assignments`); {assignment!r} matches {len(hits)}")
    return hits[0]


def questions(autograder_zip: Path) -> dict[str, float]:
    """Auto-graded question -> points, from the tests inside ``autograder.zip``."""
    out = {}
    with zipfile.ZipFile(autograder_zip) as z:
        for name in sorted(z.namelist()):
            m = re.fullmatch(r"tests/(\w+)\.py", name)
            if not m:
                continue
            env: dict = {}
            exec(compile(z.read(name).decode("utf-8"), name, "exec"), env)  # our own file
            pts = env["test"]["points"]
            out[m.group(1)] = float(sum(pts) if isinstance(pts, list) else pts)
    return out


def declared_id(nb: dict) -> str:
    """The ID typed in the notebook's first code cell (empty if none)."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            m = _ID.search(src)
            return m.group(2) if m else ""
    return ""


def read_notebook(path: Path) -> dict | None:
    """The submission as a notebook, or None when it is empty or not a valid notebook."""
    import nbformat
    try:
        raw = path.read_bytes()
        if not raw.strip():
            return None
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
        return nb
    except Exception:  # noqa: BLE001 -- anything unparsable is "unreadable"
        return None


def sandbox_command(scratch: Path, hide: list[Path], inner: list[str]) -> list[str]:
    """The ``bwrap`` command that runs ``inner`` with only ``scratch`` (as /tmp/grade) writable."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bwrap (Debian package bubblewrap) is required to grade: run "
                           "`make bubblewrap` or pass --no-sandbox on a machine you trust")
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--tmpfs", "/tmp", "--tmpfs", "/run"]
    home = Path.home()
    masked = [Path("/tmp"), Path("/run")]   # replaced by empty folders, then home too
    hidden = []   # an empty, read-only folder in place of each of these
    if str(home) != "/" and home.is_dir():
        cmd += ["--tmpfs", str(home)]
        hidden.append(str(home))
        masked.append(home)
    # the interpreter, its environment and the course's code stay visible (read-only)
    # wherever they live, even inside a masked folder (a clone under /tmp, a venv in home)
    rebound = []
    for p in [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), REPO.resolve()]:
        if any(p.is_relative_to(m) for m in masked) and p not in rebound:
            cmd += ["--ro-bind", str(p), str(p)]
            rebound.append(p)
    for p in hide:
        p = p.resolve()
        visible = (not any(p.is_relative_to(m) for m in masked)
                   or any(p.is_relative_to(r) for r in rebound))
        if p.is_dir() and visible:
            cmd += ["--tmpfs", str(p)]
            hidden.append(str(p))
    for p in hidden:
        cmd += ["--remount-ro", p]
    cmd += ["--bind", str(scratch), SANDBOX_DIR, "--chdir", SANDBOX_DIR,
            "--unshare-all", "--die-with-parent", "--new-session",
            "--setenv", "HOME", "/tmp/home", "--setenv", "TMPDIR", "/tmp",
            "--setenv", "MPLBACKEND", "Agg", "--setenv", "OPENBLAS_NUM_THREADS", "1",
            "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "MKL_NUM_THREADS", "1",
            "--setenv", "JUPYTER_RUNTIME_DIR", "/tmp/jupyter-runtime",
            "--setenv", "IPYTHONDIR", "/tmp/ipython", "--setenv", "MPLCONFIGDIR", "/tmp/mpl",
            "--"]
    return cmd + inner


def _limits(memory_mb: int):
    def apply():
        mem = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 2**20, 256 * 2**20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def grade_one(path: Path, name: str, autograder_zip: Path, qs: dict[str, float], *,
              timeout: float,
              memory_mb: int, hide: list[Path], sandbox: bool, log_dir: Path) -> Row:
    """Grade one submission in its own sandboxed process; never raises for a bad submission."""
    nb = read_notebook(path)
    if nb is None:
        return Row(path.name, "unreadable")
    row = Row(path.name, "error", student_id=declared_id(nb))
    scratch = Path(tempfile.mkdtemp(prefix="specmath-grade-"))
    try:
        (scratch / "in").mkdir()
        (scratch / "out").mkdir()
        # named as handed out: the notebook's otter.Notebook("NN_name.ipynb") reads itself
        shutil.copyfile(path, scratch / "in" / f"{name}.ipynb")
        shutil.copyfile(autograder_zip, scratch / "autograder.zip")
        root = Path(SANDBOX_DIR) if sandbox else scratch
        inner = [sys.executable, "-m", "otter", "run", "--no-logo",
                 "-a", str(root / "autograder.zip"), "-o", str(root / "out"),
                 str(root / "in" / f"{name}.ipynb")]
        cmd = sandbox_command(scratch, hide, inner) if sandbox else inner
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATH_GRADE")}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_limits(memory_mb), env=env,
                                cwd=scratch)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            row.status = "timeout"
        log_dir.mkdir(exist_ok=True)
        (log_dir / f"{path.stem}.log").write_bytes(out or b"")
        results = scratch / "out" / "results.json"
        if row.status != "timeout" and proc.returncode == 0 and results.is_file():
            data = json.loads(results.read_text(encoding="utf-8"))
            for t in data.get("tests", []):
                if t.get("name") in qs:
                    row.scores[t["name"]] = float(t.get("score", 0.0))
            if set(row.scores) == set(qs):
                row.status = "graded"
                row.score = sum(row.scores.values())
            else:
                row.scores = {}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def _num(x: float) -> str:
    return f"{x:g}"


def write_csv(rows: list[Row], qs: dict[str, float], path: Path) -> None:
    """``grades.csv``, written to a temporary file first and then renamed into place."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["file", "status", "score", "max_score", *qs, "student_id"])
    total = sum(qs.values())
    for r in sorted(rows, key=lambda r: r.file):
        w.writerow([r.file, r.status, _num(r.score), _num(total),
                    *(_num(r.scores[q]) if q in r.scores else "" for q in qs), r.student_id])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    tmp.replace(path)


def grade(assignment: str, submissions: Path, *, timeout: float = 300.0,
          memory_mb: int = 4096, jobs: int = 1, assignments: Path | None = None,
          sandbox: bool = True) -> Path:
    """Grade every ``submissions/*.ipynb``; write and return ``submissions/grades.csv``."""
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder; {submissions} is not")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive; got {timeout}")
    if memory_mb < 256:
        raise ValueError(f"memory_mb must be at least 256; got {memory_mb}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1; got {jobs}")
    root = assignments or REPO / "_build" / "assignments"
    folder = find_assignment(assignment, root)
    zip_path = folder / "autograder" / "autograder.zip"
    qs = questions(zip_path)
    files = sorted(p for p in submissions.glob("*.ipynb") if p.is_file())
    hide = [submissions, root]
    log_dir = submissions / "grading-logs"
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda p: grade_one(
            p, folder.name, zip_path, qs, timeout=timeout, memory_mb=memory_mb, hide=hide,
            sandbox=sandbox, log_dir=log_dir), files))
    out = submissions / "grades.csv"
    write_csv(rows, qs, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("assignment", help="chapter number (05) or folder name (05_speedup)")
    ap.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    ap.add_argument("--timeout", type=float,
                    default=float(os.environ.get("GRADE_TIMEOUT", 300)))
    ap.add_argument("--memory", type=int, default=int(os.environ.get("GRADE_MEMORY_MB", 4096)),
                    help="address-space limit per process, MiB")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("GRADE_JOBS", 1)))
    ap.add_argument("--assignments", type=Path, default=REPO / "_build" / "assignments")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run otter without bubblewrap (only for submissions you trust)")
    args = ap.parse_args(argv)
    try:
        out = grade(args.assignment, args.submissions, timeout=args.timeout,
                    memory_mb=args.memory, jobs=args.jobs, assignments=args.assignments,
                    sandbox=not args.no_sandbox)
    except (ValueError, RuntimeError) as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    print(f"{out}: {len(rows)} submissions; " + ", ".join(f"{n} {s}" for s, n in
                                                          counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
