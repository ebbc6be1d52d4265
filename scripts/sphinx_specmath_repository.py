"""One place for the repository's address: ``_config.yml``'s ``repository.url`` and ``.branch``.

A fork changes those two values (one block) and rebuilds; everything that names the
repository takes it from there:

* the **Colab buttons** of the site: sphinx-book-theme builds them from ``repository``;
* the **install cells** of the chapters (first code cell): the MyST sources say
  ``"specmath @ git+{repository_url}@{repository_branch}"`` and the reader notebooks
  (``sphinx_specmath_notebooks``, hence ``notebooks/`` and the student edition) carry the
  configured address, via :func:`fill`;
* **prose** (the preface's clone instructions): the MyST substitutions
  ``{{ repository_url }}`` and ``{{ repository_branch }}``, set here from the same values;
* the **recorded results** need no address: they ship with the package
  (``specmath.notebook.RESULTS_DIR``).

``tests/test_repository_address.py`` greps the tree for a typed address outside
``_config.yml``.
"""

from __future__ import annotations

from pathlib import Path

#: The placeholders of the chapters' install cells, filled in by :func:`fill`.
URL_PLACEHOLDER = "{repository_url}"
BRANCH_PLACEHOLDER = "{repository_branch}"


def read_repository(root: str | Path) -> tuple[str, str]:
    """``(url, branch)`` from ``root/_config.yml`` (branch defaults to ``main``)."""
    import yaml

    cfg = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    repo = cfg.get("repository") or {}
    url = str(repo.get("url", "")).rstrip("/")
    if not url.startswith("https://"):
        raise ValueError(f"_config.yml: repository.url must be an https:// address; got {url!r}")
    return url, str(repo.get("branch", "main"))


def fill(source: str, url: str, branch: str) -> str:
    """``source`` with the install cell's placeholders replaced by the repository."""
    return source.replace(URL_PLACEHOLDER, url.rstrip("/")).replace(BRANCH_PLACEHOLDER, branch)


def _repository(config) -> tuple[str, str]:
    opts = config.html_theme_options if isinstance(config.html_theme_options, dict) else {}
    return (str(opts.get("repository_url", "")).rstrip("/"),
            str(opts.get("repository_branch", "") or "main"))


def _substitutions(app, config) -> None:
    url, branch = _repository(config)
    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    subs.setdefault("repository_url", url)
    subs.setdefault("repository_branch", branch)
    config.myst_substitutions = subs


def repository_of(config) -> tuple[str, str]:
    """``(url, branch)`` of a Sphinx config (jupyter-book passes ``repository`` as
    ``html_theme_options.repository_url`` / ``repository_branch``)."""
    return _repository(config)


def setup(app) -> dict:
    app.connect("config-inited", _substitutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
