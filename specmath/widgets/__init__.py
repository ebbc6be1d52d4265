"""Interactive explorers (ipywidgets). Each concept has a module (``specmath.widgets.overlap`` …).

:func:`explorer` is the shared mechanism: it first displays the figure at the default
values as an ordinary output (so the website, where widgets are frozen, never shows an
empty cell), then the controls; moving a control redraws that same output in place.
"""

from ._base import explorer

__all__ = ["explorer"]
