"""An in-browser speedup calculator (chapter 5) that needs no kernel.

On the website the ipywidgets explorers are frozen (there is no Python behind the page);
this calculator is plain HTML and JavaScript, so it works on the static site, offline, in
Colab and in Jupyter alike. For α, k and c it shows

* E[N] = (1 − α^(k+1)) / (1 − α), k + 1 at α = 1 (ch. 4, eq. expected-tokens),
* S = E[N] / (1 + k/c) (ch. 5, eq. speedup),
* the best k in 0 … 64 by brute force, ties to the smaller k, exactly like
  :func:`specmath.optimal_k`,

and a small SVG plot of S over k. The formulas are written in JavaScript once, in
:data:`FORMULAS_JS`, which defines ``window.specmathCalculator`` (``expectedTokens``,
``speedup``, ``optimalK``); ``tests/site`` checks them in a real browser against specmath
on a grid of inputs.
"""

from __future__ import annotations

import html
import json
import uuid

from ._validate import as_count, as_positive, as_probability

__all__ = ["speedup_calculator", "calculator_html", "FORMULAS_JS", "K_MAX"]

#: The largest draft length searched for the best k (specmath.optimal_k's default).
K_MAX = 64

#: The formulas, in JavaScript, written once. Same floating-point recipe as
#: specmath.speedup: (1 − α^(k+1))/(1 − α) computed as −expm1((k+1) ln α)/(1 − α), exact
#: near α = 1; α = 0 gives ln 0 = −∞ and −expm1(−∞) = 1; α = 1 is the limit k + 1.
FORMULAS_JS = r"""
window.specmathCalculator = (function () {
  "use strict";
  function expectedTokens(alpha, k) {
    if (alpha >= 1) { return k + 1; }
    return -Math.expm1((k + 1) * Math.log(alpha)) / (1 - alpha);
  }
  function speedup(alpha, k, c) {
    return expectedTokens(alpha, k) / (1 + k / c);
  }
  function optimalK(alpha, c, kMax) {
    if (kMax === undefined) { kMax = @K_MAX@; }
    var best = 0, bestS = speedup(alpha, 0, c);
    for (var k = 1; k <= kMax; k++) {
      var s = speedup(alpha, k, c);
      if (s > bestS) { best = k; bestS = s; }   /* strict: ties go to the smaller k */
    }
    return best;
  }
  function validate(alpha, k, c) {
    if (!(alpha >= 0 && alpha <= 1)) { return "α must be a number in [0, 1]"; }
    if (!(Number.isInteger(k) && k >= 0 && k <= @K_MAX@)) {
      return "k must be a whole number from 0 to @K_MAX@";
    }
    if (!(c > 0) || !isFinite(c)) { return "c must be a positive number"; }
    return "";
  }
  return {expectedTokens: expectedTokens, speedup: speedup, optimalK: optimalK,
          validate: validate, K_MAX: @K_MAX@};
})();
""".replace("@K_MAX@", str(K_MAX))

# The widget: read the inputs, show the numbers, draw S over k. Formulas come only from
# window.specmathCalculator above.
_WIDGET_JS = r"""
(function () {
  "use strict";
  var root = document.getElementById(@ID@);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var F = window.specmathCalculator;
  var colours = @COLOURS@;
  function q(sel) { return root.querySelector(sel); }
  var pairs = {alpha: [q(".smc-alpha-range"), q(".smc-alpha")],
               k: [q(".smc-k-range"), q(".smc-k")],
               c: [q(".smc-c-range"), q(".smc-c")]};
  function fmt(x) { return x.toFixed(3); }
  function setOut(cls, x, text) {
    var el = q(cls);
    el.textContent = text === undefined ? fmt(x) : text;
    el.dataset.value = String(x);
  }
  function svgEl(name, attrs, text) {
    var el = document.createElementNS("http://www.w3.org/2000/svg", name);
    for (var a in attrs) { el.setAttribute(a, attrs[a]); }
    if (text !== undefined) { el.textContent = text; }
    return el;
  }
  function niceStep(span) {
    var raw = span / 5, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
  }
  function draw(alpha, k, c, best) {
    var svg = q("svg");
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var W = 480, H = 270, L = 50, R = 14, T = 28, B = 40;
    var kTop = Math.min(@K_MAX@, Math.max(16, k + 4, best + 4));
    var ks = [], ss = [], sMax = 1;
    for (var j = 0; j <= kTop; j++) {
      var s = F.speedup(alpha, j, c); ks.push(j); ss.push(s); if (s > sMax) { sMax = s; }
    }
    var yTop = sMax * 1.1;
    function X(v) { return L + (W - L - R) * v / kTop; }
    function Y(v) { return H - B - (H - T - B) * v / yTop; }
    svg.appendChild(svgEl("rect", {x: 0, y: 0, width: W, height: H, fill: "#ffffff"}));
    var ink = "#222222", grid = "#dddddd";
    var ystep = niceStep(yTop);
    for (var yv = 0; yv <= yTop + 1e-9; yv += ystep) {
      svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: Y(yv), y2: Y(yv), stroke: grid}));
      svg.appendChild(svgEl("text", {x: L - 6, y: Y(yv) + 4, "text-anchor": "end",
        "font-size": 11, fill: ink}, +yv.toFixed(6) + ""));
    }
    var xstep = kTop <= 20 ? 2 : kTop <= 40 ? 5 : 10;
    for (var xv = 0; xv <= kTop; xv += xstep) {
      svg.appendChild(svgEl("text", {x: X(xv), y: H - B + 16, "text-anchor": "middle",
        "font-size": 11, fill: ink}, String(xv)));
    }
    svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: ink}));
    svg.appendChild(svgEl("line", {x1: L, x2: L, y1: T, y2: H - B, stroke: ink}));
    svg.appendChild(svgEl("text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle",
      "font-size": 12, fill: ink}, "draft length k"));
    svg.appendChild(svgEl("text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle",
      "font-size": 12, fill: ink, transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"},
      "speedup S"));
    svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: Y(1), y2: Y(1), stroke: colours.grey,
      "stroke-dasharray": "5 4"}));
    svg.appendChild(svgEl("text", {x: W - R - 4, y: Y(1) - 4, "text-anchor": "end",
      "font-size": 10, fill: ink}, "S = 1 (no gain)"));
    // legend, above the plotting area
    svg.appendChild(svgEl("circle", {cx: L + 8, cy: 12, r: 5, fill: colours.current}));
    svg.appendChild(svgEl("text", {x: L + 18, y: 16, "font-size": 11, fill: ink},
      "S at your k"));
    svg.appendChild(svgEl("rect", {x: L + 102, y: 6, width: 12, height: 12, fill: "none",
      stroke: colours.best, "stroke-width": 2}));
    svg.appendChild(svgEl("text", {x: L + 120, y: 16, "font-size": 11, fill: ink},
      "best k"));
    svg.appendChild(svgEl("line", {x1: L + 180, x2: L + 204, y1: 12, y2: 12,
      stroke: colours.line, "stroke-width": 2}));
    svg.appendChild(svgEl("text", {x: L + 210, y: 16, "font-size": 11, fill: ink},
      "S(k) for this α and c"));
    var pts = ks.map(function (kk, i) { return X(kk) + "," + Y(ss[i]); }).join(" ");
    svg.appendChild(svgEl("polyline", {points: pts, fill: "none", stroke: colours.line,
      "stroke-width": 2}));
    if (best <= kTop) {
      var bx = X(best), by = Y(F.speedup(alpha, best, c));
      svg.appendChild(svgEl("rect", {x: bx - 6, y: by - 6, width: 12, height: 12,
        fill: "none", stroke: colours.best, "stroke-width": 2, class: "smc-best-marker"}));
    }
    svg.appendChild(svgEl("circle", {cx: X(k), cy: Y(F.speedup(alpha, k, c)), r: 5,
      fill: colours.current, class: "smc-current-marker"}));
    svg.setAttribute("aria-label", "Speedup S over draft length k from 0 to " + kTop +
      " for α = " + alpha + " and c = " + c + "; the best k is " + best + ".");
  }
  function update(source) {
    ["alpha", "k", "c"].forEach(function (name) {
      var pr = pairs[name];
      if (source === pr[0]) { pr[1].value = pr[0].value; }
    });
    var alpha = parseFloat(pairs.alpha[1].value), k = Number(pairs.k[1].value),
        c = parseFloat(pairs.c[1].value);
    ["alpha", "k", "c"].forEach(function (name) {
      var pr = pairs[name];
      if (source !== pr[0] && pr[1].value !== "") { pr[0].value = pr[1].value; }
    });
    var err = F.validate(alpha, k, c);
    q(".smc-error").textContent = err;
    root.dataset.state = err ? "error" : "ok";
    if (err) { return; }
    var best = F.optimalK(alpha, c);
    setOut(".smc-en", F.expectedTokens(alpha, k));
    setOut(".smc-s", F.speedup(alpha, k, c));
    setOut(".smc-bestk", best, String(best));
    setOut(".smc-bests", F.speedup(alpha, best, c));
    draw(alpha, k, c, best);
  }
  ["alpha", "k", "c"].forEach(function (name) {
    pairs[name].forEach(function (el) {
      el.addEventListener("input", function () { update(el); });
      el.addEventListener("change", function () { update(el); });
    });
  });
  update(null);
})();
"""

_STYLE = """
.specmath-calculator { border: 1px solid #bbb; border-radius: 6px; padding: .8em 1em;
  margin: 1em 0; max-width: 44em; }
.specmath-calculator .smc-controls { display: grid; grid-template-columns: 11em 1fr 6.5em;
  gap: .3em .8em; align-items: center; }
.specmath-calculator input[type=number] { width: 6.5em; }
.specmath-calculator .smc-results { margin: .6em 0; font-variant-numeric: tabular-nums; }
.specmath-calculator .smc-error { color: #D55E00; font-weight: 600; }
.specmath-calculator svg { width: 100%; max-width: 40em; height: auto; display: block; }
"""


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) else str(int(x))


def calculator_html(alpha: float = 0.8, k: int = 4, c: float = 10.0) -> str:
    """The calculator as a self-contained HTML string (markup, style and script).

    Parameters
    ----------
    alpha : float
        Initial acceptance probability α, in [0, 1].
    k : int
        Initial draft length, 0 … 64.
    c : float
        Initial speed ratio (target time per token ÷ draft time per token), > 0 and finite.
    """
    a = float(as_probability(alpha, "alpha"))
    kk = int(as_count(k, "k"))
    if kk > K_MAX:
        raise ValueError(f"k must be an integer in 0 … {K_MAX}; got {kk}")
    cc = float(as_positive(c, "c", allow_inf=False))
    from .plots.style import PALETTE

    uid = "smc-" + uuid.uuid4().hex[:10]
    colours = json.dumps({"line": PALETTE["target"], "current": PALETTE["residual"],
                          "best": PALETTE["overlap"], "grey": PALETTE["grey"]})
    widget_js = (_WIDGET_JS.replace("@ID@", json.dumps(uid)).replace("@COLOURS@", colours)
                 .replace("@K_MAX@", str(K_MAX)))
    e = html.escape

    def row(name: str, label: str, rng: tuple[str, str, str], value: str, num_min: str,
            num_max: str) -> str:
        lo, hi, step = rng
        return (f'<label for="{uid}-{name}">{label}</label>'
                f'<input type="range" class="smc-{name}-range" min="{lo}" max="{hi}" '
                f'step="{step}" value="{value}" aria-label="{e(label)} slider">'
                f'<input type="number" id="{uid}-{name}" class="smc-{name}" min="{num_min}" '
                f'max="{num_max}" step="any" value="{value}">')

    controls = "".join([
        row("alpha", "α (acceptance probability)", ("0", "1", "0.01"), _fmt(a), "0", "1"),
        row("k", "k (draft length)", ("0", "32", "1"), str(kk), "0", str(K_MAX)),
        row("c", "c (draft speed ratio)", ("1", "100", "0.5"), _fmt(cc), "0", ""),
    ])
    return f"""<div class="specmath-calculator" id="{uid}">
<style>{_STYLE}</style>
<div class="smc-controls">{controls}</div>
<div class="smc-results" aria-live="polite">
E[N] = <output class="smc-en">…</output> tokens per iteration ·
S = <output class="smc-s">…</output> ·
best k = <output class="smc-bestk">…</output> (S = <output class="smc-bests">…</output>)
<div class="smc-error" role="alert"></div>
</div>
<svg class="smc-plot" viewBox="0 0 480 270" role="img" aria-label="Speedup over k"></svg>
<noscript>This calculator needs JavaScript.</noscript>
</div>
<script>{FORMULAS_JS}{widget_js}</script>
"""


def speedup_calculator(alpha: float = 0.8, k: int = 4, c: float = 10.0):
    """Return an IPython HTML object with the kernel-free speedup calculator (chapter 5).

    Use it in a ``remove-input`` cell::

        from specmath.calculator import speedup_calculator
        speedup_calculator()

    See :func:`calculator_html` for the parameters (the initial values of the inputs).
    """
    from IPython.display import HTML

    return HTML(calculator_html(alpha, k, c))
