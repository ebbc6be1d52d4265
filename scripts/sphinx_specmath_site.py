"""A small Sphinx extension for the specmath site (loaded from _config.yml, local_extensions).

* Drops repeated inline ``<script>`` blocks: sphinx-thebe 0.3.1 registers its configuration
  (``const THEBE_JS_URL = …``) twice under Sphinx 7, and declaring a ``const`` twice is a
  JavaScript error on every page (the browser suite fails on console errors).
* Points each chapter's Colab launch button at its **reader notebook**
  (``notebooks/NN_*.ipynb``, plain Markdown with the site's numbers; see
  ``scripts/reader_notebooks.py``) instead of the MyST-flavoured source in ``book/``.
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


#: Where the reader notebooks live in the repository.
READER_DIR = "notebooks"


def _colab_to_reader(app: Sphinx, pagename: str, templatename: str, context: dict,
                     doctree) -> None:
    colab = (app.config.html_theme_options.get("launch_buttons", {}) or {}).get("colab_url")
    if not colab:
        return
    prefix = colab.rstrip("/") + "/github/"
    chapter = pagename.rsplit("/", 1)[-1]

    def fix(buttons):
        for b in buttons or []:
            if isinstance(b, dict):
                url = b.get("url")
                if isinstance(url, str) and url.startswith(prefix) and url.endswith(".ipynb"):
                    head, _, _ = url.rpartition("/blob/")
                    branch = url[len(head) + len("/blob/"):].split("/", 1)[0]
                    b["url"] = f"{head}/blob/{branch}/{READER_DIR}/{chapter}.ipynb"
                fix(b.get("buttons"))

    fix(context.get("header_buttons"))


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _fix_scripts, priority=900)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", _colab_to_reader, priority=902)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
