"""Run a notebook's code cells in IPython, without Jupyter (``tests/test_plain_install.py``).

A plain ``pip install`` of specmath brings IPython (a declared dependency) but no Jupyter
kernel machinery; this runs each code cell in order in one ``InteractiveShell``, as a
kernel would, with matplotlib's Agg backend. Prints one JSON line per code cell:
``{"cell": i, "ok": bool, "error": "TypeName: message" | null, "source": first line}``.

Usage: ``python run_notebook_cells.py NOTEBOOK.ipynb [--keep-going]`` (without
``--keep-going`` it stops at the first failing cell). Exit status 0 when every cell ran.
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")


def main(argv: list[str]) -> int:
    from IPython.core.interactiveshell import InteractiveShell

    path, keep_going = argv[0], "--keep-going" in argv[1:]
    nb = json.loads(open(path, encoding="utf-8").read())
    shell = InteractiveShell.instance()
    failed = False
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for i, cell in enumerate(code):
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        result = shell.run_cell(src, silent=True)
        err = result.error_in_exec or result.error_before_exec
        first = next((ln for ln in src.splitlines() if ln.strip()
                      and not ln.startswith("#")), "")
        print(json.dumps({"cell": i, "ok": err is None, "source": first[:120],
                          "error": None if err is None else
                          f"{type(err).__name__}: {str(err)[:400]}"}), flush=True)
        if err is not None:
            failed = True
            if not keep_going:
                break
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
