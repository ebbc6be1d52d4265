"""The shared explorer mechanism."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt


def explorer(plot: Callable[..., object], controls: dict, *, show_controls: bool = True):
    """Show ``plot(**defaults)`` as a static figure, then controls that redraw it.

    Parameters
    ----------
    plot : callable
        Takes the control values as keyword arguments, returns a matplotlib Figure.
    controls : dict
        name → ipywidgets control (its ``value`` is the default).
    show_controls : bool
        False displays only the static figure (for documents without a kernel).

    Returns
    -------
    ipywidgets.VBox or None
        The control box (already displayed), so a notebook can keep a handle to it.
    """
    import ipywidgets as widgets
    from IPython.display import display

    values = {name: w.value for name, w in controls.items()}
    fig = plot(**values)
    handle = display(fig, display_id=True)
    plt.close(fig)
    if not show_controls:
        return None

    def redraw(_change=None):
        vals = {name: w.value for name, w in controls.items()}
        f = plot(**vals)
        if handle is not None:  # None outside IPython, where nothing is on screen to update
            handle.update(f)
        plt.close(f)

    for w in controls.values():
        w.observe(redraw, names="value")
    box = widgets.VBox(list(controls.values()))
    display(box)
    return box
