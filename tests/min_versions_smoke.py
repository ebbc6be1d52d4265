"""Run specmath under the oldest declared dependency versions (``tests/test_min_versions.py``).

Executed by that test with the Python of a virtual environment holding exactly the floors of
``pyproject.toml`` (``numpy``, ``scipy``, ``matplotlib``, ``ipywidgets``, ``ipython``), from
an empty folder. Usage: ``python min_versions_smoke.py PINS_JSON CHAPTER.ipynb ...``.

It checks that the installed versions are the pins, imports every module of specmath (but
``specmath.llm``, the ``llm`` extra), checks every exercise's answer through ``check``, reads
every recorded result, then runs the given chapters' code cells in IPython; every explorer
they build (``specmath.widgets.explorer``) has each control moved, and the figure must be
redrawn each time (the ipywidgets 7 ``observe`` path).
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import pkgutil
import sys
import time

import matplotlib

matplotlib.use("Agg")


def _release(v: str) -> tuple[int, ...]:
    """'1.24' and '1.24.0' are the same release."""
    parts = [int(x) for x in v.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def main(argv: list[str]) -> int:
    pins = json.loads(argv[0])
    for name, version in pins.items():
        got = md.version(name)
        assert _release(got) == _release(version), f"{name} {got} installed, the test pins {version}"
    t0 = time.time()

    import specmath
    mods = [m.name for m in pkgutil.walk_packages(specmath.__path__, "specmath.")
            if not m.name.startswith("specmath.llm")]
    for m in mods:
        importlib.import_module(m)

    from specmath.exercises import _REGISTRY, check, exercise_keys
    for key in exercise_keys():
        assert check(key, _REGISTRY[key].compute(), quiet=True), key

    from specmath.notebook import RESULTS_DIR, load_result
    names = sorted(p.name for p in RESULTS_DIR.glob("*.json"))
    assert names, RESULTS_DIR
    for name in names:
        assert isinstance(load_result(name), dict), name
    print(f"{len(mods)} modules, {len(_REGISTRY)} exercises, {len(names)} results: "
          f"{time.time() - t0:.1f}s", flush=True)

    # every explorer built while the chapters run: move each control, count the redraws
    import specmath.widgets._base as base
    moved: list[str] = []
    original = base.explorer

    def explorer(plot, controls, **kw):
        calls = []

        def counted(**values):
            calls.append(values)
            return plot(**values)

        box = original(counted, controls, **kw)
        if box is not None:
            for name, w in controls.items():
                before = len(calls)
                options = getattr(w, "options", None)
                if options:
                    values = [o[1] if isinstance(o, tuple) else o for o in options]
                    w.value = next(v for v in values if v != w.value)
                else:
                    w.value = w.min if w.value != w.min else w.max
                assert len(calls) == before + 1, f"moving {name} did not redraw the figure"
                moved.append(name)
        return box

    base.explorer = explorer
    for mod in [m for m in mods if m.startswith("specmath.widgets.")]:
        module = sys.modules[mod]
        if getattr(module, "explorer", None) is original:
            module.explorer = explorer

    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    for path in argv[1:]:
        t1 = time.time()
        nb = json.loads(open(path, encoding="utf-8").read())
        for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            result = shell.run_cell(src, silent=True)
            if not result.success:
                err = result.error_in_exec or result.error_before_exec
                print(f"FAILED: {path}, code cell {i}: {err!r}")
                return 1
        print(f"{path}: {time.time() - t1:.1f}s", flush=True)
    print(f"controls moved: {', '.join(moved)}")
    assert moved or not argv[1:], "no explorer was built by the chapters run"
    print("ALL OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
