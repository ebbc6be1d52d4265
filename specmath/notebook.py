"""Small helpers for the chapters' notebooks.

:func:`glue` stores a computed number for the prose (myst-nb ``{glue:text}``) and works
unchanged in Colab or plain Jupyter, where myst-nb is not installed.
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

__all__ = ["glue", "in_colab"]


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
