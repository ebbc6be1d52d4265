"""Chapter 3 explorer: a draft against a fixed target, its overlap α and TV."""

from __future__ import annotations

from ..acceptance import acceptance_probability
from ..tv import best_guess_accuracy, overlap_pair
from ._base import explorer

__all__ = ["overlap_figure", "overlap_explorer", "overlap_live"]


def overlap_figure(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0):
    """Two panels: p, q and min(p, q) shaded; α and TV as the draft is mixed toward p."""
    from ..plots import new_axes
    from ..plots.overlap import plot_alpha_vs_weight, plot_overlap

    p, q = overlap_pair(shift, temperature, weight)
    p0, q0 = overlap_pair(shift, temperature, 0.0)
    fig, (ax1, ax2) = new_axes(ncols=2, width=10.0, height=3.8)
    a = acceptance_probability(p, q)
    guess = best_guess_accuracy(p, q)
    plot_overlap(p, q, ax=ax1,
                 title=f"α = {a:.3f}, TV = {1 - a:.3f}, best guess right {guess:.3f}")
    plot_alpha_vs_weight(p0, q0, ax=ax2, mark=weight)
    ax2.set_title("mixing this draft toward the target")
    return fig


def overlap_explorer(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0,
                     show_controls: bool = True):
    """Sliders for the draft's shift, temperature and mixing weight (ch. 3 explorer)."""
    import ipywidgets as w

    controls = {
        "shift": w.FloatSlider(value=shift, min=-4.0, max=4.0, step=0.25, description="shift"),
        "temperature": w.FloatSlider(value=temperature, min=0.25, max=3.0, step=0.05,
                                     description="temperature"),
        "weight": w.FloatSlider(value=weight, min=0.0, max=1.0, step=0.05,
                                description="mix weight w"),
    }
    return explorer(overlap_figure, controls, show_controls=show_controls,
                    live=lambda: overlap_live(shift, temperature, weight))


def overlap_live(shift: float = 1.0, temperature: float = 1.0, weight: float = 0.0) -> dict:
    """The website's live version of :func:`overlap_figure` (Vega-Lite; closed forms in the
    browser): the draft of :func:`specmath.tv.overlap_pair` (bump logits shifted, softmax at
    the temperature, mixed toward p), min(p, q), α = Σ min(p, q) and TV = 1 − α (ch. 3)."""
    from ..tv import _CENTERS, _HEIGHTS, _V, _WIDTH, overlap_pair
    from ._live import panel_width, slider, top_level

    p, _ = overlap_pair(0.0, 1.0, 0.0)
    dens = " + ".join(f"{h!r} * exp(-0.5 * pow((datum.x - {c!r} - shift) / {_WIDTH!r}, 2))"
                      for c, h in zip(_CENTERS, _HEIGHTS, strict=True))
    draft = [{"calculate": dens, "as": "dens"},
             {"joinaggregate": [{"op": "max", "field": "dens", "as": "dmax"}]},
             {"calculate": "log(datum.dens + 1e-3 * datum.dmax) / temperature", "as": "z"},
             {"joinaggregate": [{"op": "max", "field": "z", "as": "zmax"}]},
             {"calculate": "exp(datum.z - datum.zmax)", "as": "e"},
             {"joinaggregate": [{"op": "sum", "field": "e", "as": "esum"}]},
             {"calculate": "datum.e / datum.esum", "as": "q0"},
             {"calculate": "(1 - weight) * datum.q0 + weight * datum.p", "as": "q"},
             {"calculate": "min(datum.p, datum.q)", "as": "m"},
             {"joinaggregate": [{"op": "sum", "field": "m", "as": "alpha"}]}]
    tokens = {"values": [{"x": i, "p": round(float(v), 15)} for i, v in enumerate(p)]}
    x = {"field": "x", "type": "quantitative", "title": "token",
         "scale": {"domain": [-0.5, _V - 0.5]}, "axis": {"tickMinStep": 1}}
    y = {"type": "quantitative", "title": "probability"}
    left = {"width": panel_width, "height": 240, "data": tokens, "transform": draft,
            "title": "p, q and their overlap min(p, q)",
            "layer": [
                {"name": "overlap", "mark": {"type": "bar", "size": 16, "opacity": 0.45},
                 "encoding": {"x": x, "y": dict(y, field="m"),
                              "color": {"datum": "min(p, q): α is its area"}}},
                {"name": "target", "mark": {"type": "line", "interpolate": "step",
                                            "strokeWidth": 2},
                 "encoding": {"x": x, "y": dict(y, field="p"), "color": {"datum": "target p"}}},
                {"name": "draft", "mark": {"type": "line", "interpolate": "step",
                                           "strokeWidth": 2, "strokeDash": [5, 3]},
                 "encoding": {"x": x, "y": dict(y, field="q"), "color": {"datum": "draft q"}}},
            ]}
    n = 41
    weights = [{"calculate": f"sequence(0, {n})", "as": "wi"}, {"flatten": ["wi"]},
               {"calculate": f"datum.wi / {n - 1}", "as": "w"},
               {"calculate": "min(datum.p, (1 - datum.w) * datum.q0 + datum.w * datum.p)",
                "as": "mw"},
               {"aggregate": [{"op": "sum", "field": "mw", "as": "alpha_w"}],
                "groupby": ["w"]},
               {"calculate": "1 - datum.alpha_w", "as": "tv_w"}]
    xw = {"field": "w", "type": "quantitative", "scale": {"domain": [0, 1]},
          "title": "mixing weight w (0 = original draft, 1 = target)"}
    yw = dict(y, scale={"domain": [0, 1.02]})
    right = {"width": panel_width, "height": 240, "data": tokens,
             "title": {"text": {"expr": "'mixing this draft toward the target (w = '"
                                        " + format(weight, '.2f') + ')'"}},
             "layer": [
                 {"name": "alpha_by_weight", "transform": draft + weights,
                  "mark": {"type": "line", "strokeWidth": 2},
                  "encoding": {"x": xw, "y": dict(yw, field="alpha_w"), "color": {"datum": "α(w)"}}},
                 {"name": "tv_by_weight", "transform": draft + weights,
                  "mark": {"type": "line", "strokeWidth": 2, "strokeDash": [5, 3]},
                  "encoding": {"x": xw, "y": dict(yw, field="tv_w"),
                               "color": {"datum": "TV(w) = 1 − α(w)"}}},
                 {"name": "this_draft", "transform": draft + [
                     {"aggregate": [{"op": "max", "field": "alpha", "as": "alpha"}]},
                     {"calculate": "weight", "as": "w"}],
                  "mark": {"type": "point", "filled": True, "size": 80, "color": "black"},
                  "encoding": {"x": xw, "y": dict(yw, field="alpha"),
                               "tooltip": [{"field": "alpha", "format": ".3f", "title": "α"}]}},
             ]}
    params = [slider("shift", shift, -4.0, 4.0, 0.25, "draft shift"),
              slider("temperature", temperature, 0.25, 3.0, 0.05, "draft temperature"),
              slider("weight", weight, 0.0, 1.0, 0.05, "mix weight w")]
    spec = top_level(params, [left, right],
                     "Overlap explorer: target p and draft q over 12 tokens with their overlap "
                     "min(p, q), and α and TV as the draft is mixed toward the target.")
    return spec
