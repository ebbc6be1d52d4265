"""The kernel-free speedup calculator (specmath.calculator), run in headless Chromium.

It is checked on a small page of its own (so it is tested even before chapter 5 is
built): its JavaScript formulas against specmath on a grid of α, k and c (the same
numbers, to 1e-12 relative, and the same best k), then the widget itself, by typing into
its inputs, against specmath to 3 decimals, as the reader sees them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sitekit import offline_page, serve, set_calculator, specmath_calculator_values

import specmath as sm
from specmath.calculator import K_MAX, calculator_html

pytestmark = pytest.mark.site

ALPHAS = [0.0, 0.05, 0.3, 0.5, 0.6, 0.75, 0.8, 0.9, 0.95, 0.99, 0.999, 1.0]
KS = [0, 1, 2, 3, 4, 5, 7, 10, 16, 32, 64]
CS = [0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 25.0, 50.0, 100.0, 1000.0]


@pytest.fixture(scope="module")
def calc_page(tmp_path_factory, browser):
    d = tmp_path_factory.mktemp("calculator")
    (d / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>calculator</title></head>"
        f"<body>{calculator_html(0.8, 4, 10.0)}{calculator_html(0.5, 2, 3.0)}</body></html>",
        encoding="utf-8")
    with serve(d) as url, offline_page(browser, url) as (page, guard, errors):
        page.goto(url + "index.html", wait_until="load")
        yield page, guard, errors


def test_javascript_formulas_agree_with_specmath_on_a_grid(calc_page):
    page, _, errors = calc_page
    grid = list(itertools.product(ALPHAS, KS, CS))
    js = page.evaluate("""grid => grid.map(([a, k, c]) => {
        const F = window.specmathCalculator;
        return [F.expectedTokens(a, k), F.speedup(a, k, c), F.optimalK(a, c)];
    })""", grid)
    js = np.array(js, dtype=float)
    a, k, c = (np.array(col, dtype=float) for col in zip(*grid, strict=True))
    np.testing.assert_allclose(js[:, 0], sm.expected_tokens(a, k.astype(int)), rtol=1e-12)
    np.testing.assert_allclose(js[:, 1], sm.speedup(a, k.astype(int), c), rtol=1e-12)
    np.testing.assert_array_equal(js[:, 2].astype(int), sm.optimal_k(a, c, k_max=K_MAX))
    assert errors == []


def test_best_k_search_matches_specmath_on_a_fine_alpha_c_grid(calc_page):
    page, _, _ = calc_page
    alphas = np.round(np.linspace(0, 1, 101), 2)
    cs = np.array([0.25, 0.5, 1, 1.5, 2, 4, 8, 16, 32, 64, 128, 1e4])
    aa, cc = np.meshgrid(alphas, cs, indexing="ij")
    js = page.evaluate("""([as, cs]) => as.map((a, i) => window.specmathCalculator.optimalK(a,
                                                                                     cs[i]))""",
                       [aa.ravel().tolist(), cc.ravel().tolist()])
    np.testing.assert_array_equal(np.array(js), sm.optimal_k(aa.ravel(), cc.ravel()))


@pytest.mark.parametrize("alpha, k, c", [
    (0.8, 4, 10), (0.6, 3, 5), (0.95, 12, 50), (0.3, 1, 2), (0.0, 0, 1), (1.0, 5, 10),
    (0.999, 64, 1000), (0.5, 0, 0.5), (0.9, 7, 3.5), (0.72, 2, 1),
])
def test_the_widget_shows_specmaths_numbers_to_three_decimals(calc_page, alpha, k, c):
    page, guard, errors = calc_page
    shown = set_calculator(page, ".specmath-calculator", alpha, k, c)
    want = specmath_calculator_values(alpha, k, c)
    assert shown["state"] == "ok" and shown["error"] == ""
    assert {key: shown[key] for key in want} == want
    assert shown["points"] >= 17 and shown["best_marker"] and shown["current_marker"]
    assert errors == [] and guard.blocked == []


def test_two_calculators_on_one_page_are_independent(calc_page):
    page, _, _ = calc_page
    set_calculator(page, ".specmath-calculator >> nth=0", 0.9, 5, 20)
    second = page.locator(".specmath-calculator").nth(1)
    assert second.locator(".smc-en").text_content() == f"{sm.expected_tokens(0.5, 2):.3f}"


@pytest.mark.parametrize("alpha, k, c, message", [
    (1.5, 4, 10, "α must be"), (-0.1, 4, 10, "α must be"), (0.8, 2.5, 10, "k must be"),
    (0.8, 65, 10, "k must be"), (0.8, 4, 0, "c must be"), (0.8, 4, -3, "c must be"),
])
def test_bad_input_shows_a_message_naming_the_rule(calc_page, alpha, k, c, message):
    page, _, errors = calc_page
    shown = set_calculator(page, ".specmath-calculator", alpha, k, c)
    assert shown["state"] == "error" and shown["error"].startswith(message)
    assert errors == []
