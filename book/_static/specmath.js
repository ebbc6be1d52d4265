/* specmath site script.
 *
 * The Jupyter widget manager (@jupyter-widgets/html-manager 1.x) typesets widget labels
 * with the MathJax 2 API, `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])`; the site
 * uses MathJax 3, which has no `Hub`, so that call would throw. Provide the one call it
 * needs, forwarded to MathJax 3's typesetPromise. Installed once the deferred MathJax
 * script has run (DOMContentLoaded), before the widget manager renders (window load).
 */
(function () {
  "use strict";
  function installHubShim() {
    var mj = window.MathJax;
    if (!mj || mj.Hub || typeof mj !== "object") {
      return;
    }
    mj.Hub = {
      Queue: function () {
        for (var i = 0; i < arguments.length; i++) {
          var job = arguments[i];
          if (Array.isArray(job) && job[0] === "Typeset" && job[2]) {
            var el = job[2];
            var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
            ready.then(function () {
              return mj.typesetPromise ? mj.typesetPromise([el]) : null;
            }).catch(function (err) { console.warn("MathJax typeset of a widget label:", err); });
          }
        }
      },
    };
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", installHubShim);
  } else {
    installHubShim();
  }
})();

/* Wide display equations: MathJax 3 does not break lines, so an equation wider than the
 * text column would run under its equation number. Scroll it (CSS, specmath.css) and,
 * first, shrink it to fit the column, down to 70 % of the font size. */
(function () {
  "use strict";
  function fitDisplayMath() {
    var all = document.querySelectorAll('mjx-container[jax="CHTML"][display="true"]');
    for (var i = 0; i < all.length; i++) {
      var m = all[i];
      m.style.fontSize = "";
      var avail = m.clientWidth, need = m.scrollWidth;
      if (avail > 0 && need > avail + 1) {
        m.style.fontSize = Math.max(70, Math.floor(100 * avail / need)) + "%";
      }
    }
  }
  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(fitDisplayMath);
      var timer = null;
      window.addEventListener("resize", function () {
        clearTimeout(timer);
        timer = setTimeout(fitDisplayMath, 150);
      });
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
})();

