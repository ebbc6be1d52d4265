"""Live charts for the website: Vega-Lite specs that recompute in the browser, no kernel.

On the website an ipywidgets explorer has no kernel, so its sliders could not redraw its
figure. Each explorer therefore also emits a Vega-Lite spec (a plain dict, JSON) whose
parameters are bound to the page's own sliders. Closed-form curves are Vega expressions
(``pow``, ``min``, …) evaluated in the browser; anything that needs a simulation or an
optimisation is precomputed here with specmath on a grid of slider values ("frames") and
filtered by the parameter. ``book/_static/specmath-explorers.js`` renders the spec with the
vendored vega-embed and hides the frozen ipywidgets controls; in Jupyter and Colab the spec
stays hidden and the ipywidgets explorer works with the kernel.

``tests/test_live_explorers.py`` evaluates every spec's data and expressions in Python at
sample slider values and compares them with specmath, so the two cannot drift.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import numpy as np

from ..plots.style import PALETTE

__all__ = ["live_html", "slider", "select", "frames_filter", "panel_width"]

#: the width of one panel in pixels; two panels fit the site's text column side by side,
#: and the site's script stacks them where they do not.
panel_width = 260


def slider(name: str, value: float, lo: float, hi: float, step: float, label: str) -> dict:
    """A Vega-Lite variable parameter bound to a labelled range input."""
    return {"name": name, "value": value,
            "bind": {"input": "range", "min": lo, "max": hi, "step": step, "name": label}}


def select(name: str, value, options: Sequence, label: str, labels: Sequence[str] | None = None
           ) -> dict:
    """A Vega-Lite variable parameter bound to a labelled drop-down menu."""
    bind = {"input": "select", "options": list(options), "name": label}
    if labels is not None:
        bind["labels"] = list(labels)
    return {"name": name, "value": value, "bind": bind}


def frames_filter(**params: str) -> str:
    """A filter expression keeping the precomputed rows of the current slider values:
    ``frames_filter(a="alpha")`` gives ``abs(datum.a - alpha) < 1e-9``."""
    return " && ".join(f"abs(datum.{col} - {par}) < 1e-9" for col, par in params.items())


def grid(lo: float, hi: float, step: float) -> list[float]:
    """The slider's values lo, lo + step, …, hi, rounded as the browser's range input gives them."""
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 10) for i in range(n + 1)]


def rows(**columns) -> list[dict]:
    """Column arrays of equal length → a list of records (floats rounded to 12 digits)."""
    names = list(columns)
    cols = [np.asarray(columns[n], dtype=float).ravel() for n in names]
    return [{n: (round(float(v), 12) if np.isfinite(v) else None) for n, v in zip(names, r, strict=True)}
            for r in zip(*cols, strict=True)]


def base_config() -> dict:
    """Fonts and colours shared by the live charts (the figures' palette)."""
    return {"font": "sans-serif", "view": {"stroke": None},
            "axis": {"labelFontSize": 12, "titleFontSize": 12, "grid": True, "gridOpacity": 0.35},
            "legend": {"labelFontSize": 12, "orient": "bottom", "columns": 1, "labelLimit": 320},
            "title": {"fontSize": 13},
            # reference lines are decoration: no ARIA role (a role needs a label, axe)
            "rule": {"aria": False},
            "range": {"category": [PALETTE["target"], PALETTE["draft"], PALETTE["overlap"],
                                   PALETTE["residual"], PALETTE["dark"]]}}


def top_level(params: list[dict], panels: list[dict], description: str) -> dict:
    """Panels side by side (``concat``, two columns; the site stacks them on a phone)."""
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json",
            "description": description, "background": "white", "params": params,
            "config": base_config()}
    if len(panels) == 1:
        spec.update(panels[0])
    else:
        spec["concat"] = panels
        spec["columns"] = 2
        spec["spacing"] = 30
        # each panel has its own series and legend
        spec["resolve"] = {"scale": {"color": "independent", "strokeDash": "independent"}}
    return spec


def live_html(spec: dict | None) -> str:
    """The HTML output that carries ``spec`` to the website, hidden everywhere else.

    With ``spec=None`` it only marks the cell as an explorer, so the site hides the frozen
    ipywidgets controls (no control that pretends to be live).
    """
    if spec is None:
        return '<div class="specmath-live" hidden style="display:none"></div>'
    text = json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return ('<div class="specmath-live" hidden style="display:none" role="group" '
            f'aria-label="{html.escape(spec.get("description", "live explorer"))}">'
            f'<script type="application/json" class="specmath-live-spec">{text}</script></div>')
