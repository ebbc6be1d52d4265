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
