/* specmath explorers on the website (no kernel).
 *
 * An explorer cell's outputs are: the default figure (an image), the ipywidgets controls
 * (frozen here: no kernel) and a hidden `.specmath-live` div emitted by
 * specmath.widgets.explorer. When that div carries a Vega-Lite spec, render it with the
 * vendored vega-embed (_static/vendor/vega/) and show it in place of the figure: its
 * sliders recompute the chart in the browser. The frozen ipywidgets controls of every
 * explorer are hidden by specmath-explorers.css, so no control pretends to be live.
 * Without JavaScript, or if Vega fails, the default figure stays.
 */
(function () {
  "use strict";
  var root = document.documentElement.getAttribute("data-content_root") || "./";
  var base = new URL(root + "_static/vendor/vega/", document.baseURI).href;

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  function loadVegaEmbed() {
    // Pages with widgets load RequireJS, and the Vega UMD builds then register as AMD
    // modules instead of globals: load them through RequireJS there.
    if (typeof window.define === "function" && window.define.amd && window.require &&
        window.require.config) {
      window.require.config({paths: {
        "vega": base + "vega.min", "vega-lite": base + "vega-lite.min",
        "vega-embed": base + "vega-embed.min"}});
      return new Promise(function (resolve, reject) {
        window.require(["vega-embed"], resolve, reject);
      });
    }
    if (window.vegaEmbed) { return Promise.resolve(window.vegaEmbed); }
    return loadScript(base + "vega.min.js")
      .then(function () { return loadScript(base + "vega-lite.min.js"); })
      .then(function () { return loadScript(base + "vega-embed.min.js"); })
      .then(function () { return window.vegaEmbed; });
  }

  function render(embed, live) {
    var spec = JSON.parse(live.querySelector("script.specmath-live-spec").textContent);
    var out = live.closest(".cell_output") || live.parentElement;
    var chart = document.createElement("div");
    chart.className = "specmath-live-chart";
    live.appendChild(chart);
    // Two panels side by side where they fit, stacked and narrowed on a small screen.
    var avail = out.clientWidth || window.innerWidth;
    var fit = function (panel) { panel.width = Math.max(160, Math.min(panel.width, avail - 90)); };
    if (avail < 680) {
      spec.config = spec.config || {};
      spec.config.title = Object.assign({}, spec.config.title, {fontSize: 11, limit: avail - 70});
    }
    if (spec.concat) {
      // side by side needs both panels plus their axes and legends (about 180 px)
      var need = spec.concat.reduce(function (w, p) { return w + p.width; }, 0) + 180;
      if (avail < need) { spec.columns = 1; }
      spec.concat.forEach(fit);
    } else { fit(spec); }
    return embed(chart, spec, {actions: false, renderer: "svg"}).then(function (result) {
      live.hidden = false;
      live.style.display = "";
      out.classList.add("specmath-live-on");
      live.specmathView = result.view;
      // Name each control's input by its visible label (screen readers; axe).
      live.querySelectorAll(".vega-bind").forEach(function (bind) {
        var name = bind.querySelector(".vega-bind-name");
        var input = bind.querySelector("input, select");
        if (name && input && !input.getAttribute("aria-label")) {
          input.setAttribute("aria-label", name.textContent.trim());
        }
      });
      live.setAttribute("data-specmath-live", "ready");
    });
  }

  function start() {
    var lives = Array.prototype.filter.call(document.querySelectorAll(".specmath-live"),
      function (el) { return el.querySelector("script.specmath-live-spec"); });
    if (!lives.length) { return; }
    loadVegaEmbed().then(function (embed) {
      return Promise.all(lives.map(function (live) {
        return render(embed, live).catch(function (err) {
          live.setAttribute("data-specmath-live", "failed");
          console.error("specmath explorer:", err);
        });
      }));
    }).catch(function (err) { console.error("specmath explorers: vega did not load:", err); });
  }

  // After window load: RequireJS (when the page has widgets) is then in place.
  if (document.readyState === "complete") { start(); } else {
    window.addEventListener("load", start);
  }
})();
