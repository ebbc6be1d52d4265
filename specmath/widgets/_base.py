"""The shared explorer mechanism."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt


def explorer(plot: Callable[..., object], controls: dict, *, show_controls: bool = True,
             live: Callable[[], dict] | None = None):
    """Show ``plot(**defaults)`` as a static figure, then controls that redraw it.

    With a kernel (Jupyter, Colab) the controls redraw the figure. The website has no
    kernel: there ``live()``'s Vega-Lite spec (see :mod:`specmath.widgets._live`), emitted
    as a hidden HTML output, replaces the figure and the frozen controls with a chart that
    recomputes in the browser; an explorer without ``live`` shows only its default figure.

    Parameters
    ----------
    plot : callable
        Takes the control values as keyword arguments, returns a matplotlib Figure.
    controls : dict
        name → ipywidgets control (its ``value`` is the default).
    show_controls : bool
        False displays only the static figure (for documents without a kernel).
    live : callable, optional
        Returns the website's Vega-Lite spec (a dict) for this explorer's defaults.

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
    from IPython.display import HTML

    from ._live import live_html

    display(HTML(live_html(live() if live is not None else None)))
    return box
