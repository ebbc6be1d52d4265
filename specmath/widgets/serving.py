"""The batch-size explorer of chapter 11: speedup against B for α, k, context and GPU."""

from __future__ import annotations

from .. import costmodel as cm
from ..plots.serving import plot_batch_speedup
from ._base import explorer

__all__ = ["batch_figure", "batch_explorer", "batch_live"]


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
                    controls, show_controls=show_controls,
                    live=lambda: batch_live(target, draft, alpha, k, context, gpu))


def batch_live(target, draft, alpha: float = 0.8, k: int = 5, context: int = 0,
               gpu: str = "H100", k_max: int = 16) -> dict:
    """The website's live version of :func:`batch_figure` (Vega-Lite; closed forms in the
    browser): S_B = E[N] T_t(B, 1) / (k T_d(B, 1) + T_t(B, k + 1)) with the batched
    roofline pass time T(B, m) = max((P b + B KV(context)) / W, B m (2P + A(context)) / F)
    (ch. 11, eqs. ch11-SB and ch11-batch-pass; 2-byte weights and KV cache), for k = 1, your
    k and 8, and the best k ∈ 0 … k_max at each B."""
    import numpy as np

    from ._live import panel_width, select, slider, top_level

    hws = {h.name.split()[0]: h for h in cm.ILLUSTRATIVE_GPUS}

    def pick(attr: str) -> str:
        names = list(hws)
        e = repr(float(getattr(hws[names[-1]], attr)))
        for n in names[-2::-1]:
            e = f"if(gpu == '{n}', {float(getattr(hws[n], attr))!r}, {e})"
        return e

    W, F = pick("bandwidth"), pick("peak_flops")

    def T(model, m: str) -> str:
        ctx = "context" if model.kv_window is None else f"min(context, {int(model.kv_window)})"
        kv = f"{4.0 * model.layers * model.kv_heads * model.head_dim!r} * {ctx}"
        attn = f"{4.0 * model.layers * model.q_heads * model.head_dim!r} * {ctx}"
        P = repr(float(model.params))
        return (f"max(({P} * 2 + datum.B * {kv}) / ({W}), "
                f"datum.B * ({m}) * (2 * {P} + {attn}) / ({F}))")

    def S(kk: str) -> str:
        en = f"if(alpha >= 1, {kk} + 1, (1 - pow(alpha, {kk} + 1)) / (1 - alpha))"
        return f"{en} * {T(target, '1')} / ({kk} * {T(draft, '1')} + {T(target, kk + ' + 1')})"

    Bs = np.unique(np.round(np.logspace(0, 10, 200, base=2)).astype(int))
    x = {"field": "B", "type": "quantitative", "scale": {"type": "log", "base": 2},
         "title": "batch size B"}
    y = {"field": "S", "type": "quantitative", "title": "speedup over plain decoding at B"}

    def line(name, kexpr, label, mark):
        return {"name": name, "transform": [{"calculate": S(kexpr), "as": "S"}],
                "mark": dict({"type": "line", "strokeWidth": 2}, **mark),
                "encoding": {"x": x, "y": y, "color": {"datum": label}}}

    panel = {"width": 2 * panel_width, "height": 280,
             "data": {"values": [{"B": int(b)} for b in Bs]},
             "title": {"text": {"expr": "gpu + ', α = ' + format(alpha, '.2f') + ', k = ' + k"
                                        " + ', context ' + context"}},
             "layer": [
                 line("k_1", "1", "k = 1", {"strokeDash": [2, 2]}),
                 line("k_yours", "k", "your k", {}),
                 line("k_8", "8", "k = 8", {"strokeDash": [6, 3]}),
                 {"name": "best_k", "transform": [
                     {"calculate": f"sequence(0, {k_max + 1})", "as": "kk"},
                     {"flatten": ["kk"]},
                     {"calculate": S("datum.kk"), "as": "Sk"},
                     {"aggregate": [{"op": "max", "field": "Sk", "as": "S"}], "groupby": ["B"]}],
                  "mark": {"type": "line", "strokeWidth": 5, "opacity": 0.4},
                  "encoding": {"x": x, "y": y, "color": {"datum": "best k at each B"}}},
                 {"data": {"values": [{}]}, "mark": {"type": "rule", "color": "black"},
                  "encoding": {"y": {"datum": 1, "type": "quantitative"}}},
             ]}
    params = [slider("alpha", alpha, 0.3, 0.98, 0.01, "α (acceptance probability)"),
              slider("k", int(k), 1, 12, 1, "k (draft length)"),
              slider("context", int(context), 0, 65536, 1024, "context (tokens)"),
              select("gpu", gpu, list(hws), "GPU")]
    return top_level(params, [panel],
                     "Batch explorer: speedup of speculative decoding over plain decoding "
                     "against batch size, for several draft lengths and the best one.")
