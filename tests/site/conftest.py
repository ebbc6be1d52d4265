"""Fixtures of the browser suite (defined in ``sitekit``, a uniquely named module, so the
test files can import its helpers without clashing with ``tests/conftest.py``)."""

from sitekit import base_url, browser, screenshots_dir, site, visit  # noqa: F401
