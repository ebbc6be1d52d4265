"""A small Sphinx extension for the specmath site (loaded from _config.yml, local_extensions).

* Drops repeated inline ``<script>`` blocks: sphinx-thebe 0.3.1 registers its configuration
  (``const THEBE_JS_URL = …``) twice under Sphinx 7, and declaring a ``const`` twice is a
  JavaScript error on every page (the browser suite fails on console errors).
* Inserts ``specmath-widgets.js`` between RequireJS and the widget manager on pages with
  saved widget state, so the manager's fonts load from the vendored copy in
  ``_static/vendor/html-manager`` rather than a path relative to the page.
"""

from __future__ import annotations

from sphinx.application import Sphinx

__all__ = ["setup"]

_WIDGET_CONFIG = "specmath-widgets.js"


def _key(js) -> tuple:
    attrs = getattr(js, "attributes", {}) or {}
    # an inline script's filename is None or "" depending on who added it
    return (getattr(js, "filename", str(js)) or "", tuple(sorted((k, str(v)) for k, v in
                                                           attrs.items())))


def _fix_scripts(app: Sphinx, pagename: str, templatename: str, context: dict,
                 doctree) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    kept = []
    for js in scripts:
        k = _key(js)
        if k in seen:
            continue
        seen.add(k)
        kept.append(js)
    # the widget manager's font path: configure RequireJS before embed-amd.js runs
    names = [getattr(js, "filename", "") or "" for js in kept]
    embed = next((i for i, n in enumerate(names) if n.endswith("html-manager/embed-amd.js")),
                 None)
    if embed is not None and not any(n.endswith(_WIDGET_CONFIG) for n in names):
        from sphinx.builders.html._assets import _JavaScript

        kept.insert(embed, _JavaScript("_static/" + _WIDGET_CONFIG,
                                       priority=getattr(kept[embed], "priority", 500)))
    scripts[:] = kept


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _fix_scripts, priority=900)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
