"""The batch-size explorer of chapter 11: speedup against B for α, k, context and GPU."""

from __future__ import annotations

from .. import costmodel as cm
from ..plots.serving import plot_batch_speedup
from ._base import explorer

__all__ = ["batch_figure", "batch_explorer"]


def batch_figure(alpha: float, k: int, context: int, gpu: str, target, draft):
    hw = {h.name.split()[0]: h for h in cm.ILLUSTRATIVE_GPUS}[gpu]
    ks = sorted({1, int(k), 8}) if k > 0 else (1, 8)
    return plot_batch_speedup(alpha, target, draft, ks=ks, hardware=hw, context=context)


def batch_explorer(target, draft, alpha: float = 0.8, k: int = 5, context: int = 0,
                   gpu: str = "H100", show_controls: bool = True):
    """Sliders for α, k and context length and a GPU menu redrawing :func:`batch_figure`."""
    import ipywidgets as w

    controls = {
        "alpha": w.FloatSlider(value=alpha, min=0.3, max=0.98, step=0.01, description="α"),
        "k": w.IntSlider(value=k, min=1, max=12, description="k"),
        "context": w.IntSlider(value=context, min=0, max=65536, step=1024,
                               description="context"),
        "gpu": w.Dropdown(options=["A100", "H100", "H200"], value=gpu, description="GPU"),
    }
    return explorer(lambda alpha, k, context, gpu: batch_figure(alpha, k, context, gpu, target,
                                                                draft),
                    controls, show_controls=show_controls)
