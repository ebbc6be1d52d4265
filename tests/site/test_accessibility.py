"""Accessibility of every page: axe-core (WCAG 2 A and AA) in Chromium, light and dark.

axe-core is vendored from npm (``scripts/vendor/package.json``, copied to
``tests/site/vendor`` by ``scripts/vendor_assets.sh``) and injected into each page after
MathJax and the widgets have rendered, so typeset math, figures, explorers and their
controls are all checked. A failure lists every rule broken, what the rule asks for, and
the elements that break it (CSS selector, HTML, axe's summary of the fix).
"""

from __future__ import annotations

import pytest
from sitekit import REQUIRE, content_pages, describe_violations, offline_page, settle
from sitekit import axe_violations as run_axe

pytestmark = pytest.mark.site

PAGES = content_pages() or [pytest.param("-", marks=() if REQUIRE else pytest.mark.skip(
    reason="no built site"))]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("page", PAGES)
def test_axe_finds_no_wcag_2_a_or_aa_violation(base_url, browser, page, dark):
    with offline_page(browser, base_url, dark=dark) as (pg, _guard, _errors):
        pg.goto(base_url + page, wait_until="load")
        if dark:
            pg.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
        settle(pg)
        violations = run_axe(pg)
    assert violations == [], (f"{page} ({'dark' if dark else 'light'} mode): axe-core finds "
                              f"WCAG 2 A/AA violations:\n" + describe_violations(violations))


def test_axe_catches_a_low_contrast_text_and_an_unlabelled_slider(browser, tmp_path):
    """The check can fail: a page with grey-on-white text and a bare range input."""
    from sitekit import serve

    (tmp_path / "bad.html").write_text(
        "<!doctype html><html lang='en'><head><title>bad</title></head><body><main>"
        "<h1>Bad page</h1><p style='color:#bbb;background:#fff'>faint text</p>"
        "<input type='range' min='0' max='1' step='0.1'></main></body></html>",
        encoding="utf-8")
    with serve(tmp_path) as url, offline_page(browser, url) as (pg, _guard, _errors):
        pg.goto(url + "bad.html", wait_until="load")
        ids = {v["id"] for v in run_axe(pg)}
    assert {"color-contrast", "label"} <= ids, ids
