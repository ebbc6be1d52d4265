"""The explorers on the built website respond without a kernel (issue 15 item 2).

For every chapter page with an explorer (``specmath.widgets.*_explorer`` in its source):
the frozen ipywidgets controls are not shown; a live explorer's Vega chart is drawn, each
of its controls is labelled, and moving each slider (or menu) changes the drawn SVG; an
explorer without a live chart shows its default figure and no control at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sitekit import REPO, offline_page, settle

pytestmark = pytest.mark.site


def _explorer_pages() -> list[str]:
    pages = []
    for md in sorted((REPO / "book" / "md").glob("[0-9][0-9]_*.md")):
        if re.search(r"^\w+_explorer\(", md.read_text(encoding="utf-8"), re.MULTILINE):
            pages.append(f"book/{md.stem}.html")
    return pages


PAGES = _explorer_pages()


def test_explorer_pages_are_found():
    assert len(PAGES) >= 8, PAGES


def _open(browser, base_url, page_path, viewport=(1280, 900)):
    return offline_page(browser, base_url, viewport=viewport)


READY = """() => [...document.querySelectorAll('.specmath-live')]
    .filter(el => el.querySelector('script.specmath-live-spec'))
    .every(el => el.getAttribute('data-specmath-live'))"""

SVG = """(i) => { const el = [...document.querySelectorAll('.specmath-live-chart')][i];
    const svg = el && el.querySelector('svg'); return svg ? svg.outerHTML : null; }"""


@pytest.mark.parametrize("page_path", PAGES)
def test_explorer_sliders_change_the_figure_and_no_control_is_frozen(site, base_url, browser,
                                                                     page_path):
    assert (Path(site) / page_path).is_file(), f"{page_path} not built"
    with _open(browser, base_url, page_path) as (page, guard, errors):
        page.goto(base_url + page_path, wait_until="load")
        settle(page)
        page.wait_for_function(READY, timeout=30_000)
        facts = page.evaluate("""() => {
            const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
            const lives = [...document.querySelectorAll('.specmath-live')];
            return {
              explorers: lives.length,
              states: lives.map(el => el.getAttribute('data-specmath-live') || 'static'),
              frozen: [...document.querySelectorAll('.widget-slider, .widget-dropdown, '
                       + '.jupyter-widgets input, .jupyter-widgets select')].filter(visible).length,
              staticFigures: lives.map(el => {
                  const out = el.closest('.cell_output');
                  return [...out.querySelectorAll('img')].filter(visible).length; }),
            };
        }""")
        assert facts["explorers"] >= 1, f"{page_path}: no explorer marker"
        assert "failed" not in facts["states"], f"{page_path}: a live chart failed: {errors}"
        assert facts["frozen"] == 0, f"{page_path}: frozen ipywidgets controls are visible"
        for i, state in enumerate(facts["states"]):
            if state == "static":
                assert facts["staticFigures"][i] >= 1, f"{page_path}: explorer {i} shows nothing"
        charts = page.evaluate("() => document.querySelectorAll('.specmath-live-chart').length")
        for ci in range(charts):
            controls = page.evaluate("""(i) => {
                const el = [...document.querySelectorAll('.specmath-live-chart')][i];
                return [...el.querySelectorAll('.vega-bind input[type=range], .vega-bind select')]
                  .map(inp => ({label: inp.getAttribute('aria-label') || '',
                                tag: inp.tagName, min: inp.min, max: inp.max,
                                value: inp.value,
                                options: inp.tagName === 'SELECT' ?
                                  [...inp.options].map(o => o.value) : []}));
            }""", ci)
            assert controls, f"{page_path}: live chart {ci} has no controls"
            for j, c in enumerate(controls):
                assert c["label"].strip(), f"{page_path}: control {j} of chart {ci} unlabelled"
                before = page.evaluate(SVG, ci)
                if c["tag"] == "SELECT":
                    new = next(o for o in c["options"] if o != c["value"])
                else:
                    new = c["max"] if float(c["value"]) != float(c["max"]) else c["min"]
                page.evaluate("""([i, j, v]) => {
                    const el = [...document.querySelectorAll('.specmath-live-chart')][i];
                    const inp = [...el.querySelectorAll(
                        '.vega-bind input[type=range], .vega-bind select')][j];
                    inp.value = v;
                    inp.dispatchEvent(new Event('input', {bubbles: true}));
                    inp.dispatchEvent(new Event('change', {bubbles: true}));
                }""", [ci, j, new])
                page.wait_for_function("([i, before]) => { const el = [...document."
                                       "querySelectorAll('.specmath-live-chart')][i];"
                                       "const svg = el.querySelector('svg');"
                                       "return svg && svg.outerHTML !== before; }",
                                       arg=[ci, before], timeout=5_000)
                assert page.evaluate(SVG, ci) != before, \
                    f"{page_path}: moving '{c['label']}' did not change the figure"
        assert guard.blocked == [], guard.blocked
        assert [e for e in errors if "vega" in e.lower() or "specmath" in e.lower()] == []
