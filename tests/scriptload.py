"""Test helper: a repository script (``scripts/<name>.py``, ``benchmarks/<name>.py``)
imported as a module, since those folders are not packages. Used by the tooling tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str, folder: str = "scripts", *, register: bool = False) -> ModuleType:
    """``<folder>/<name>.py`` imported as the module ``name``; ``register=True`` also puts it
    in ``sys.modules`` (needed when the script pickles or re-imports its own objects)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def student_edition(tmp_path_factory, reader: Path) -> Path:
    """The student edition of the reader notebooks in ``reader``, built by
    ``scripts/make_student.py`` into a fresh temporary folder (the student tests' fixture)."""
    out = tmp_path_factory.mktemp("student")
    load_script("make_student").make_student(reader, out)
    return out
