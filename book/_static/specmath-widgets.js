/* Loaded between RequireJS and @jupyter-widgets/html-manager's embed-amd.js (see
 * scripts/sphinx_specmath_site.py). The manager finds its font files relative to its AMD
 * module's URL; point that module at the vendored copy in _static/vendor/html-manager so
 * the fonts load from this site, whatever the page's depth. */
(function () {
  "use strict";
  if (typeof window.require === "undefined" || !window.require.config) { return; }
  var root = document.documentElement.getAttribute("data-content_root") || "./";
  var base = new URL(root + "_static/vendor/html-manager", document.baseURI).href;
  window.require.config({paths: {"@jupyter-widgets/html-manager/dist": base}});
})();
