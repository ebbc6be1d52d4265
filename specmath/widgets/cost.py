"""Chapter 1 explorer: how model size, weight precision and GPU move the ridge point."""

from __future__ import annotations

from .. import costmodel as cm
from ..plots.cost import forward_time_figure
from ._base import explorer

__all__ = ["cost_explorer"]


def cost_explorer(n_params_billion: float = 70.0, bytes_per_param: float = 2.0, k: int = 4,
                  gpu: str = "H100 SXM (illustrative)", show_controls: bool = True):
    """Sliders for parameters (billions), bytes per parameter, k and the GPU; plots T(n)."""
    import ipywidgets as w

    gpus = {hw.name: hw for hw in cm.ILLUSTRATIVE_GPUS}
    if gpu not in gpus:
        raise ValueError(f"gpu must be one of {sorted(gpus)}; got {gpu!r}")

    def plot(n_params_billion, bytes_per_param, k, gpu):
        return forward_time_figure(n_params_billion * 1e9, gpus[gpu], bytes_per_param, k=k)

    controls = {
        "n_params_billion": w.FloatLogSlider(value=n_params_billion, base=10, min=-1, max=3,
                                             step=0.1, description="params (B)",
                                             continuous_update=False),
        "bytes_per_param": w.Dropdown(options=[("bf16 (2 B)", 2.0), ("int8 (1 B)", 1.0),
                                               ("4-bit (0.5 B)", 0.5)],
                                      value=bytes_per_param, description="weights"),
        "k": w.IntSlider(value=k, min=0, max=64, description="k", continuous_update=False),
        "gpu": w.Dropdown(options=list(gpus), value=gpu, description="GPU"),
    }
    return explorer(plot, controls, show_controls=show_controls)
