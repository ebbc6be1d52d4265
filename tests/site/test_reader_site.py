"""The reader notebooks against the built site (``make book`` first; part of ``make test``).

Proves that the committed ``notebooks/`` are what the build makes now (stale notebooks
fail, as the md ↔ ipynb sync test does for the sources); that every link they make to the
published site names a page and anchor the site has; and, rendered outside Sphinx with
``nbconvert --to html`` and MathJax served locally, that the math inside their theorems
and exercises is typeset and that each exercise shows the values the site shows.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from scriptload import load_script
from sitekit import REPO, html_ids, offline_page

BUILT = REPO / "_build" / "jupyter" / "book"
READER = REPO / "notebooks"
CHAPTERS = sorted(p.name for p in (REPO / "book").glob("[0-9][0-9]_*.ipynb"))
RENDERED = "_reader"

pytestmark = pytest.mark.site


def _tool():
    return load_script("reader_notebooks")


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
    # the note ends its sentence: numbers there are ignored, numbers elsewhere are not
    a = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"It took 9 passes over 3 iterations{live}. The pair has 24 layers.")])
    b = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"It took 8 passes over 4 iterations{live}. The pair has 24 layers.")])
    c = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"It took 8 passes over 4 iterations{live}. The pair has 28 layers.")])
    assert tool.normalise(a) == tool.normalise(b) != tool.normalise(c)
    built = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "The chapter ran in 95.1 s on the build machine.")])
    again = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "The chapter ran in 88.0 s on the build machine.")])
    assert tool.normalise(built) == tool.normalise(again)


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


# ---- structure a reader sees (issue 15 item 6), on the freshly built notebooks ------------
# These read _build/jupyter (what `make reader-notebooks` copies), so they hold the
# translator to account even before notebooks/ is regenerated.

def _fresh(tool, name):
    return tool.reader_notebook(BUILT / name)


def _article(site, name):
    from bs4 import BeautifulSoup

    html = (site / "book" / name.replace(".ipynb", ".html")).read_text(encoding="utf-8")
    soup = BeautifulSoup(html, "html.parser")
    return soup.select_one("article.bd-article") or soup.select_one("main") or soup


def _nested_items_commonmark(source: str) -> list[str]:
    """Text of each list item that CommonMark nests inside another list item."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(source)
    depth, out = 0, []
    for i, t in enumerate(tokens):
        if t.type == "list_item_open":
            depth += 1
            if depth >= 2:
                inline = next((u for u in tokens[i:] if u.type == "inline"), None)
                out.append(inline.content if inline is not None else "")
        elif t.type == "list_item_close":
            depth -= 1
    return out


def test_commonmark_nesting_probe_tells_flat_from_nested():
    flat = "1. For each i:\n  1. draw U\n  1. stop\n1. emit the bonus token\n"
    nested = "1. For each i:\n   1. draw U\n   1. stop\n1. emit the bonus token\n"
    assert _nested_items_commonmark(flat) == []
    assert _nested_items_commonmark(nested) == ["draw U", "stop"]


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_nested_lists_survive_commonmark_as_on_the_site(tool, site, name):
    """Every list item nested on the site is nested in the notebook (markdown-it's
    CommonMark preset, the reading of JupyterLab, Colab and nbconvert)."""
    nb = _fresh(tool, name)
    in_nb = [t for c in nb.cells if c.cell_type == "markdown"
             for t in _nested_items_commonmark(c.source)]
    on_site = _article(site, name).select("li li")
    assert len(in_nb) == len(on_site), (
        f"{name}: {len(on_site)} nested list items on the site, {len(in_nb)} in the "
        f"notebook: {in_nb[:5]}")


def test_algorithm_2_1_bonus_token_is_a_top_level_step():
    """The review's example: 'emit the bonus token' is step 2, after the loop's sub-steps."""
    import nbformat as nbf

    nb = nbf.read(BUILT / "02_acceptance_rule.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if "**Algorithm 2.1" in c.source)
    nested = _nested_items_commonmark(cell)
    assert len(nested) == 3 and "stop" in nested[-1]
    assert not any("bonus token" in t for t in nested)


_FIG = re.compile(r"^\*Fig\. (\d+(?:\.\d+)*)\* \S")


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_figure_captions_are_numbered_as_on_the_site(tool, site, name):
    """Each figure's caption follows its code cell as "*Fig. N.M* caption"."""
    nb = _fresh(tool, name)
    cells = nb.cells
    in_nb = []
    for i, c in enumerate(cells):
        m = _FIG.match(c.source) if c.cell_type == "markdown" else None
        if m:
            in_nb.append(m.group(1))
            assert i > 0 and cells[i - 1].cell_type == "code", \
                f"{name}: Fig. {m.group(1)} does not follow its code cell"
    site_nums = [s.get_text().strip().removeprefix("Fig.").strip().rstrip(".")
                 for s in _article(site, name).select("figure span.caption-number")]
    assert in_nb == site_nums, f"{name}: captions {in_nb} in the notebook, {site_nums} on site"


def test_all_36_figures_have_captions(tool):
    total = sum(1 for name in CHAPTERS for c in _fresh(tool, name).cells
                if c.cell_type == "markdown" and _FIG.match(c.source))
    sources = sum(1 for name in CHAPTERS
                  for c in nbformat.read(REPO / "book" / name, as_version=4).cells
                  if c.cell_type == "code"
                  and c.metadata.get("mystnb", {}).get("figure", {}).get("caption"))
    assert total == sources >= 36


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_install_cell_is_hidden_in_colab_and_jupyterlab(tool, name):
    first = next(c for c in _fresh(tool, name).cells if c.cell_type == "code")
    assert "google.colab" in first.source
    assert first.source.startswith("#@title "), "Colab shows a form cell by its #@title"
    assert first.metadata.get("cellView") == "form"
    assert first.metadata.get("jupyter", {}).get("source_hidden") is True
    others = [c for c in _fresh(tool, name).cells if c.cell_type == "code"][1:]
    assert not any(c.metadata.get("cellView") == "form" for c in others)


_SENTENCES = re.compile(r"(?<=[.!?])\s+")


@pytest.mark.parametrize("name", CHAPTERS)
def test_machine_dependent_values_are_marked_once_per_sentence(tool, name):
    note = tool.LIVE_NOTE.strip()
    for c in _fresh(tool, name).cells:
        for s in _SENTENCES.split(c.source):
            assert s.count(note) <= 1, f"{name}: {note!r} repeated in {s!r}"
            assert not re.search(r"\d" + re.escape(tool.LIVE_NOTE), s) or \
                re.search(r"\d" + re.escape(tool.LIVE_NOTE) + r"[.!?:;]", s), \
                f"{name}: the note interrupts a sentence after a number: {s!r}"


def test_chapter_7_live_sentence_names_the_build_machine_once():
    nb = nbformat.read(BUILT / "07_real_models.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    sentence = next(s for s in _SENTENCES.split(text) if "target passes, the plain loop" in s)
    assert sentence.count("machine that built the website") == 1
    assert re.search(r"plain loop\s+\d+, one per token", sentence)   # 24: no note


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_tables_render_as_on_the_site(tool, site, name):
    """Every table of the page's text (not of cell outputs) is a Markdown table that
    nbconvert renders (the symbol boxes were left as raw '|a|b|' inside a block quote)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    nb = _fresh(tool, name)
    rendered = sum(markdown2html_mistune(c.source).count("<table")
                   for c in nb.cells if c.cell_type == "markdown")
    article = _article(site, name)
    on_site = [t for t in article.select("table") if not t.find_parent(
        "div", class_="cell_output") and not t.find_parent("div", class_="output")]
    assert rendered == len(on_site), (name, rendered, len(on_site))
    raw = [c.source[:80] for c in nb.cells if c.cell_type == "markdown"
           and "<table" not in markdown2html_mistune(c.source)
           and re.search(r"^\W*\|[^\n]*\|\s*$", c.source, re.M)]
    assert not raw, f"{name}: table rows left as text: {raw}"
