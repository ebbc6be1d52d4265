"""Declared dependencies match the imports (issue 15, items 4 and 13).

Every third-party module that ``specmath`` or a chapter's code (``book/NN_*.ipynb``, the
jupytext of ``book/md``) imports is declared in ``pyproject.toml``: in the core
dependencies, or, for the real-model code only (``specmath.llm`` and chapter 7), in the
``llm`` extra. An import guarded by
``except ImportError`` is optional and needs no declaration. The ipywidgets floor keeps
Colab's preinstalled 7.7.1 (no needless upgrade); ``tests/test_min_versions.py`` installs
the declared minimums and runs specmath under them.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# import name -> distribution name on PyPI (where they differ only in case or '-'/'_',
# the normalised import name is used)
DISTRIBUTION = {"IPython": "ipython", "huggingface_hub": "huggingface-hub",
                "sklearn": "scikit-learn", "yaml": "pyyaml", "PIL": "pillow"}
# real-model code, allowed to import from the ``llm`` extra
LLM_SOURCES = ("specmath/llm", "book/07_")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    return _norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1))


def _declared(extra: str | None = None) -> dict[str, str]:
    reqs = (PYPROJECT["project"]["dependencies"] if extra is None
            else PYPROJECT["project"]["optional-dependencies"][extra])
    return {_requirement_name(r): r for r in reqs}


def _guarded(tree: ast.AST) -> set[int]:
    """ids of Import nodes inside ``try: ... except ImportError/ModuleNotFoundError``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                               "ModuleNotFoundError")
                for h in node.handlers):
            for stmt in node.body:
                out |= {id(n) for n in ast.walk(stmt)
                        if isinstance(n, ast.Import | ast.ImportFrom)}
    return out


def _third_party_imports(source: str) -> set[str]:
    tree = ast.parse(source)
    optional = _guarded(tree)
    mods = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods.add(node.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m != "specmath"}



_MAGIC = re.compile(r"\s*(%{1,2}[A-Za-z]|![^=])")


def _is_magic(line: str) -> bool:
    """An IPython magic (%cd, %%time) or shell line (!pip), not an operator such as
    ``!= x`` or ``% n`` that starts a continuation line."""
    return bool(_MAGIC.match(line))

def _sources() -> list[tuple[str, str]]:
    """(relative path, python source) of every specmath module and chapter code cell."""
    out = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
           for p in sorted((ROOT / "specmath").rglob("*.py"))]
    for nb in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb")):  # jupytext of book/md
        cells = [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                 for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
                 if c["cell_type"] == "code"]
        # IPython magics / shell lines are not Python; chapters use none, but be safe
        # (a continuation line may start with "!=" or "%" as an operator: keep those)
        code = "\n".join("\n".join(ln for ln in c.splitlines() if not _is_magic(ln))
                         for c in cells)
        out.append((nb.relative_to(ROOT).as_posix(), code))
    return out


def test_every_imported_third_party_module_is_declared_in_pyproject():
    core, llm = _declared(), _declared("llm")
    missing = []
    for rel, src in _sources():
        allowed = core | (llm if rel.startswith(LLM_SOURCES) else {})
        for mod in sorted(_third_party_imports(src)):
            dist = _norm(DISTRIBUTION.get(mod, mod))
            if dist not in allowed:
                missing.append(f"{rel} imports {mod} (distribution {dist!r})")
    assert not missing, "undeclared in pyproject.toml:\n" + "\n".join(missing)


def test_the_import_scan_sees_scipy_in_the_chapters_and_a_guarded_import_as_optional():
    """The scan would catch the bug of issue 15 (scipy imported, not declared)."""
    imports = {rel: _third_party_imports(src) for rel, src in _sources()}
    assert "scipy" in imports["book/05_speedup.ipynb"]
    assert "scipy" in imports["specmath/multidraft.py"]
    assert "myst_nb" not in imports["specmath/notebook.py"]  # try/except ImportError
    assert "torch" in imports["book/07_real_models.ipynb"]
    assert _third_party_imports("try:\n    import foo\nexcept ImportError:\n    pass\n") == set()
    assert _third_party_imports("import scipy.stats\nimport json\n") == {"scipy"}


def test_scipy_is_a_core_dependency_and_ipywidgets_keeps_colabs_7_7_1():
    core = _declared()
    assert "scipy" in core
    assert "ipython" in core
    floor = re.search(r">=\s*([0-9.]+)", core["ipywidgets"]).group(1)
    assert tuple(int(x) for x in floor.split(".")) <= (7, 7, 1), core["ipywidgets"]


def test_every_core_dependency_has_a_tested_minimum():
    """A floor per core dependency: ``tests/test_min_versions.py`` installs exactly these."""
    for req in _declared().values():
        assert re.search(r">=\s*[0-9]", req), f"{req!r} declares no lowest version"


@pytest.mark.parametrize("path", ["requirements.txt", "requirements-models.txt"])
def test_dev_requirements_do_not_contradict_the_declared_floors(path):
    """The book's own venv may pin newer versions, never older than pyproject's floors."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    floors = {}
    for req in PYPROJECT["project"]["dependencies"]:
        r = Requirement(req)
        for spec in r.specifier:
            if spec.operator == ">=":
                floors[_norm(r.name)] = Version(spec.version)
    for line in (ROOT / path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        r = Requirement(line)
        for spec in r.specifier:
            if spec.operator == "==" and _norm(r.name) in floors:
                assert Version(spec.version) >= floors[_norm(r.name)], line


def test_magic_filter_drops_shell_and_magic_lines_but_keeps_operator_continuations():
    assert _is_magic("!pip install x") and _is_magic("%matplotlib inline")
    assert _is_magic("  %%time") and not _is_magic("        != np.searchsorted(a, u)")
    assert not _is_magic("    % n") and not _is_magic("x = 1")
