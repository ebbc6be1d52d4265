"""Shared figure style (all chapters)."""

from __future__ import annotations

import matplotlib.pyplot as plt

#: Okabe–Ito colours ordered so neighbours differ in lightness (greyscale-safe).
PALETTE = {
    "target": "#0072B2",   # blue (p)
    "draft": "#E69F00",    # orange (q)
    "overlap": "#009E73",  # green (min(p, q))
    "residual": "#D55E00", # vermillion
    "accent": "#CC79A7",   # purple
    "dark": "#000000",
    "grey": "#7F7F7F",
}
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v"]


def style_axes(ax):
    """Light grid, no top/right spines, a transparent-friendly face colour."""
    ax.grid(True, alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    return ax


def new_axes(ncols: int = 1, nrows: int = 1, width: float = 6.0, height: float = 3.6, **kw):
    """A figure and styled axes with the course's default size."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), constrained_layout=True, **kw)
    for ax in (axes.flat if hasattr(axes, "flat") else [axes]):
        style_axes(ax)
    fig.patch.set_facecolor("white")
    return fig, axes


def axes_or_new(ax=None, **kw):
    """``(ax.figure, ax)`` when an axes is given, else a new styled figure (see :func:`new_axes`)."""
    if ax is None:
        return new_axes(**kw)
    return ax.figure, ax
