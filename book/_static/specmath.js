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
 * text column would run under its equation number. First shrink it to fit the column,
 * down to 70 % of the font size. One still too wide (on a phone) is marked
 * `specmath-scrolls`: specmath.css then puts its number on its own line under it (never
 * beside a hidden part) and gives it the whole column; if even that is too narrow, it
 * scrolls, and a shadow on the edge it scrolls towards shows there is more of it. */
(function () {
  "use strict";
  var MIN = 70, MIN_SCROLLING = 80;
  function fitOne(m) {
    var box = m.parentElement;
    m.style.fontSize = "";
    if (box && box.classList) { box.classList.remove("specmath-scrolls"); }
    var avail = m.clientWidth, need = m.scrollWidth;
    if (!(avail > 0) || need <= avail + 1) { return; }
    var pct = Math.max(MIN, Math.floor(100 * avail / need));
    m.style.fontSize = pct + "%";
    if (m.scrollWidth > m.clientWidth + 1 && box && box.classList) {
      // too wide even at 70 % beside its number: the number moves under it, so the
      // equation gets the whole column, and is shrunk again to fit that
      box.classList.add("specmath-scrolls");
      m.style.fontSize = "";
      avail = m.clientWidth; need = m.scrollWidth;
      if (need > avail + 1) {  // scrolling beats type too small to read on a phone
        m.style.fontSize = Math.max(MIN_SCROLLING, Math.floor(100 * avail / need)) + "%";
      }
      // it keeps the class even when it now fits: that fit needs the number moved under
      if (m.scrollWidth > m.clientWidth + 1 && !m.hasAttribute("tabindex")) {
        m.setAttribute("tabindex", "0");  // a scrolling region is reachable by keyboard
      }
    }
  }
  // An inline formula wider than its paragraph (on a phone) would be cut at the right
  // edge: it gets a line of its own that scrolls, with the same edge shadow.
  function fitInline(m) {
    m.classList.remove("specmath-wide-inline");
    var block = m.parentElement;
    while (block && getComputedStyle(block).display.indexOf("inline") === 0) {
      block = block.parentElement;
    }
    if (!block) { return; }
    var room = block.getBoundingClientRect().right;
    if (m.getBoundingClientRect().right > room + 1) {
      m.classList.add("specmath-wide-inline");
      if (!m.hasAttribute("tabindex")) { m.setAttribute("tabindex", "0"); }
    }
  }
  function fitDisplayMath() {
    var all = document.querySelectorAll('mjx-container[jax="CHTML"][display="true"]');
    for (var i = 0; i < all.length; i++) { fitOne(all[i]); }
    var inline = document.querySelectorAll(
      'article mjx-container[jax="CHTML"]:not([display="true"])');
    for (var j = 0; j < inline.length; j++) { fitInline(inline[j]); }
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
      // an equation inside a proof or solution that opens later is measured then
      document.addEventListener("click", function (ev) {
        if (ev.target && ev.target.closest && ev.target.closest(".toggle-button, summary, "
            + ".admonition-title, .sd-summary-title")) {
          setTimeout(fitDisplayMath, 450);
        }
      });
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
})();

/* Accessible names that match what is shown (WCAG 2.5.3, Label in Name; axe-core's
 * label-content-name-mismatch), for controls the themes render (page bodies are fixed
 * at build time, scripts/sphinx_specmath_site.py):
 * - the sidebar's search field shows "Search Ctrl + K" but is named "Search": let it be
 *   named by its text;
 * - the colour-mode button is named "Color mode", and its three icons carry titles
 *   ("Light", "Dark", "System Settings") that read as text: hide the icons from
 *   assistive technology and drop their titles, so the button's name is its label (the
 *   mode itself is in its tooltip). Font Awesome turns the icons into <svg> after
 *   load, hence the observer. */
(function () {
  "use strict";
  function fixNames(root) {
    var i, els;
    els = root.querySelectorAll("button.search-button-field[aria-label]");
    for (i = 0; i < els.length; i++) {
      if ((els[i].textContent || "").trim()) { els[i].removeAttribute("aria-label"); }
    }
    els = root.querySelectorAll(".theme-switch-button > i, .theme-switch-button > svg");
    for (i = 0; i < els.length; i++) {
      if (els[i].getAttribute("aria-hidden") !== "true") {
        els[i].setAttribute("aria-hidden", "true");
      }
      els[i].removeAttribute("title");
      els[i].removeAttribute("aria-labelledby");
      var titles = els[i].querySelectorAll("title");
      for (var j = 0; j < titles.length; j++) { titles[j].remove(); }
    }
  }
  function start() {
    fixNames(document);
    var buttons = document.querySelectorAll(".theme-switch-button");
    if (window.MutationObserver) {
      for (var i = 0; i < buttons.length; i++) {
        new MutationObserver(function () { fixNames(document); })
          .observe(buttons[i], {childList: true, subtree: true});
      }
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
