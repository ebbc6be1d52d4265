"""The browser suite's toolkit: the built site on a loopback port, headless Chromium.

The site is ``_build/html`` (``make book``), or the folder named by ``SPECMATH_SITE``.
Chromium is Debian's ``chromium`` package (``/usr/bin/chromium``, or ``SPECMATH_CHROMIUM``)
driven by Playwright; ``playwright install`` is never needed. Without a built site or a
browser the tests skip, unless ``SPECMATH_REQUIRE_SITE=1`` (set by ``make test``, so CI
never skips silently), in which case they fail.

Every page is visited once (:func:`visit`, cached for the session): console errors,
requests that try to leave 127.0.0.1 (blocked and recorded), typeset math, images,
theorem/proof/exercise blocks, solutions before and after a click, links, the Colab
button, title, navigation and footer are collected, and a full-page screenshot is saved
into ``<site>/_screenshots/``. The test modules then assert on those facts.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SPECMATH_SITE", REPO / "_build" / "html")).resolve()
CHROMIUM = os.environ.get("SPECMATH_CHROMIUM", "/usr/bin/chromium")
REQUIRE = os.environ.get("SPECMATH_REQUIRE_SITE", "") not in ("", "0")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage"]
SCREENSHOTS = "_screenshots"
# Folders of the build that are assets, not pages.
_NOT_PAGES = {"_static", "_sources", "_images", "_downloads", SCREENSHOTS, ".doctrees", "_reader",
              "jupyter_execute"}


def _missing(reason: str):
    if REQUIRE:
        pytest.fail(reason + " (SPECMATH_REQUIRE_SITE is set)", pytrace=False)
    pytest.skip(reason)


def is_redirect(path: Path) -> bool:
    """True for jupyter-book's index.html, a meta-refresh to the root page."""
    head = path.read_text(encoding="utf-8", errors="replace")[:2000].lower()
    return 'http-equiv="refresh"' in head


def discover_pages(site: Path = SITE) -> list[str]:
    """Every HTML page of the built site, relative to it (new chapters are picked up)."""
    if not site.is_dir():
        return []
    pages = []
    for p in sorted(site.rglob("*.html")):
        rel = p.relative_to(site)
        if rel.parts[0] in _NOT_PAGES:
            continue
        pages.append(rel.as_posix())
    return pages


def content_pages(site: Path = SITE) -> list[str]:
    """The pages a reader reads: everything except redirects."""
    return [p for p in discover_pages(site) if not is_redirect(site / p)]


# ---- the loopback server ----------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 at a random free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        _missing(f"no built site at {SITE}; run `make book` first")
    return SITE


@pytest.fixture(scope="session")
def base_url(site):
    with serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).is_file():
        _missing(f"no Chromium at {CHROMIUM}; `apt-get install chromium` (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Offline:
    """Route handler: lets requests to ``allowed`` through, blocks and records the rest."""

    def __init__(self, allowed: str):
        self.allowed = allowed
        self.blocked: list[str] = []

    def __call__(self, route):
        url = route.request.url
        if url.startswith(self.allowed) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()


@contextlib.contextmanager
def offline_page(browser, base: str, *, dark: bool = False,
                 viewport: tuple[int, int] = (1280, 900), mobile: bool = False):
    """A fresh page whose requests may not leave ``base``; yields (page, Offline, errors).

    ``viewport`` is (width, height) in CSS px; ``mobile`` makes it a touch phone (DPR 2).
    """
    extra = {"is_mobile": True, "has_touch": True, "device_scale_factor": 2} if mobile else {}
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                  color_scheme="dark" if dark else "light", **extra)
    guard = Offline(base)
    context.route("**/*", guard)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}")
            if r.status >= 400 else None)
    page.on("requestfailed", lambda r: None if r.url in guard.blocked else
            errors.append(f"request failed: {r.url} ({r.failure})"))
    try:
        yield page, guard, errors
    finally:
        context.close()


# ---- what the sources say ---------------------------------------------------------------

_DIRECTIVE = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{([a-z:-]+)\}", re.MULTILINE)


def source_text(site: Path, page: str) -> str | None:
    """The page's source markdown (from ``_sources``; a notebook's markdown cells)."""
    stem = page[: -len(".html")]
    for ext in (".ipynb", ".md"):
        for cand in (site / "_sources" / (stem + ext), site / "_sources" / (stem + ext + ".txt")):
            if cand.is_file():
                text = cand.read_text(encoding="utf-8")
                if ext == ".ipynb":
                    nb = json.loads(text)
                    text = "\n\n".join("".join(c["source"]) if isinstance(c["source"], list)
                                       else c["source"] for c in nb["cells"]
                                       if c["cell_type"] == "markdown")
                return text
    return None


def source_kind(site: Path, page: str) -> str | None:
    stem = page[: -len(".html")]
    for ext in (".ipynb", ".md"):
        if (site / "_sources" / (stem + ext)).is_file():
            return ext
    return None


def directive_counts(text: str) -> dict[str, int]:
    """How many blocks of each kind the source opens (theorem, proof, exercise, …)."""
    counts: dict[str, int] = {}
    for name in _DIRECTIVE.findall(text or ""):
        if name.startswith("prf:"):
            kind = name[4:]
        elif name in ("exercise", "exercise-start"):
            kind = "exercise"
        elif name in ("solution", "solution-start"):
            kind = "solution"
        else:
            continue
        counts[kind] = counts.get(kind, 0) + 1
    return counts


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.cache
def html_ids(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def resolve_internal(site: Path, base: str, href: str) -> tuple[Path | None, str]:
    """(file in the site, fragment) for an absolute URL on the loopback server."""
    parts = urlsplit(href)
    path = unquote(parts.path)
    rel = path[len(urlsplit(base).path):] if path.startswith(urlsplit(base).path) else path
    target = site / rel
    if rel == "" or rel.endswith("/"):
        target = target / "index.html"
    return target, unquote(parts.fragment)


def repo_config() -> dict:
    import yaml

    return yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))


def expected_colab(page: str) -> str:
    """The Colab URL of the reader notebook of ``page`` (``notebooks/NN_*.ipynb``)."""
    cfg = repo_config()
    url = cfg["repository"]["url"].rstrip("/")
    org_repo = "/".join(urlsplit(url).path.strip("/").split("/")[:2])
    branch = cfg["repository"].get("branch", "main")
    colab = cfg["launch_buttons"]["colab_url"].rstrip("/")
    nb = page[: -len(".html")].rsplit("/", 1)[-1] + ".ipynb"
    return f"{colab}/github/{org_repo}/blob/{branch}/notebooks/{nb}"


# ---- one visit per page -----------------------------------------------------------------

_COLLECT_JS = r"""
() => {
  const art = document.querySelector("article.bd-article") || document.querySelector("main")
              || document.body;
  // text outside code, after typesetting
  const clone = art.cloneNode(true);
  clone.querySelectorAll("pre, code, .highlight, script, style, mjx-container, "
                         + ".cell_input, .output, .cell_output, textarea").forEach(e => e.remove());
  const text = clone.innerText || clone.textContent || "";
  const mathNodes = [...art.querySelectorAll(".math")];
  const untypeset = mathNodes.filter(n => !n.querySelector("mjx-container")
                                          && n.tagName !== "MJX-CONTAINER")
                             .map(n => (n.textContent || "").slice(0, 80));
  const imgs = [...document.querySelectorAll("img")].map(i => ({
      src: i.getAttribute("src"), alt: i.getAttribute("alt") || "",
      complete: i.complete, w: i.naturalWidth,
      caption: !!(i.closest("figure") && i.closest("figure").querySelector("figcaption")),
      explorer: !!(i.closest(".cell") && i.closest(".cell").querySelector(
          '.jupyter-widgets, script[type="application/vnd.jupyter.widget-view+json"]')),
      content: art.contains(i) && !i.closest(".sd-card, .launch-buttons") }));
  const blocks = {};
  for (const el of art.querySelectorAll("div.admonition")) {
    const cls = [...el.classList];
    let kind = null;
    if (cls.includes("exercise")) kind = "exercise";
    else if (cls.includes("solution")) kind = "solution";
    else if (cls.includes("proof")) {
      const other = cls.filter(c => !["proof", "admonition", "dropdown", "toggle",
                                      "toggle-hidden", "toggle-shown"].includes(c));
      kind = other.length ? other[0] : "proof";
    }
    if (kind) blocks[kind] = (blocks[kind] || 0) + 1;
  }
  const links = [...document.querySelectorAll("a[href]")].map(a => ({
      href: a.href, raw: a.getAttribute("href"), text: (a.innerText || "").trim().slice(0, 60)}));
  const colab = [...document.querySelectorAll("a[href*='colab.research.google.com']")]
                  .map(a => a.href);
  const wideMath = [...art.querySelectorAll('mjx-container[display="true"]')]
      .filter(m => m.scrollWidth > m.clientWidth + 2)
      .map(m => (m.closest("[id]") || {id: "?"}).id + ": " + m.scrollWidth + "px in "
                + m.clientWidth + "px");
  const h1 = document.querySelector("article h1, main h1");
  const current = document.querySelector("nav.bd-docs-nav li.current > a, "
                                         + ".bd-sidebar-primary a.current");
  const footer = [...document.querySelectorAll("footer")].map(f => f.innerText).join("\n");
  const ids = [...document.querySelectorAll("[id], a[name]")].map(e => e.id || e.name);
  return {text, nMath: mathNodes.length, nMjx: document.querySelectorAll("mjx-container").length,
          untypeset, wideMath, imgs, blocks, links, colab, ids,
          title: document.title, h1: h1 ? h1.innerText.replace(/[#¶]\s*$/, "").trim() : null,
          navCurrent: current ? current.innerText.trim() : null, footer,
          hasCalculator: !!document.querySelector(".specmath-calculator")};
}
"""

_SOLUTIONS_JS = r"""
() => [...document.querySelectorAll("div.solution.admonition")].map(el => {
  const body = [...el.children].filter(c => !c.classList.contains("admonition-title"));
  const shown = body.some(c => c.offsetParent !== null && c.getClientRects().length > 0
                               && getComputedStyle(c).visibility !== "hidden");
  return {id: el.id, dropdown: el.classList.contains("dropdown"), shown,
          n: body.length};
})
"""


@dataclass
class PageReport:
    page: str
    url: str
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    solutions_before: list[dict] = field(default_factory=list)
    solutions_after: list[dict] = field(default_factory=list)
    screenshot: Path | None = None


def _screenshot_path(site: Path, page: str) -> Path:
    return site / SCREENSHOTS / (page[: -len(".html")].replace("/", "__") + ".png")


@pytest.fixture(scope="session")
def screenshots_dir(site) -> Path:
    d = site / SCREENSHOTS
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


@pytest.fixture(scope="session")
def visit(site, base_url, browser, screenshots_dir):
    """visit(page) -> PageReport, computed once per page for the whole session."""
    cache: dict[str, PageReport] = {}

    def _visit(page: str) -> PageReport:
        if page in cache:
            return cache[page]
        rep = PageReport(page=page, url=base_url + page)
        with offline_page(browser, base_url) as (pg, guard, errors):
            pg.goto(rep.url, wait_until="load")
            settle(pg)  # MathJax typeset, saved widgets drawn, images (lazy ones too) loaded
            rep.facts = pg.evaluate(_COLLECT_JS)
            rep.solutions_before = pg.evaluate(_SOLUTIONS_JS)
            rep.screenshot = _screenshot_path(site, page)
            rep.screenshot.parent.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(rep.screenshot), full_page=True)
            # open every solution by clicking its toggle
            buttons = pg.locator("div.solution.admonition .toggle-button, "
                                 "div.solution.admonition > .admonition-title")
            for sol in rep.solutions_before:
                sel = f'[id="{sol["id"]}"]'
                btn = pg.locator(f"{sel} button.toggle-button")
                if btn.count() == 0:
                    btn = pg.locator(f"{sel} > .admonition-title")
                btn.first.click()
            if buttons.count():
                pg.wait_for_timeout(400)  # the toggle's CSS transition
            rep.solutions_after = pg.evaluate(_SOLUTIONS_JS)
            rep.errors = list(errors)
            rep.blocked = list(guard.blocked)
        cache[page] = rep
        return rep

    return _visit


# ---- the kernel-free calculator -------------------------------------------------------------

def set_calculator(page, root_selector: str, alpha, k, c) -> dict:
    """Type α, k, c into a calculator's number inputs; return what it shows."""
    root = page.locator(root_selector).first
    for name, value in (("alpha", alpha), ("k", k), ("c", c)):
        box = root.locator(f"input.smc-{name}")
        box.fill(str(value))
        box.dispatch_event("change")
    return root.evaluate("""r => ({
        en: r.querySelector('.smc-en').textContent, s: r.querySelector('.smc-s').textContent,
        bestk: r.querySelector('.smc-bestk').textContent,
        bests: r.querySelector('.smc-bests').textContent,
        error: r.querySelector('.smc-error').textContent, state: r.dataset.state,
        points: (r.querySelector('svg polyline') || {getAttribute: () => ''})
                  .getAttribute('points').trim().split(/\\s+/).length,
        best_marker: !!r.querySelector('svg .smc-best-marker'),
        current_marker: !!r.querySelector('svg .smc-current-marker')})""")


def specmath_calculator_values(alpha, k, c) -> dict:
    """What the calculator must show, from specmath, formatted to 3 decimals."""
    import specmath as sm

    best = int(sm.optimal_k(alpha, c))
    return {"en": f"{float(sm.expected_tokens(alpha, k)):.3f}",
            "s": f"{float(sm.speedup(alpha, k, c)):.3f}",
            "bestk": str(best), "bests": f"{float(sm.speedup(alpha, best, c)):.3f}"}


# ---- pages at any size, and the accessibility checker ----------------------------------------

def settle(page) -> None:
    """Wait until MathJax has typeset, saved widgets are drawn and images have loaded."""
    if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        page.wait_for_function("() => window.MathJax && MathJax.startup "
                               "&& MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise.then(() => true)")
    if page.evaluate("() => !!document.querySelector("
                     "'script[type=\"application/vnd.jupyter.widget-view+json\"]')"):
        page.wait_for_function("() => document.querySelectorAll('.jupyter-widgets, "
                               ".widget-box, .widget-slider').length > 0")
    page.evaluate("() => document.querySelectorAll('img').forEach(i => i.loading = 'eager')")
    with contextlib.suppress(Exception):
        page.wait_for_function("() => [...document.images].every(i => i.complete)",
                               timeout=10_000)
    page.wait_for_timeout(200)


#: axe-core, vendored from npm by scripts/vendor_assets.sh (pinned in scripts/vendor).
AXE = REPO / "tests" / "site" / "vendor" / "axe.min.js"
#: The WCAG 2 success criteria at levels A and AA (2.0, 2.1 and 2.2), as axe tags them.
WCAG_AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


def axe_violations(page, context: str | None = None) -> list[dict]:
    """Run axe-core in ``page`` (on the CSS selector ``context``, or the whole document)
    against WCAG 2 A/AA; return its violations (rule id, impact, help, nodes)."""
    if not AXE.is_file():
        _missing(f"no axe-core at {AXE}; run scripts/vendor_assets.sh (make vendor)")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    return page.evaluate(
        """([ctx, tags]) => axe.run(ctx ? document.querySelector(ctx) : document,
              {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]})
            .then(r => r.violations.map(v => ({
               id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, tags: v.tags,
               nodes: v.nodes.map(n => ({target: n.target.join(" "),
                                          html: n.html.slice(0, 160),
                                          summary: n.failureSummary}))})))""",
        [context, WCAG_AA_TAGS])


def describe_violations(violations: list[dict], max_nodes: int = 6) -> str:
    """axe's violations as a readable report: rule, what it asks, and where it fails."""
    lines = []
    for v in violations:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']} [{len(v['nodes'])} element(s)]"
                     f"\n    {v['helpUrl']}")
        for n in v["nodes"][:max_nodes]:
            summary = " ".join((n["summary"] or "").split())
            lines.append(f"    at {n['target']}\n       {n['html']}\n       {summary[:300]}")
        if len(v["nodes"]) > max_nodes:
            lines.append(f"    … and {len(v['nodes']) - max_nodes} more")
    return "\n".join(lines)
