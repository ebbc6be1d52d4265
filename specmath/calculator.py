"""An in-browser speedup calculator (chapter 5) that needs no kernel.

Placeholder: the real calculator (HTML + JavaScript computing E[N], S and the best k, with
a plot of S over k) is built in the website issue.
"""

from __future__ import annotations

__all__ = ["speedup_calculator"]


def speedup_calculator(alpha: float = 0.8, k: int = 4, c: float = 10.0):
    """Return an IPython HTML object with the calculator (placeholder for now)."""
    from IPython.display import HTML

    return HTML("<div class='specmath-calculator'><em>The in-browser calculator will appear "
                "here.</em></div>")
