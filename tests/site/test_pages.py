"""Every page of the built site, in headless Chromium, offline.

Pages are discovered from the build (``conftest.discover_pages``), so a new chapter is
covered without touching this file. Each page is loaded once (``visit``) with every
request outside 127.0.0.1 blocked; the tests below read what that visit recorded. A
full-page screenshot of every page is left in ``_build/html/_screenshots/`` for a person
to look over.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from sitekit import (
    REPO,
    REQUIRE,
    SITE,
    content_pages,
    directive_counts,
    discover_pages,
    expected_colab,
    html_ids,
    is_redirect,
    offline_page,
    repo_config,
    resolve_internal,
    serve,
    set_calculator,
    source_kind,
    source_text,
    specmath_calculator_values,
)

pytestmark = pytest.mark.site

# No built site: skip, or fail through the `site` fixture when SPECMATH_REQUIRE_SITE is set.
PAGES = content_pages() or [pytest.param("-", marks=() if REQUIRE else pytest.mark.skip(
    reason="no built site"))]
RAW_MATH = [r"\(", r"\)", r"\[", r"\]", "$$", r"\begin{", r"\frac", r"\mathbb"]


def _report(visit, page):
    return visit(page)


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_javascript_errors(visit, page):
    rep = _report(visit, page)
    assert rep.errors == [], f"{page}: console errors / failed requests:\n" + "\n".join(rep.errors)


@pytest.mark.parametrize("page", PAGES)
def test_page_reads_offline_no_request_leaves_loopback(visit, page):
    rep = _report(visit, page)
    assert rep.blocked == [], (f"{page} tried to fetch from outside the site (blocked):\n"
                               + "\n".join(rep.blocked))


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset_and_no_raw_tex_is_left(visit, page):
    f = _report(visit, page).facts
    assert f["untypeset"] == [], f"{page}: math left untypeset by MathJax: {f['untypeset'][:5]}"
    if f["nMath"]:
        assert f["nMjx"] >= f["nMath"], f"{page}: {f['nMath']} math nodes, {f['nMjx']} typeset"
    raw = [tok for tok in RAW_MATH if tok in f["text"]]
    where = {tok: f["text"][max(0, f["text"].index(tok) - 60): f["text"].index(tok) + 60]
             for tok in raw}
    assert not raw, f"{page}: raw TeX left in the text: {where}"


@pytest.mark.parametrize("page", PAGES)
def test_display_math_fits_the_text_column(visit, page):
    wide = _report(visit, page).facts["wideMath"]
    assert wide == [], (f"{page}: display equations wider than the column even at 70% size "
                        f"(split them with aligned/multline): {wide}")


@pytest.mark.parametrize("page", PAGES)
def test_every_image_loads(visit, page):
    imgs = _report(visit, page).facts["imgs"]
    broken = [i["src"] for i in imgs if not (i["complete"] and i["w"] > 0)]
    assert broken == [], f"{page}: images that did not load: {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_figures_have_alt_text(visit, page):
    imgs = [i for i in _report(visit, page).facts["imgs"] if i["content"]]
    bad = [i["src"] for i in imgs
           if not i["alt"].strip() or i["alt"] == i["src"]
           or re.search(r"\.(png|svg|jpe?g)$", i["alt"].strip())]
    assert bad == [], (f"{page}: output images without real alt text (give the cell "
                       f"`mystnb: image: alt:` metadata): {bad}")


@pytest.mark.parametrize("page", PAGES)
def test_figures_have_captions(visit, page):
    # An explorer's default view (an image followed by its frozen controls in the same
    # cell) is exempt: a figure caption there would be repeated under the controls.
    imgs = [i for i in _report(visit, page).facts["imgs"] if i["content"] and not i["explorer"]]
    bad = [i["src"] for i in imgs if not i["caption"]]
    assert bad == [], (f"{page}: output images without a caption (give the cell "
                       f"`mystnb: figure: caption:` metadata): {bad}")


@pytest.mark.parametrize("page", PAGES)
def test_theorem_proof_and_exercise_blocks_match_the_source(site, visit, page):
    expected = directive_counts(source_text(site, page) or "")
    got = _report(visit, page).facts["blocks"]
    for kind, n in expected.items():
        assert got.get(kind, 0) == n, (f"{page}: the source has {n} {kind} block(s), the "
                                       f"page shows {got.get(kind, 0)}")


@pytest.mark.parametrize("page", PAGES)
def test_solutions_are_collapsed_and_open_on_click(visit, page):
    rep = _report(visit, page)
    for sol in rep.solutions_before:
        assert sol["dropdown"], f"{page}: solution {sol['id']} is not a dropdown (:class: dropdown)"
        assert not sol["shown"], f"{page}: solution {sol['id']} is open before any click"
    after = {s["id"]: s for s in rep.solutions_after}
    for sol in rep.solutions_before:
        assert after[sol["id"]]["shown"], f"{page}: solution {sol['id']} did not open on click"


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_and_cross_references_resolve(site, base_url, visit, page):
    rep = _report(visit, page)
    own_ids = set(rep.facts["ids"])
    broken = []
    for link in rep.facts["links"]:
        href = link["href"]
        if not href.startswith(base_url):
            continue
        target, frag = resolve_internal(site, base_url, href)
        if not target.is_file():
            broken.append(f"{link['raw']} -> missing file {target.relative_to(site)}")
            continue
        if not frag:
            continue
        same = target.resolve() == (site / page).resolve()
        ids = own_ids if same else html_ids(target)
        if target.suffix == ".html" and frag not in ids:
            broken.append(f"{link['raw']} ({link['text']!r}) -> no #{frag} in "
                          f"{target.relative_to(site)}")
    assert broken == [], f"{page}: broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES)
def test_colab_button_opens_this_chapters_notebook(site, visit, page):
    if source_kind(site, page) != ".ipynb":
        pytest.skip("not a notebook page")
    colab = _report(visit, page).facts["colab"]
    want = expected_colab(page)
    assert colab, f"{page}: no Colab launch button"
    assert set(colab) == {want}, f"{page}: Colab button points at {colab}, expected {want}"
    reader = REPO / "notebooks" / (page[: -len(".html")].rsplit("/", 1)[-1] + ".ipynb")
    assert reader.is_file(), (
        f"{page}: the Colab link names a reader notebook that is not in the repository")


@pytest.mark.parametrize("page", PAGES)
def test_title_and_navigation_match_the_heading(site, visit, page):
    if source_kind(site, page) is None:
        pytest.skip("generated page (index, search), not a chapter")
    f = _report(visit, page).facts
    book = repo_config()["title"]
    if f["h1"] is None:
        pytest.skip("page without a heading")

    def unnumbered(text: str) -> str:  # numbered chapters: "5. Speedup …"
        return re.sub(r"^\d+(\.\d+)*\.?\s+", "", text.strip())

    h1 = unnumbered(f["h1"])
    assert unnumbered(f["title"]) in (f"{h1} — {book}", h1), (
        f"{page}: <title> {f['title']!r} does not match the heading {f['h1']!r}")
    if f["navCurrent"] is not None:
        assert unnumbered(f["navCurrent"]) == h1, (
            f"{page}: navigation says {f['navCurrent']!r}, the page says {f['h1']!r}")


@pytest.mark.parametrize("page", PAGES)
def test_footer_shows_year_and_authors(visit, page):
    footer = _report(visit, page).facts["footer"]
    cfg = repo_config()
    assert str(cfg["copyright"]) in footer, f"{page}: footer lacks the year {cfg['copyright']}"
    assert cfg["author"].lower() in footer.lower(), f"{page}: footer lacks the authors"


@pytest.mark.parametrize("page", PAGES)
def test_a_screenshot_of_the_page_is_saved(visit, page):
    shot = _report(visit, page).screenshot
    assert shot is not None and shot.is_file()
    with open(shot, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == 1280 and height >= 300, f"{page}: screenshot is {width}×{height}"


def test_every_chapter_in_the_table_of_contents_is_built(site):
    if SITE != (REPO / "_build" / "html").resolve():
        pytest.skip("a site built from another table of contents (SPECMATH_SITE)")
    import yaml

    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [ch["file"] for part in toc.get("parts", [])
                             for ch in part.get("chapters", [])]
    missing = [f for f in files if not (site / (f + ".html")).is_file()]
    assert missing == [], f"chapters in _toc.yml without a page: {missing}"


def test_redirect_pages_point_at_existing_pages(site):
    for page in discover_pages():
        if not is_redirect(site / page):
            continue
        text = (site / page).read_text(encoding="utf-8")
        m = re.search(r'url=([^"\']+)', text, re.IGNORECASE)
        assert m, f"{page}: redirect without a target"
        assert ((site / page).parent / m.group(1)).is_file(), f"{page} -> {m.group(1)} is missing"


# ---- dark mode -------------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_figures_sit_on_white_in_dark_mode(site, base_url, browser, visit, page):
    if not [i for i in _report(visit, page).facts["imgs"] if i["content"]]:
        pytest.skip("no figures on this page")
    with offline_page(browser, base_url, dark=True) as (pg, _guard, _errors):
        pg.goto(base_url + page, wait_until="load")
        pg.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
        backgrounds = pg.evaluate("""() => [...document.querySelectorAll(
              'article .cell_output img, article figure img')]
            .map(i => [i.getAttribute('src'), getComputedStyle(i).backgroundColor])""")
        shot = site / "_screenshots" / "dark" / (page[:-5].replace("/", "__") + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(shot), full_page=True)
    not_white = [src for src, bg in backgrounds if bg != "rgb(255, 255, 255)"]
    assert not_white == [], f"{page}: figures on a dark background in dark mode: {not_white}"


# ---- the calculator on the site (chapter 5) ------------------------------------------------

CALC_PAGES = [p for p in PAGES if isinstance(p, str)
              and "specmath-calculator" in (SITE / p).read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", CALC_PAGES or [pytest.param(
    "-", marks=pytest.mark.skip(reason="no page with the calculator yet"))])
def test_calculator_on_the_site_agrees_with_specmath(base_url, browser, page):
    with offline_page(browser, base_url) as (pg, guard, errors):
        pg.goto(base_url + page, wait_until="load")
        for alpha, k, c in [(0.8, 4, 10), (0.6, 3, 5), (0.95, 12, 50), (0.3, 1, 2)]:
            shown = set_calculator(pg, ".specmath-calculator", alpha, k, c)
            want = specmath_calculator_values(alpha, k, c)
            assert {key: shown[key] for key in want} == want, (alpha, k, c)
        assert errors == [] and guard.blocked == []


def test_screenshots_are_inside_the_build(site, visit):
    for page in content_pages():
        visit(page)
    shots = sorted(Path(site, "_screenshots").glob("*.png"))
    assert len(shots) == len(content_pages())


def test_the_offline_guard_blocks_and_records_requests_that_leave_loopback(browser, tmp_path):
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><head><script src='https://cdn.jsdelivr.net/npm/x.js'></script>"
        "</head><body><img src='https://example.org/a.png'>ok</body></html>", encoding="utf-8")
    with serve(tmp_path) as url, offline_page(browser, url) as (pg, guard, _errors):
        pg.goto(url + "index.html", wait_until="load")
    assert sorted(guard.blocked) == ["https://cdn.jsdelivr.net/npm/x.js",
                                     "https://example.org/a.png"]
