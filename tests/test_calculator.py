"""specmath.calculator without a browser: the HTML it writes and the inputs it refuses.

The numbers themselves are checked in Chromium against specmath
(tests/site/test_calculator_browser.py, run by `make test`).
"""

from __future__ import annotations

import re

import pytest

from specmath.calculator import FORMULAS_JS, K_MAX, calculator_html, speedup_calculator


def test_speedup_calculator_returns_an_ipython_html_object():
    from IPython.display import HTML

    out = speedup_calculator()
    assert isinstance(out, HTML)
    assert "specmath-calculator" in out.data


def test_the_formulas_are_written_once_and_searched_up_to_k_max():
    html = calculator_html()
    assert html.count("function expectedTokens") == 1
    assert html.count("function speedup") == 1
    assert html.count("function optimalK") == 1
    assert "@K_MAX@" not in html and "@ID@" not in html
    assert f"kMax = {K_MAX}" in FORMULAS_JS and K_MAX == 64
    assert "Math.expm1" in FORMULAS_JS  # the accurate form of (1 − α^(k+1))/(1 − α)


def test_each_calculator_gets_its_own_id():
    ids = {re.search(r'id="(smc-[0-9a-f]+)"', calculator_html()).group(1) for _ in range(5)}
    assert len(ids) == 5


def test_initial_values_appear_in_the_inputs():
    html = calculator_html(0.65, 3, 7.5)
    assert 'class="smc-alpha" min="0" max="1" step="any" value="0.65"' in html
    assert 'value="3"' in html and 'value="7.5"' in html


def test_the_calculator_needs_no_network():
    html = calculator_html()
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)


@pytest.mark.parametrize("kwargs, name", [
    ({"alpha": 1.2}, "alpha"), ({"alpha": -0.1}, "alpha"), ({"k": -1}, "k"),
    ({"k": 2.5}, "k"), ({"k": K_MAX + 1}, "k"), ({"c": 0}, "c"), ({"c": float("inf")}, "c"),
])
def test_bad_initial_values_raise_valueerror_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        calculator_html(**kwargs)
