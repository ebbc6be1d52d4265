"""The reader notebooks against the built site (``make book`` first; part of ``make test``).

Proves that the committed ``notebooks/`` are what the build makes now (stale notebooks
fail, as the md ↔ ipynb sync test does for the sources); that every link they make to the
published site names a page and anchor the site has; and, rendered outside Sphinx with
``nbconvert --to html`` and MathJax served locally, that the math inside their theorems
and exercises is typeset and that each exercise shows the values the site shows.
"""

from __future__ import annotations

import importlib.util
import re

import nbformat
import pytest
from sitekit import REPO, html_ids, offline_page

BUILT = REPO / "_build" / "jupyter" / "book"
READER = REPO / "notebooks"
CHAPTERS = sorted(p.name for p in (REPO / "book").glob("[0-9][0-9]_*.ipynb"))
RENDERED = "_reader"

pytestmark = pytest.mark.site


def _tool():
    spec = importlib.util.spec_from_file_location("reader_notebooks",
                                                  REPO / "scripts" / "reader_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tool(site):
    if not BUILT.is_dir():
        pytest.fail(f"no built reader notebooks in {BUILT}: `make book` builds them")
    return _tool()


@pytest.mark.parametrize("name", CHAPTERS)
def test_committed_reader_notebook_is_up_to_date(tool, name):
    fresh = tool.reader_notebook(BUILT / name)
    committed = nbformat.read(READER / name, as_version=4)
    a, b = tool.normalise(committed), tool.normalise(fresh)
    diff = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    assert a == b, (f"notebooks/{name} is stale (first difference at cell {diff}): run "
                    "`make reader-notebooks` and commit notebooks/")


def test_normalise_ignores_only_machine_dependent_values(tool):
    live = tool.LIVE_NOTE
    one = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"took 3.2{live}")])
    two = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"took 4.1{live}")])
    three = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("took 4.1")])
    assert tool.normalise(one) == tool.normalise(two)
    assert tool.normalise(two) != tool.normalise(three)


_LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_links_to_the_site_resolve(site, name):
    import yaml

    base = yaml.safe_load((REPO / "_config.yml").read_text())["html"]["baseurl"].rstrip("/")
    nb = nbformat.read(READER / name, as_version=4)
    broken, seen = [], 0
    for c in nb.cells:
        for url in _LINK.findall(c.source):
            if not url.startswith(base + "/"):
                continue
            seen += 1
            path, _, frag = url[len(base) + 1:].partition("#")
            target = site / path.replace("%28", "(").replace("%29", ")")
            if not target.is_file():
                broken.append(f"{url}: no page {path}")
            elif frag and frag not in html_ids(target):
                broken.append(f"{url}: no #{frag} on {path}")
    assert not broken, f"notebooks/{name}: links that miss the site:\n" + "\n".join(broken)


_MATHJAX_CONFIG = """window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], processEscapes: true},
  startup: {typeset: true}
};
(function () {
  var s = document.createElement('script');
  s.src = '../_static/vendor/mathjax/tex-chtml.js';
  document.head.appendChild(s);
})();
"""


@pytest.fixture(scope="module")
def rendered(site):
    """Each reader notebook as nbconvert's HTML in <site>/_reader/, MathJax served locally
    (what JupyterLab or GitHub show: Markdown rendered, `$…$` and `$$…$$` typeset)."""
    from nbconvert import HTMLExporter

    out = site / RENDERED
    out.mkdir(exist_ok=True)
    (out / "mathjax-config.js").write_text(_MATHJAX_CONFIG)
    exporter = HTMLExporter(template_name="lab")
    exporter.mathjax_url = "mathjax-config.js"
    for name in CHAPTERS:
        body, _ = exporter.from_notebook_node(nbformat.read(READER / name, as_version=4))
        (out / name.replace(".ipynb", ".html")).write_text(body, encoding="utf-8")
    return out


_READER_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
  const cells = [...document.querySelectorAll('.jp-MarkdownCell')];
  const out = [];
  for (const c of cells) {
    const r = c.querySelector('.jp-RenderedMarkdown') || c;
    const clone = r.cloneNode(true);
    clone.querySelectorAll('mjx-container, code, pre').forEach(e => e.remove());
    const a = r.querySelector('a[id]');
    out.push({head: (r.querySelector('strong') || {}).textContent || '',
              id: a ? a.id : '', text: r.innerText, math: r.querySelectorAll('mjx-container').length,
              raw: clone.innerText});
  }
  return out;
}
"""

_SITE_EXERCISES_JS = r"""
() => [...document.querySelectorAll('div.exercise')].map(d => ({
  id: d.id, values: [...d.querySelectorAll('.pasted-text')].map(s => s.textContent.trim())}))
"""

_BLOCK = re.compile(r"^(Theorem|Lemma|Definition|Corollary|Proposition|Algorithm|Exercise)\b")


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_notebook_outside_sphinx_typesets_math_and_shows_exercise_values(
        browser, base_url, rendered, name):
    src = nbformat.read(READER / name, as_version=4)
    with offline_page(browser, base_url) as (page, _guard, _errors):
        page.goto(base_url + f"{RENDERED}/{name.replace('.ipynb', '.html')}")
        cells = page.evaluate(_READER_JS)
        blocks = [c for c in cells if _BLOCK.match(c["head"].strip())]
        if not blocks and not any(c.cell_type == "markdown" and "**Exercise" in c.source
                                  for c in src.cells):
            pytest.skip("no theorems or exercises")
        for c in blocks:
            assert "$" not in c["raw"], f"{name}: untypeset math in {c['head']!r}: {c['raw'][:200]}"
        with_math = [c for c in blocks if c["math"]]
        assert with_math, f"{name}: no typeset math in any theorem or exercise"
        page.goto(base_url + f"book/{name.replace('.ipynb', '.html')}")
        site_ex = page.evaluate(_SITE_EXERCISES_JS)
    by_id = {c["id"]: c for c in cells if c["id"]}
    for ex in site_ex:
        if not ex["id"]:
            continue
        cell = by_id.get(ex["id"])
        assert cell is not None, f"{name}: exercise {ex['id']} missing from the notebook"
        pos = 0
        for v in ex["values"]:
            found = cell["text"].find(v, pos)
            assert found >= 0, (f"{name}: exercise {ex['id']} should show {v!r} as the site "
                                f"does; the notebook says {cell['text'][:300]!r}")
            pos = found + len(v)
