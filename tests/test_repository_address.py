"""One place for the repository's address (issue 15): ``_config.yml``'s ``repository``.

The Colab buttons (sphinx-book-theme), the chapters' install cells (placeholders filled in
by the reader-notebook build, ``scripts/sphinx_specmath_repository.py``) and the preface
(MyST substitution) all take it from there; the recorded results need none (package
data). Proved by grepping every tracked file for the typed address, and by filling the
install cells with a fork's address.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from scriptload import load_script

ROOT = Path(__file__).resolve().parents[1]


def _repo_module():
    return load_script("sphinx_specmath_repository")


REPO = _repo_module()
URL, BRANCH = REPO.read_repository(ROOT)
OWNER_NAME = URL.removeprefix("https://github.com/")  # "owner/name"
# generated from the sources and _config.yml by `make reader-notebooks` (checked below)
GENERATED = ("notebooks/",)


def _tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode().split("\0")
    return [p for p in out if p and not p.startswith(GENERATED)
            and not p.startswith("scripts/vendor/") and (ROOT / p).is_file()]


def test_the_address_is_typed_only_in_config_yml():
    assert OWNER_NAME.count("/") == 1, URL
    typed = re.compile(re.escape(OWNER_NAME) + r"(?![\w.-])")
    hits = []
    for rel in _tracked_text_files():
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if typed.search(line):
                hits.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert hits == [f"_config.yml:{_url_line()}: url: {URL}"], (
        "the repository's address is typed outside _config.yml's repository.url:\n"
        + "\n".join(hits))


def _url_line() -> int:
    lines = (ROOT / "_config.yml").read_text(encoding="utf-8").splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.strip() == f"url: {URL}")


def test_every_chapter_install_cell_takes_the_address_from_the_config():
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    assert len(chapters) == 12
    fork = "https://github.com/someone/specmath-fork"
    for path in chapters:
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert "google.colab" in first.source, f"{path.name}: install cell is not first"
        assert REPO.URL_PLACEHOLDER in first.source and REPO.BRANCH_PLACEHOLDER in first.source
        filled = REPO.fill(first.source, fork, "dev")
        assert "git+https://github.com/someone/specmath-fork@dev\"" in filled, filled
        assert "{" not in filled.split("git+", 1)[1].split('"', 1)[0]


def test_the_reader_notebook_build_fills_the_install_cell():
    src = (ROOT / "scripts" / "sphinx_specmath_notebooks.py").read_text(encoding="utf-8")
    assert "from sphinx_specmath_repository import fill" in src
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "sphinx_specmath_repository: scripts/" in config


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
                         ids=lambda p: p.stem)
def test_reader_notebooks_install_from_the_configured_repository(path):
    """Holds once ``make reader-notebooks`` has regenerated ``notebooks/``."""
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert f"git+{URL}@{BRANCH}\"" in first.source, first.source
