"""The temperature explorer (chapter 6): p, q and α as both models are tempered."""

from __future__ import annotations

import numpy as np

from ..acceptance import acceptance_probability
from ..distributions import softmax, top1_agreement
from ..plots.style import PALETTE, new_axes
from ..plots.temperature import alpha_temperature_curves, distribution_bars
from ..temperature import alpha_at_temperature, perturbed_logits, zipf_logits
from ._base import explorer

__all__ = ["default_logits", "temperature_figure", "temperature_explorer", "temperature_live"]


def default_logits(vocab_size: int = 40, exponent: float = 1.0, noise: float = 1.0, seed: int = 6):
    """A Zipf-like target and a noisy draft of it (the explorer's default pair)."""
    zp = zipf_logits(vocab_size, exponent)
    zq = perturbed_logits(zp, noise, np.random.default_rng(seed))
    return zp, zq


def temperature_figure(target_logits, draft_logits, T: float = 1.0, top: int = 15):
    """Left: p and q at temperature T. Right: α(T) over a log grid, the current T, and the
    T → 0 limit (top-1 agreement)."""
    fig, (left, right) = new_axes(ncols=2, width=9.5, height=3.6)
    p, q = softmax(target_logits, T), softmax(draft_logits, T)
    a = float(acceptance_probability(p, q))
    distribution_bars(p, q, ax=left, top=top, title=f"T = {T:.3g}: α = Σ min(p, q) = {a:.3f}")
    ts = np.logspace(-2, 2, 121)
    agree = float(top1_agreement(softmax(target_logits), softmax(draft_logits)))
    alpha_temperature_curves(ts, {"α(T)": alpha_at_temperature(target_logits, draft_logits, ts)},
                             limits={"α(T)": agree}, ax=right, mark_T=T if T > 0 else None)
    right.plot([max(T, 1e-2)], [a], marker="s", ms=9, mfc="none", color=PALETTE["dark"])
    right.set_title(f"top-1 agreement (T → 0 limit) = {agree:.0f}", fontsize=10)
    return fig


def temperature_explorer(target_logits=None, draft_logits=None, T: float = 1.0, top: int = 15,
                         show_controls: bool = True, noise: float = 1.0, seed: int = 6):
    """A temperature slider (log scale) redrawing :func:`temperature_figure`.

    With no logits given, the pair is :func:`default_logits` and two more sliders change
    the draft's noise and its random seed, so a reader can find pairs whose top tokens
    agree (α → 1 as T → 0) and pairs whose top tokens differ (α → 0).
    """
    import ipywidgets as w

    controls = {"T": w.FloatLogSlider(value=T, base=10, min=-2, max=2, step=0.05,
                                      description="T")}
    if target_logits is None or draft_logits is None:
        controls["noise"] = w.FloatSlider(value=noise, min=0.0, max=3.0, step=0.1,
                                          description="draft noise")
        controls["seed"] = w.IntSlider(value=seed, min=0, max=20, description="draft seed")

        def plot(T, noise, seed):
            zp, zq = default_logits(noise=noise, seed=seed)
            return temperature_figure(zp, zq, T, top)
    else:
        def plot(T):
            return temperature_figure(target_logits, draft_logits, T, top)
    live = None
    if (target_logits is None or draft_logits is None) and T > 0:
        live = lambda: temperature_live(T, top, noise, seed)  # noqa: E731
    return explorer(plot, controls, show_controls=show_controls, live=live)


def temperature_live(T: float = 1.0, top: int = 15, noise: float = 1.0, seed: int = 6,
                     seeds: int = 21) -> dict:
    """The website's live version of the default-pair explorer (Vega-Lite).

    The draft's noise is linear, z_q = z_p + noise·ε (:func:`specmath.temperature.
    perturbed_logits`), so only ε is precomputed, for seeds 0 … ``seeds − 1``; softmax at T,
    α = Σ min(p, q), α(T) over the log grid and the top-1 agreement are evaluated in the
    browser (ch. 6, eq. alpha-T). The site's T slider is log₁₀ T.
    """
    from ._live import panel_width, slider, top_level

    zp, _ = default_logits()
    rows = []
    for sd in range(seeds):
        eps = default_logits(noise=1.0, seed=sd)[1] - zp
        rows += [{"sd": sd, "i": i, "zp": round(float(a), 15), "eps": round(float(e), 15)}
                 for i, (a, e) in enumerate(zip(zp, eps, strict=True))]
    base = [{"filter": "datum.sd == seed"},
            {"calculate": "datum.zp + noise * datum.eps", "as": "zq"}]

    def soft(t: str, group: list[str]) -> list[dict]:
        g = {"groupby": group} if group else {}
        return [{"calculate": f"datum.zp / {t}", "as": "a"},
                {"calculate": f"datum.zq / {t}", "as": "b"},
                dict({"joinaggregate": [{"op": "max", "field": "a", "as": "amax"},
                                        {"op": "max", "field": "b", "as": "bmax"}]}, **g),
                {"calculate": "exp(datum.a - datum.amax)", "as": "ea"},
                {"calculate": "exp(datum.b - datum.bmax)", "as": "eb"},
                dict({"joinaggregate": [{"op": "sum", "field": "ea", "as": "sa"},
                                        {"op": "sum", "field": "eb", "as": "sb"}]}, **g),
                {"calculate": "datum.ea / datum.sa", "as": "p"},
                {"calculate": "datum.eb / datum.sb", "as": "q"},
                {"calculate": "min(datum.p, datum.q)", "as": "m"}]

    here = base + soft("pow(10, log_T)", []) + [
        {"joinaggregate": [{"op": "sum", "field": "m", "as": "alpha"}]}]
    x = {"field": "i", "type": "quantitative", "title": "token (sorted by target probability)",
         "scale": {"domain": [-0.5, top - 0.5]}, "axis": {"tickMinStep": 1}}
    y = {"type": "quantitative", "title": "probability"}
    left = {"width": panel_width, "height": 240, "data": {"values": rows},
            "transform": here + [{"filter": f"datum.i < {int(top)}"}],
            "title": {"text": {"expr": "'T = ' + format(pow(10, log_T), '.3g')"
                                       " + ': α = Σ min(p, q)'"}},
            "layer": [
                {"name": "target_bars", "mark": {"type": "bar", "size": 6, "xOffset": -3},
                 "encoding": {"x": x, "y": dict(y, field="p"), "color": {"datum": "target p"}}},
                {"name": "draft_bars", "mark": {"type": "bar", "size": 6, "xOffset": 3},
                 "encoding": {"x": x, "y": dict(y, field="q"), "color": {"datum": "draft q"}}},
                {"name": "overlap", "mark": {"type": "line", "interpolate": "step",
                                             "color": "black", "strokeWidth": 1.2},
                 "encoding": {"x": x, "y": dict(y, field="m")}},
            ]}
    n_t = 121
    curve = base + [{"calculate": f"sequence(0, {n_t})", "as": "ti"}, {"flatten": ["ti"]},
                    {"calculate": f"pow(10, -2 + 4 * datum.ti / {n_t - 1})", "as": "T"}] + \
        soft("datum.T", ["ti"]) + [
        {"aggregate": [{"op": "sum", "field": "m", "as": "alpha"}], "groupby": ["T"]}]
    xt = {"field": "T", "type": "quantitative", "scale": {"type": "log", "domain": [0.01, 100]},
          "title": "temperature T (log scale)"}
    yt = {"type": "quantitative", "title": "acceptance probability α(T)",
          "scale": {"domain": [-0.02, 1.02]}}
    agree = base + [{"joinaggregate": [{"op": "max", "field": "zp", "as": "pmax"},
                                       {"op": "max", "field": "zq", "as": "qmax"}]},
                    {"filter": "datum.zp == datum.pmax"},
                    {"calculate": "if(datum.zq == datum.qmax, 1, 0)", "as": "agree"}]
    right = {"width": panel_width, "height": 240, "data": {"values": rows},
             "title": "α(T); dotted: top-1 agreement (T → 0)",
             "layer": [
                 {"name": "alpha_by_T", "transform": curve,
                  "mark": {"type": "line", "strokeWidth": 2},
                  "encoding": {"x": xt, "y": dict(yt, field="alpha"), "color": {"datum": "α(T)"}}},
                 {"name": "top1_agreement", "transform": agree,
                  "mark": {"type": "rule", "strokeDash": [2, 2]},
                  "encoding": {"y": dict(yt, field="agree"),
                               "color": {"datum": "top-1 agreement"}}},
                 {"name": "this_T", "transform": here + [
                     {"aggregate": [{"op": "max", "field": "alpha", "as": "alpha"}]},
                     {"calculate": "pow(10, log_T)", "as": "T"}],
                  "mark": {"type": "point", "shape": "square", "size": 120, "filled": False,
                           "strokeWidth": 2, "color": "black"},
                  "encoding": {"x": xt, "y": dict(yt, field="alpha"),
                               "tooltip": [{"field": "alpha", "format": ".3f", "title": "α"}]}},
             ]}
    params = [slider("log_T", float(np.log10(T)), -2.0, 2.0, 0.05, "temperature, log₁₀ T"),
              slider("noise", noise, 0.0, 3.0, 0.1, "draft noise"),
              slider("seed", int(seed), 0, seeds - 1, 1, "draft seed")]
    return top_level(params, [left, right],
                     "Temperature explorer: target and draft probabilities at temperature T "
                     "with their overlap, and the acceptance probability α against T.")
