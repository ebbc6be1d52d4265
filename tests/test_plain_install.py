"""The plain-install journey (issue 15, "Plain-install journey").

A student with local Python runs ``pip install`` on the course repository and opens the
reader notebooks. This installs the **committed** repository (``git archive HEAD``, so no
book folder, no ``.venv``, nothing uncommitted) with ``pip install <dir>`` into a virtual
environment from the package index only, then runs every reader notebook (``notebooks/``;
``SPECMATH_READER_DIR`` overrides) from an empty folder with that environment's Python
(``tests/run_notebook_cells.py``: the cells in order in IPython, a declared dependency).

Chapters 0–6 and 8–11 must run without an error, reading their recorded results from the
installed package. Chapter 7 has no ``[llm]`` extra and no weights here: its first model
cell must fail with specmath's message naming the extra, and the cells that read the
recorded results must still run.

The environment with the dependencies is cached in
``~/.cache/specmath/plainvenv-<hash of pyproject's dependencies>`` (override the folder
with ``SPECMATH_PLAINVENV_CACHE``); each run reinstalls the committed package into it
(``pip install --no-deps --force-reinstall``, seconds) and ``pip check``s it.
``SPECMATH_FRESH_INSTALL=1`` rebuilds the environment from scratch with ``pip install``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READER = Path(os.environ.get("SPECMATH_READER_DIR", ROOT / "notebooks"))
NOTEBOOKS = sorted(p.name for p in READER.glob("[0-9][0-9]_*.ipynb"))
PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]
#: chapter 7's cells that read recorded results (they must run without the [llm] extra)
RECORDED = ("rm.load_results(", "traces.load_traces(", "load_result(", "has_result(")


def _committed_tree(dest: Path) -> Path:
    """``git archive HEAD`` unpacked into ``dest``: exactly the committed repository."""
    tar = dest.with_suffix(".tar")
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(tar),
                    "HEAD"], check=True)
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    tar.unlink()
    return dest


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory) -> Path:
    src = _committed_tree(tmp_path_factory.mktemp("repo") / "specmath")
    deps = tomllib.loads((src / "pyproject.toml").read_text())["project"]["dependencies"]
    key = hashlib.sha256(json.dumps([sys.version_info[:2], deps]).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("SPECMATH_PLAINVENV_CACHE",
                                Path.home() / ".cache" / "specmath"))
    venv = cache / f"plainvenv-{key}"
    py = venv / "bin" / "python"
    fresh = os.environ.get("SPECMATH_FRESH_INSTALL") == "1"
    if fresh or not (venv / ".complete").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        r = subprocess.run([str(py), *PIP, str(src)], capture_output=True, text=True)
        if r.returncode != 0 and ("No matching distribution" in r.stderr
                                  or "connection" in r.stderr.lower()):
            pytest.skip(f"the package index is unreachable: {r.stderr[-300:]}")
        assert r.returncode == 0, f"pip install of the repository failed:\n{r.stderr[-2000:]}"
        (venv / ".complete").write_text(json.dumps(deps))
    else:
        subprocess.run([str(py), *PIP, "--no-deps", "--force-reinstall", str(src)],
                       check=True, capture_output=True)
    check = subprocess.run([str(py), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    return py


def _run(py: Path, notebook: Path, cwd: Path, keep_going: bool = False):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["MPLBACKEND"] = "Agg"
    r = subprocess.run([str(py), str(ROOT / "tests" / "run_notebook_cells.py"),
                        str(notebook), *(["--keep-going"] if keep_going else [])],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    cells = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith('{"cell": ')]
    return r, cells


@pytest.mark.slow
def test_the_plain_install_is_the_package_alone(plain_python, tmp_path):
    code = ("import importlib.util as u, specmath, specmath.notebook as nb, pathlib, json\n"
            "print(json.dumps({'file': specmath.__file__, 'results': str(nb.RESULTS_DIR),\n"
            "  'n': len(list(nb.RESULTS_DIR.glob('*.json'))),\n"
            "  'scipy': u.find_spec('scipy') is not None,\n"
            "  'torch': u.find_spec('torch') is not None}))")
    r = subprocess.run([str(plain_python), "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, check=True)
    info = json.loads(r.stdout)
    assert "site-packages" in info["file"] and str(ROOT) not in info["file"]
    assert info["n"] >= 6 and "site-packages" in info["results"]
    assert info["scipy"] and not info["torch"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if not n.startswith("07_")])
def test_reader_notebook_runs_after_a_plain_install(plain_python, name, tmp_path):
    r, cells = _run(plain_python, READER / name, tmp_path)
    bad = [c for c in cells if not c["ok"]]
    assert r.returncode == 0 and not bad and cells, (bad or r.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not any(n.startswith("07_") for n in NOTEBOOKS), reason="no chapter 7")
def test_chapter_7_without_weights_fails_clearly_and_its_recorded_results_still_run(
        plain_python, tmp_path):
    name = next(n for n in NOTEBOOKS if n.startswith("07_"))
    _, cells = _run(plain_python, READER / name, tmp_path, keep_going=True)
    src = {c["cell"]: c["source"] for c in cells}
    failed = [c for c in cells if not c["ok"]]
    assert failed, "chapter 7 ran its live model cells without torch"
    first = failed[0]
    assert "specmath[llm]" in first["error"] and first["error"].startswith("ImportError"), first
    nb = json.loads((READER / name).read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    text = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in code]
    assert "llm" in text[first["cell"]], f"the first failing cell is not a model cell: {src}"
    # every other failure must come from the live part: the missing extra, or a name that
    # only a failed (live) cell defines; everything computed from recorded results runs
    live_names: set[str] = set()
    for c in failed:
        err = c["error"]
        m = re.match(r"NameError: name '(\w+)' is not defined", err)
        assert ("specmath[llm]" in err or "No module named 'torch'" in err
                or "No module named 'transformers'" in err
                or (m and m.group(1) in live_names)), (
            f"chapter 7 cell {c['cell']} ({c['source']}) fails without the live models' "
            f"help: {err}")
        live_names |= _bound_names(text[c["cell"]])
    recorded = [i for i, t in enumerate(text) if any(s in t for s in RECORDED)]
    assert recorded, "chapter 7 reads no recorded results?"
    broken = [c for c in cells if c["cell"] in recorded and not c["ok"]]
    assert not broken, f"recorded-results cells of chapter 7 failed: {broken}"
    ran = sum(c["ok"] for c in cells)
    assert ran >= len(cells) // 2, f"only {ran} of {len(cells)} cells of chapter 7 ran"


def _bound_names(source: str) -> set[str]:
    """Names a live cell binds with the models' help: assignments, defs, loop variables and
    imports of torch, transformers or specmath.llm. Other imports (glue, numpy, specmath's
    numpy modules) are not live: a recorded-results cell needing one that only a live cell
    imports is a bug of the chapter."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = getattr(node, "module", None) or ""
            for a in node.names:
                full = f"{module}.{a.name}" if module else a.name
                if full.split(".")[0] in ("torch", "transformers") or full.startswith(
                        "specmath.llm"):
                    out.add((a.asname or a.name).split(".")[0])
    return out
