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
* Points the Download → ``.ipynb`` button at the same reader notebook, copied into the
  site as ``_notebooks/NN_*.ipynb`` (the button otherwise serves the MyST source from
  ``_sources/``, with ``{glue:text}`` roles and no numbers). A page without a reader
  notebook gets no ``.ipynb`` download.
* Sets pydata-sphinx-theme's ``navbar_persistent`` to nothing. Unset, pydata-sphinx-theme
  0.17 puts a search field there, so it renders its own top header on every page: a second
  search box above sphinx-book-theme's header, and a second, hidden pair of
  ``.primary-toggle`` / ``.secondary-toggle`` buttons ahead of the visible ones. Both
  themes wire only the first button of each class (``document.querySelector``;
  pydata/pydata-sphinx-theme#2451), so on a phone the visible ☰ and "On this page" did
  nothing and on a desktop ☰ could not collapse the sidebar. Without that header each
  button exists once and both themes wire it; the sidebar keeps its search field and the
  article header its search button.
* Replaces two bits of generated markup that fail WCAG 2 A/AA (see ``_A11Y_BODY``); the
  theme's own controls are named in ``book/_static/specmath.js``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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


#: Where the site serves the reader notebooks (Download → .ipynb).
SITE_READER_DIR = "_notebooks"


def _download_reader(app: Sphinx, pagename: str, templatename: str, context: dict,
                     doctree) -> None:
    chapter = pagename.rsplit("/", 1)[-1]
    reader = Path(app.srcdir) / READER_DIR / f"{chapter}.ipynb"
    pathto = context.get("pathto")

    def fix(buttons):
        kept = []
        for b in buttons or []:
            if isinstance(b, dict) and b.get("type") == "group":
                b["buttons"] = fix(b.get("buttons"))
            elif (isinstance(b, dict) and isinstance(b.get("url"), str)
                  and b["url"].endswith(".ipynb") and "_sources" in b["url"]):
                if not reader.is_file() or pathto is None:
                    continue  # no reader notebook: no notebook download at all
                b["url"] = pathto(f"{SITE_READER_DIR}/{chapter}.ipynb", 1)
                b["tooltip"] = "Download this chapter as a Jupyter notebook"
            kept.append(b)
        return kept

    if isinstance(context.get("header_buttons"), list):
        context["header_buttons"][:] = fix(context["header_buttons"])


def _copy_reader_notebooks(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    src = Path(app.srcdir) / READER_DIR
    if not src.is_dir():
        return
    dest = Path(app.outdir) / SITE_READER_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for nb in sorted(src.glob("*.ipynb")):
        shutil.copyfile(nb, dest / nb.name)


#: Markup in page bodies that fails WCAG 2 A/AA checks (axe-core), and its replacement:
#: docutils marks bibliography entries with the deprecated ARIA role doc-biblioentry
#: (inside a role="list", whose children must then be list items); myst-nb names every
#: "Show code cell source" toggle "Toggle hidden content", a name that does not contain
#: the text it shows (WCAG 2.5.3), so it is named by that text instead.
_A11Y_BODY = [
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
]


def _accessible_body(app: Sphinx, pagename: str, templatename: str, context: dict,
                     doctree) -> None:
    body = context.get("body")
    if isinstance(body, str):
        for old, new in _A11Y_BODY:
            body = body.replace(old, new)
        context["body"] = body


def _no_pydata_header(app: Sphinx, config) -> None:
    opts = config.html_theme_options
    if isinstance(opts, dict):
        opts.setdefault("navbar_persistent", [])


def setup(app: Sphinx) -> dict:
    # before pydata-sphinx-theme fills in its default at builder-inited
    app.connect("config-inited", _no_pydata_header)
    app.connect("html-page-context", _fix_scripts, priority=900)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", _colab_to_reader, priority=902)
    # after sphinx-book-theme's add_header_buttons (priority 501)
    app.connect("html-page-context", _download_reader, priority=903)
    app.connect("build-finished", _copy_reader_notebooks)
    app.connect("html-page-context", _accessible_body, priority=904)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
