"""Figures for the chapters. Each concept has a module (``specmath.plots.overlap`` …);
this package holds the shared style: a colour-blind-safe palette whose colours also differ
in lightness, so figures stay readable in greyscale and in dark mode.
"""

from .style import LINESTYLES, MARKERS, PALETTE, new_axes, style_axes

__all__ = ["PALETTE", "LINESTYLES", "MARKERS", "new_axes", "style_axes"]
