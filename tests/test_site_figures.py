"""Figures that must stay readable where the site scales them down to a phone (issue 15)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: The text column of the site at a 390 px wide phone (CSS px), measured in Chromium.
PHONE_COLUMN_PX = 350
#: The smallest text a reader should have to read on a phone, in CSS px.
MIN_TEXT_PX = 9.0


def _smallest_text_px_on_a_phone(fig) -> tuple[float, float]:
    """(width of the saved PNG at 100 dpi, smallest text size on a phone in CSS px)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    from PIL import Image

    width = Image.open(io.BytesIO(buf.getvalue())).size[0]
    scale = min(1.0, PHONE_COLUMN_PX / width)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_text().strip() and t.get_visible()]
    return width, min(sizes) * 100 / 72 * scale


def test_fig_5_1_maps_are_stacked_and_their_labels_readable_at_390_px():
    from specmath.plots.speedup import best_k_heatmap, speedup_heatmap, speedup_maps

    alphas, cs = np.linspace(0, 0.95, 24), np.logspace(0, 2, 20)
    fig, S, K = speedup_maps(alphas, cs, k_max=64)
    top, bottom = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"][:2]
    assert top.get_position().y0 > bottom.get_position().y1, "panels are not stacked"
    # the same arrays as the single maps
    _, S1 = speedup_heatmap(alphas, cs, k_max=64)
    _, K1 = best_k_heatmap(alphas, cs, k_max=64)
    assert np.array_equal(S, S1) and np.array_equal(K, K1)
    width, smallest = _smallest_text_px_on_a_phone(fig)
    assert smallest >= MIN_TEXT_PX, f"smallest label {smallest:.1f} px on a phone"
    # the side-by-side layout it replaces fails the same check
    from specmath.plots import new_axes

    old, (a1, a2) = new_axes(ncols=2, width=11, height=4.3)
    speedup_heatmap(alphas, cs, k_max=64, ax=a1)
    best_k_heatmap(alphas, cs, k_max=64, ax=a2)
    assert _smallest_text_px_on_a_phone(old)[1] < MIN_TEXT_PX
    plt.close("all")
