"""A reader's journeys through the site on a phone and on a desktop (issue 15).

* At 390×844 (a phone) the visible ☰ opens the chapter list, and a tap on the next
  chapter opens it; "On this page" opens the page's contents.
* At 1440×900 the visible ☰ collapses the sidebar and brings it back; the header does not
  repeat the search box nor cover the sidebar's title.
* Download → .ipynb serves the chapter's reader notebook, not the MyST source.
* Wide display equations on a phone show that they scroll, and their number never sits
  beside a hidden part; on a desktop every display equation, in proofs too, fits.
* No page shows a path of the machine that built it.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from sitekit import REPO, REQUIRE, content_pages, offline_page, settle

pytestmark = pytest.mark.site

PAGES = content_pages() or [pytest.param("-", marks=() if REQUIRE else pytest.mark.skip(
    reason="no built site"))]
PHONE = (390, 844)
DESKTOP = (1440, 900)


def _toc_files() -> list[str]:
    import yaml

    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [ch["file"] for part in toc.get("parts", [])
                            for ch in part.get("chapters", [])]


def _chapter_and_next() -> tuple[str, str]:
    files = _toc_files()
    here = next(f for f in files if f.endswith("05_speedup"))
    return here + ".html", files[files.index(here) + 1] + ".html"


CHAPTER_PAGES = [p for p in PAGES if isinstance(p, str) and re.search(r"/\d\d_", p)] or PAGES


def _opens(pg, dialog_id: str) -> bool:
    """Whether the theme's <dialog> ``dialog_id`` is open within 5 s."""
    try:
        pg.wait_for_function(f"() => document.getElementById('{dialog_id}').open",
                             timeout=5_000)
    except Exception:  # playwright's TimeoutError: report it as a plain assertion
        return False
    return True


def _visible(pg, selector: str):
    """The visible elements matching ``selector`` (a Playwright locator)."""
    return pg.locator(f"{selector} >> visible=true")


def _tap_on_phone(pg, url: str, toggle: str, dialog_id: str, name: str, shows: str) -> None:
    """Load ``url`` on the phone page ``pg``, check that exactly one ``toggle`` button
    (``name``) is visible, tap it and check that it opens the dialog (``shows``)."""
    pg.goto(url, wait_until="load")
    settle(pg)
    toggles = _visible(pg, toggle)
    assert toggles.count() == 1, f"{toggles.count()} visible {name} buttons on a phone"
    toggles.first.tap()
    assert _opens(pg, dialog_id), f"tapping {name} does not open {shows}"


# ---- phone ---------------------------------------------------------------------------------

def test_phone_menu_opens_and_a_tap_follows_the_next_chapter(base_url, browser):
    page, nxt = _chapter_and_next()
    with offline_page(browser, base_url, viewport=PHONE, mobile=True) as (pg, _g, errors):
        _tap_on_phone(pg, base_url + page, ".primary-toggle", "pst-primary-sidebar-modal",
                      "☰", "the menu")
        link = pg.locator(f"#pst-primary-sidebar-modal a[href$='{nxt.rsplit('/', 1)[-1]}']")
        assert link.count() >= 1, f"the chapter list does not link {nxt}"
        link.first.tap()
        pg.wait_for_url(re.compile(re.escape(nxt) + r"(#.*)?$"))
        settle(pg)
        heading = pg.locator("article h1").first.inner_text()
        assert errors == [], errors
    title = json.loads((REPO / nxt.replace(".html", ".ipynb")).read_text(encoding="utf-8"))
    first = next("".join(c["source"]) for c in title["cells"] if c["cell_type"] == "markdown")
    want = first.splitlines()[0].lstrip("# ").strip()
    assert want in heading, f"followed the link to {nxt} but the page says {heading!r}"


def test_phone_on_this_page_opens_the_contents_of_the_page(base_url, browser):
    page, _ = _chapter_and_next()
    with offline_page(browser, base_url, viewport=PHONE, mobile=True) as (pg, _g, errors):
        _tap_on_phone(pg, base_url + page, ".secondary-toggle", "pst-secondary-sidebar-modal",
                      "'On this page'", "the page's contents")
        entries = _visible(pg, "#pst-secondary-sidebar-modal nav a[href^='#']")
        assert entries.count() >= 3, "the page's contents are not shown"
        assert errors == [], errors


# ---- desktop -------------------------------------------------------------------------------

_SIDEBAR = """() => { const s = document.getElementById('pst-primary-sidebar');
  const r = s.getBoundingClientRect(); const cs = getComputedStyle(s);
  return {shown: cs.visibility !== 'hidden' && r.right > 50,
          article: document.querySelector('article.bd-article').getBoundingClientRect().width,
          dialog: document.getElementById('pst-primary-sidebar-modal').open}; }"""


def test_desktop_menu_button_collapses_and_reopens_the_sidebar(base_url, browser):
    page, _ = _chapter_and_next()
    with offline_page(browser, base_url, viewport=DESKTOP) as (pg, _g, errors):
        pg.goto(base_url + page, wait_until="load")
        settle(pg)
        before = pg.evaluate(_SIDEBAR)
        assert before["shown"], "the sidebar is not shown at 1440 px"
        toggles = _visible(pg, ".primary-toggle")
        assert toggles.count() == 1, f"{toggles.count()} visible ☰ buttons at 1440 px"
        toggles.first.click()
        pg.wait_for_timeout(600)  # the theme's slide-out transition
        collapsed = pg.evaluate(_SIDEBAR)
        toggles.first.click()
        pg.wait_for_timeout(600)
        reopened = pg.evaluate(_SIDEBAR)
        assert errors == [], errors
    assert not collapsed["shown"] and not collapsed["dialog"], collapsed
    assert collapsed["article"] > before["article"], "the text did not get the room"
    assert reopened["shown"] and not reopened["dialog"], reopened


def test_desktop_header_has_one_search_and_leaves_the_sidebar_title_visible(base_url, browser):
    page, _ = _chapter_and_next()
    with offline_page(browser, base_url, viewport=DESKTOP) as (pg, _g, _errors):
        pg.goto(base_url + page, wait_until="load")
        settle(pg)
        searches = _visible(pg, "form.bd-search, button.search-button-field").count()
        title_covered = pg.evaluate("""() => {
            const t = document.querySelector('#pst-primary-sidebar .navbar-brand');
            if (!t) return 'no title';
            // the theme scrolls the sidebar to the current chapter; look at its top
            document.getElementById('pst-primary-sidebar').scrollTop = 0;
            window.scrollTo(0, 0);
            const r = t.getBoundingClientRect();
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return t.contains(hit) ? null : (hit ? hit.outerHTML.slice(0, 120) : 'nothing');
        }""")
    assert searches == 1, f"{searches} search boxes on the page at 1440 px"
    assert title_covered is None, f"the sidebar's title is covered by {title_covered}"


# ---- Download -> .ipynb ----------------------------------------------------------------------

@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_download_ipynb_serves_the_reader_notebook(site, page):
    html = (site / page).read_text(encoding="utf-8")
    hrefs = re.findall(r'<a href="([^"]+\.ipynb)"[^>]*btn-download', html)
    chapter = page[: -len(".html")].rsplit("/", 1)[-1]
    reader = REPO / "notebooks" / f"{chapter}.ipynb"
    assert "_sources/" not in " ".join(hrefs), f"{page}: Download serves the source: {hrefs}"
    if not reader.is_file():
        assert hrefs == [], f"{page}: no reader notebook, yet a .ipynb download: {hrefs}"
        return
    assert len(hrefs) == 1, f"{page}: .ipynb downloads {hrefs}"
    served = ((site / page).parent / hrefs[0]).resolve()
    assert served.is_file(), f"{page}: Download → .ipynb points at a missing {hrefs[0]}"
    assert served.read_bytes() == reader.read_bytes(), (
        f"{page}: the downloaded notebook is not notebooks/{chapter}.ipynb")
    nb = json.loads(served.read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "{glue:text}" not in text and "```{prf:" not in text


# ---- no build-machine paths ------------------------------------------------------------------

class _Text(HTMLParser):
    """The text a reader can see or expand (everything but scripts and styles)."""

    def __init__(self):
        super().__init__()
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


BUILD_PATHS = re.compile(r"(?<![\w.])(/root/|/home/|/tmp/|\S*\.cache/|\S*site-packages/|"
                         + re.escape(str(REPO)) + "/)")


@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_a_path_of_the_build_machine(site, page):
    parser = _Text()
    parser.feed((site / page).read_text(encoding="utf-8"))
    text = "".join(parser.parts)
    hits = sorted({text[max(0, m.start() - 50): m.end() + 40].replace("\n", " ")
                   for m in BUILD_PATHS.finditer(text)})
    assert hits == [], f"{page} shows paths of the machine that built it:\n" + "\n".join(hits[:10])


def test_the_path_check_catches_a_cache_path_and_a_home_folder():
    text = ("loaded /root/.cache/specmath/model.gguf in 113.5 s; see "
            "/home/user/.venv/lib/python3.12/site-packages/x.py")
    assert len(BUILD_PATHS.findall(text)) >= 2
    assert BUILD_PATHS.findall("the cache of 24 tokens; p/q and 1/(1 - α)") == []


# ---- display math ------------------------------------------------------------------------------

_MATH = r"""() => [...document.querySelectorAll('article div.math')].map(d => {
  const m = d.querySelector('mjx-container[display="true"]');
  if (!m || !m.getClientRects().length) return null;
  const e = d.querySelector('.eqno');
  const mr = m.getBoundingClientRect(), er = e ? e.getBoundingClientRect() : null;
  const scrolls = m.scrollWidth > m.clientWidth + 2;
  const where = d.id || (d.parentElement.closest('[id]') || {}).id || '?';
  const text = (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 40);
  return {id: where + ' «' + text + '»', scrolls,
          cue: scrolls && d.classList.contains('specmath-scrolls')
               && getComputedStyle(m).backgroundImage.includes('gradient'),
          beside: !!(er && er.width && er.top < mr.bottom - 1 && er.bottom > mr.top + 1),
          size: parseFloat(m.style.fontSize || '100'),
          right: mr.right, column: d.getBoundingClientRect().right};
}).filter(x => x)"""


_INLINE = r"""() => [...document.querySelectorAll(
    'article mjx-container[jax="CHTML"]:not([display="true"])')].filter(m => {
  if (!m.getClientRects().length || m.closest('pre, .table-wrapper, .pst-scrollable-table-container, '
                                              + '.specmath-wide-inline, .cell_output'))
    return false;
  let b = m.parentElement;
  while (b && getComputedStyle(b).display.startsWith('inline')) b = b.parentElement;
  return m.getBoundingClientRect().right > b.getBoundingClientRect().right + 1;
}).map(m => (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 40))"""


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_wide_equations_on_a_phone_show_they_scroll_and_keep_their_number_clear(
        base_url, browser, page):
    with offline_page(browser, base_url, viewport=PHONE, mobile=True) as (pg, _g, _e):
        pg.goto(base_url + page, wait_until="load")
        settle(pg)
        pg.wait_for_timeout(300)  # specmath.js marks the wide ones after typesetting
        eqs = pg.evaluate(_MATH)
        cut_inline = pg.evaluate(_INLINE)
    no_cue = [e["id"] for e in eqs if e["scrolls"] and not e["cue"]]
    beside = [e["id"] for e in eqs if e["scrolls"] and e["beside"]]
    assert no_cue == [], f"{page}: equations scroll sideways with no cue at 390 px: {no_cue}"
    assert beside == [], (f"{page}: the number of a scrolling equation sits beside its "
                          f"hidden part at 390 px: {beside}")
    assert cut_inline == [], (f"{page}: inline formulas run past the right edge of their "
                              f"paragraph at 390 px: {cut_inline}")


#: On a desktop an equation may be shrunk to fit its column, but not below this (% of the
#: text size): smaller, it is hard to read; split it with `aligned` instead.
DESKTOP_MIN_SIZE = 85


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_every_display_equation_fits_on_a_desktop_in_proofs_too(base_url, browser, page):
    with offline_page(browser, base_url, viewport=DESKTOP) as (pg, _g, _e):
        pg.goto(base_url + page, wait_until="load")
        settle(pg)
        for btn in pg.locator("div.proof button.toggle-button, "
                              "div.solution button.toggle-button").all():
            btn.click()
        pg.wait_for_timeout(500)
        pg.evaluate("() => window.dispatchEvent(new Event('resize'))")
        pg.wait_for_timeout(400)
        eqs = pg.evaluate(_MATH)
    cut = [e["id"] for e in eqs if e["scrolls"]]
    small = [f"{e['id']} ({e['size']:.0f}%)" for e in eqs if e["size"] < DESKTOP_MIN_SIZE]
    assert cut == [], f"{page}: display equations cut at 1440 px: {cut}"
    assert small == [], (f"{page}: display equations shrunk below {DESKTOP_MIN_SIZE}% to fit "
                         f"the column at 1440 px (split them with aligned): {small}")
