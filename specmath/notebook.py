"""Small helpers for the chapters' notebooks.

:func:`glue` stores a computed number for the prose (myst-nb ``{glue:text}``) and works
unchanged in Colab or plain Jupyter, where myst-nb is not installed. :func:`md_table`
renders a small table computed in a notebook as Markdown (numbers stay computed, never
typed).
"""

from __future__ import annotations

import numbers
import sys
from pathlib import Path

import numpy as np

__all__ = ["glue", "in_colab", "load_result", "has_result", "result_path", "RESULTS_DIR",
           "md_table"]


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value


def glue(name: str, value, display: bool = False):
    """Glue ``value`` under ``name`` for the website; numpy scalars become Python numbers.

    Outside a myst-nb build (Colab, Jupyter) nothing is stored; with ``display=True`` the
    value is shown. Returns the plain value, so ``x = glue("ch4_EN", expected_tokens(...))``
    both computes and glues.
    """
    v = _plain(value)
    if isinstance(v, numbers.Real) and not isinstance(v, bool | numbers.Integral):
        v = float(v)
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab / plain Jupyter
        if display:
            from IPython.display import display as _display
            _display(v)
        return v
    _glue(name, v, display=display)
    return v


def _cell(x, fmt: str | None) -> str:
    x = _plain(x)
    if fmt is not None and isinstance(x, numbers.Real) and not isinstance(
            x, bool | numbers.Integral):
        text = format(x, fmt)
    else:
        text = str(x)
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header, rows, fmt: str | None = None):
    """A Markdown table of computed values, displayed as a cell output (all chapters).

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : iterable of sequences
        One sequence per row, each as long as ``header``.
    fmt : str, optional
        A format spec applied to every non-integer number (e.g. ``".3f"``); integers,
        strings and other cells use ``str``. Pipes in cells are escaped.

    Returns an ``IPython.display.Markdown`` object (its ``.data`` is the table's text).
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column; got an empty header")
    if fmt is not None:
        try:
            format(1.5, fmt)
        except (TypeError, ValueError) as err:
            raise ValueError(f"fmt must be a format spec for numbers such as '.3f'; got "
                             f"{fmt!r}") from err
    lines = ["| " + " | ".join(_cell(h, None) for h in header) + " |",
             "|" + "---|" * len(header)]
    for i, r in enumerate(rows):
        r = list(r)
        if len(r) != len(header):
            raise ValueError(f"rows[{i}] must have {len(header)} cells (one per header "
                             f"column); got {len(r)}")
        lines.append("| " + " | ".join(_cell(x, fmt) for x in r) + " |")
    from IPython.display import Markdown

    return Markdown("\n".join(lines))


#: The one location of the recorded benchmark results (JSON with provenance) that chapters
#: 7-11 read: package data, installed with ``specmath`` itself, so they are read locally in
#: Colab, plain Jupyter, a clone or a fork, with no network. The benchmarks write here.
RESULTS_DIR = Path(__file__).resolve().parent / "data" / "results"

# which script records which file (for the message when one is missing)
_RECORDED_BY = {
    "batch": "batch_cost.py", "block": "block_realmodel.py", "lossy": "lossy_realmodel.py",
    "layers": "layer_cost.py",
    "multidraft": "multidraft_realmodel.py", "realmodel": "realmodel.py",
    "traces": "record_traces.py", "gpu_run": "gpu_run.py",
}


def result_path(name: str) -> Path:
    """Where the recorded result ``name`` (e.g. ``"block_cpu.json"``) lives:
    ``RESULTS_DIR / name``. Raises ``ValueError`` for a name that is not a plain
    ``*.json`` file name."""
    if (not isinstance(name, str) or not name.endswith(".json") or "/" in name
            or "\\" in name or name.startswith(".")):
        raise ValueError(f"name must be a file name like 'block_cpu.json'; got {name!r}")
    return RESULTS_DIR / name


def has_result(name: str) -> bool:
    """Whether the recorded result ``name`` is in this installation (optional records,
    such as a GPU run, are absent unless someone recorded them)."""
    return result_path(name).is_file()


def missing_result_message(name: str) -> str:
    """The message of the error raised when the recorded result ``name`` is absent."""
    stem = name.removesuffix(".json")
    script = next((s for k, s in _RECORDED_BY.items()
                   if stem == k or stem.startswith(k + "_")), None)
    how = (f"record it with `python benchmarks/{script}` in a clone of the course repository"
           if script else "record it with the benchmark that writes it (see benchmarks/)")
    return (f"the recorded result {name!r} is not in this installation of specmath "
            f"(looked in {RESULTS_DIR}). The recorded results ship with the package: "
            f"reinstall specmath from the course repository (pip install of the repository, "
            f"as the chapter's first cell does), or {how}.")


def load_result(name: str) -> dict:
    """A recorded benchmark ``specmath/data/results/<name>`` (JSON with provenance), chs. 7-11.

    Read from the package's own data (:data:`RESULTS_DIR`), never from the network.
    Raises ``ValueError`` for a bad name and ``FileNotFoundError`` naming the file and how
    to get it when it is absent (never returns ``None``).
    """
    import json

    path = result_path(name)
    if not path.is_file():
        raise FileNotFoundError(missing_result_message(name))
    return json.loads(path.read_text(encoding="utf-8"))
