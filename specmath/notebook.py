"""Small helpers for the chapters' notebooks.

:func:`glue` stores a computed number for the prose (myst-nb ``{glue:text}``) and works
unchanged in Colab or plain Jupyter, where myst-nb is not installed. :func:`md_table`
renders a small table computed in a notebook as Markdown (numbers stay computed, never
typed).
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

__all__ = ["glue", "in_colab", "load_result", "RESULTS_URL", "md_table"]


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


#: Where the committed results live on GitHub (read when the package is installed without
#: the repository, as in Colab).
RESULTS_URL = "https://raw.githubusercontent.com/specmath/specmath/main/book/results/"


def load_result(name: str, *, download: bool = True) -> dict:
    """A recorded benchmark ``book/results/<name>`` (JSON with provenance) for a chapter.

    Read from the repository that holds this package (a clone, the website build, the
    reader and student notebooks), else fetched from GitHub (Colab installs the package
    alone). Raises ``ValueError`` for a bad name and ``FileNotFoundError`` when the file
    is neither on disk nor downloadable.
    """
    import json
    import urllib.request
    from pathlib import Path

    if not isinstance(name, str) or not name.endswith(".json") or "/" in name:
        raise ValueError(f"name must be a file name like 'block_cpu.json'; got {name!r}")
    path = Path(__file__).resolve().parents[1] / "book" / "results" / name
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    if download:
        try:
            with urllib.request.urlopen(RESULTS_URL + name, timeout=10) as f:
                return json.loads(f.read().decode("utf-8"))
        except OSError as err:
            raise FileNotFoundError(f"{path} is absent and could not be downloaded") from err
    raise FileNotFoundError(f"{path} is absent; run the benchmark that records it")
