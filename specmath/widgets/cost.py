"""Chapter 1 explorer: how model size, weight precision and GPU move the ridge point."""

from __future__ import annotations

from .. import costmodel as cm
from ..plots.cost import forward_time_figure
from ._base import explorer

__all__ = ["cost_explorer", "cost_live"]


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
    return explorer(plot, controls, show_controls=show_controls,
                    live=lambda: cost_live(n_params_billion, bytes_per_param, k, gpu))


def cost_live(n_params_billion: float = 70.0, bytes_per_param: float = 2.0, k: int = 4,
              gpu: str = "H100 SXM (illustrative)", n_max: int = 4096) -> dict:
    """The website's live version of the explorer's figure (Vega-Lite; closed forms in the
    browser): the roofline time of one forward pass (ch. 1, eq. ch1-roofline)
    T(n) = max(P·b / bandwidth, 2·P·n / peak) against n, with n = k + 1 marked."""
    import numpy as np

    from ._live import panel_width, select, slider, top_level

    gpus = cm.ILLUSTRATIVE_GPUS

    def pick(attr: str) -> str:
        e = repr(float(getattr(gpus[-1], attr)))
        for hw in gpus[-2::-1]:
            e = f"if(gpu == {_js_str(hw.name)}, {float(getattr(hw, attr))!r}, {e})"
        return e

    n = np.unique(np.round(np.logspace(0, np.log10(n_max), 300))).astype(int)
    P = "pow(10, log_params) * 1e9"
    mem = f"{P} * bytes / ({pick('bandwidth')}) * 1e3"
    x = {"field": "n", "type": "quantitative", "scale": {"type": "log"},
         "title": "tokens scored in one forward pass, n"}
    y = {"field": "t", "type": "quantitative", "scale": {"type": "log"},
         "title": "time per forward pass (ms)"}
    layers = [
        ("memory_time", f"{mem}", {"strokeDash": [6, 3]}, "memory: bytes ÷ bandwidth"),
        ("compute_time", f"2 * {P} * datum.n / ({pick('peak_flops')}) * 1e3",
         {"strokeDash": [2, 2]}, "compute: 2·params·n ÷ peak"),
        ("forward_time", f"max({mem}, 2 * {P} * datum.n / ({pick('peak_flops')}) * 1e3)",
         {"strokeWidth": 3}, "model: the larger of the two"),
    ]
    panel = {
        "width": 2 * panel_width, "height": 280,
        "title": {"text": {"expr": "format(pow(10, log_params), '.3~g') + 'B parameters, ' "
                                   "+ gpu + ', ' + bytes + ' bytes per parameter'"}},
        "data": {"values": [{"n": int(v)} for v in n]},
        "layer": [{"name": name, "transform": [{"calculate": expr, "as": "t"}],
                   "mark": dict({"type": "line"}, **style),
                   "encoding": {"x": x, "y": y, "color": {"datum": label}}}
                  for name, expr, style, label in layers]
        + [{"name": "verify_point", "data": {"values": [{}]},
            "transform": [{"calculate": "k + 1", "as": "n"},
                          {"calculate": layers[2][1], "as": "t"}],
            "mark": {"type": "point", "filled": True, "size": 120, "stroke": "black"},
            "encoding": {"x": x, "y": y, "color": {"datum": "verify k drafts (n = k + 1)"}}}]}
    params = [slider("log_params", round(float(np.log10(n_params_billion)), 2), -1.0, 3.0, 0.05,
                     "parameters, log₁₀ of billions"),
              select("bytes", float(bytes_per_param), [2.0, 1.0, 0.5], "weights",
                     ["bf16 (2 B)", "int8 (1 B)", "4-bit (0.5 B)"]),
              slider("k", int(k), 0, 64, 1, "k (draft length)"),
              select("gpu", gpu, [hw.name for hw in gpus], "GPU")]
    return top_level(params, [panel],
                     "Forward-pass cost explorer: time of one forward pass against the tokens "
                     "it scores, memory floor and compute line, with the verification of k "
                     "drafts marked.")


def _js_str(s: str) -> str:
    """A Vega expression string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
