"""Reader notebooks: the chapters as plain CommonMark + LaTeX notebooks for Colab and Jupyter.

A local Sphinx extension (``_config.yml``, ``local_extensions``) on top of QuantEcon's
``sphinx-tojupyter`` builder. Run by ``make book`` as::

    jupyter-book build . --builder custom --custom-builder jupyter

which writes ``_build/jupyter/book/NN_*.ipynb`` from the same resolved doctrees as the
website, so theorem, equation, figure and exercise numbers, citations and glued values are
exactly the site's. ``scripts/reader_notebooks.py`` copies them to ``notebooks/``.

What this adds to sphinx-tojupyter (whose defaults target QuantEcon's RST lectures):

* **Code cells are the source notebook's cells, unchanged** (source and metadata, no
  outputs), including cells the website removes (``remove-cell``, e.g. the Colab install
  cell, which stays first) and the input of ``remove-input`` cells.
* Definitions, theorems, lemmas, proofs, algorithms: ``**Theorem 5.1 (Title).**`` headers.
* Exercises: ``**Exercise 5.1 (Title).**``; their cells carry the tag ``exercise``.
  Solutions: one collapsed ``<details>`` cell (prose and code), tagged ``solution``, which
  the student edition removes.
* Admonitions: a bold title and a block quote.
* Every internal link (``{eq}``, ``{numref}``, ``{prf:ref}``, ``{cite}``, ``{doc}``) points
  at the page and anchor of the published site (``html.baseurl``), with the site's text.
* Glued values print as on the site; values that depend on the machine (glue keys with
  ``_live_``) say so.
* Inline math is written ``$x$`` (no inner spaces), which every Markdown renderer accepts.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx

__all__ = ["setup", "LIVE_NOTE", "is_live_key"]

#: Printed after a glued value that depends on the machine that executed the chapter.
LIVE_NOTE = " (on the machine that built the website)"

_PROOF_TYPES = ("theorem", "axiom", "lemma", "definition", "remark", "conjecture", "corollary",
                "algorithm", "criterion", "example", "property", "observation", "proposition",
                "assumption", "notation")


def is_live_key(key: str) -> bool:
    """Glue keys of machine-dependent values (chapter 7's live runs) contain ``_live_``."""
    return "_live_" in key


def _patch_glue_roles() -> None:
    """Keep the glue key on the node myst-nb's ``{glue:text}`` role creates (HTML ignores it)."""
    from myst_nb.ext.glue import roles

    if getattr(roles.PasteTextRole, "_specmath_patched", False):
        return
    original = roles.PasteTextRole.run

    def run(self):
        out, msgs = original(self)
        key = self.text.rsplit(":", 1)[0] if ":" in self.text else self.text
        key = key.split("::", 1)[-1]
        for n in out:
            if isinstance(n, nodes.inline):
                n["glue_key"] = key
        return out, msgs

    roles.PasteTextRole.run = run
    roles.PasteTextRole._specmath_patched = True


def _make_translator(base):
    class ReaderTranslator(base):
        """sphinx-tojupyter's translator, adapted to this book (see the module docstring)."""

        def __init__(self, builder, document):
            super().__init__(builder, document)
            self._capture = 0
            self._in_solution = False
            self._admonition_starts: list[tuple[int, str]] = []
            self._tag_from: list[tuple[int, str]] = []
            docname = builder.docname
            self._page = builder.config.html_baseurl.rstrip("/") + "/" + docname + ".html"
            self._docdir = posixpath.dirname(docname)
            src = Path(builder.env.doc2path(docname))
            self._src_cells = []
            if src.suffix == ".ipynb":
                nb = nbformat.read(src, as_version=4)
                self._src_cells = [(i, c) for i, c in enumerate(nb.cells)
                                   if c.cell_type == "code"]
            self._emitted: set[int] = set()

        # ---- cells --------------------------------------------------------------------
        def add_markdown_cell(self, slide_type="slide", title=False):
            if self._capture:
                return
            super().add_markdown_cell(slide_type, title)

        def _emit_code(self, index: int, cell) -> None:
            self._emitted.add(index)
            if self._in_solution:
                self.markdown_lines.append("```python\n" + cell.source.rstrip() + "\n```\n\n")
                return
            self.add_markdown_cell()
            meta = {k: v for k, v in cell.metadata.items() if k in ("tags", "mystnb")}
            if "remove-cell" in meta.get("tags", []):
                meta["jupyter"] = {"source_hidden": True}
            # the install cell's repository address, from _config.yml (one place)
            from sphinx_specmath_repository import fill, repository_of
            source = fill(cell.source, *repository_of(self.builder.config))
            self.output["cells"].append(nbformat.v4.new_code_cell(source, metadata=meta))

        def _flush_removed(self, before: int | None) -> None:
            for i, c in self._src_cells:
                if i in self._emitted or (before is not None and i >= before):
                    continue
                self._emit_code(i, c)

        def dispatch_visit(self, node):
            # myst-nb numbers the lines of cell i from (i + 1) * 10000: cells the website
            # removed entirely (remove-cell) are emitted where they stood, before the first
            # node of any later cell
            line = getattr(node, "line", None)
            if isinstance(line, int) and line > 0 and not self._admonition_starts:
                self._flush_removed(line // 10000 - 1)
            return super().dispatch_visit(node)

        def visit_container(self, node):
            if node.get("nb_element") == "cell_code" and "cell_index" in node:
                idx = node["cell_index"]
                self._flush_removed(idx)
                cell = dict(self._src_cells).get(idx)
                if cell is not None:
                    self._emit_code(idx, cell)
                raise nodes.SkipNode
            super().visit_container(node)

        def depart_document(self, node):
            self._flush_removed(None)
            super().depart_document(node)

        # ---- math: $x$ ------------------------------------------------------------------
        def visit_Text(self, node):
            if self.in_math and not self.in_code_block:
                text = "$" + node.astext().strip() + "$"
                if self.table_builder:
                    self.table_builder["line_pending"] += text
                else:
                    self.markdown_lines.append(text)
                return
            super().visit_Text(node)

        # ---- glue ---------------------------------------------------------------------
        def depart_inline(self, node):
            key = node.get("glue_key")
            if key and is_live_key(key):
                self.markdown_lines.append(LIVE_NOTE)
            super().depart_inline(node)

        # ---- inline markup, also inside tables (sphinx-tojupyter wrote it outside) -------
        def _emit(self, text: str) -> None:
            if self.table_builder:
                self.table_builder["line_pending"] += text
            else:
                self.markdown_lines.append(text)

        def visit_strong(self, node):
            self._emit("**")

        depart_strong = visit_strong

        def visit_emphasis(self, node):
            self._emit("*")

        depart_emphasis = visit_emphasis

        def visit_literal(self, node):
            self._emit("`")

        depart_literal = visit_literal

        # ---- links to the published site -------------------------------------------------
        def _site_url(self, node) -> str | None:
            if "refuri" in node:
                uri = node["refuri"]
                if "://" in uri or uri.startswith("mailto:"):
                    return uri
                path, _, anchor = uri.partition("#")
                if not path:
                    target = self._page
                else:
                    for ext in (".ipynb", ".html", ".md"):
                        if path.endswith(ext):
                            path = path[: -len(ext)]
                    doc = posixpath.normpath(posixpath.join(self._docdir, path))
                    target = (self.builder.config.html_baseurl.rstrip("/") + "/" + doc
                              + ".html")
                return target + ("#" + anchor if anchor else "")
            if "refid" in node:
                return self._page + "#" + node["refid"]
            return None

        def visit_reference(self, node):
            if self.in_topic or self.in_toctree:
                return super().visit_reference(node)
            self.in_reference = True
            self._emit("[")

        def depart_reference(self, node):
            if self.in_topic or self.in_toctree:
                return super().depart_reference(node)
            url = self._site_url(node) or ""
            self._emit("](" + url.replace("(", "%28").replace(")", "%29") + ")")
            self.in_reference = False

        # {numref} resolves to Sphinx's number_reference, a subclass of reference
        visit_number_reference = visit_reference
        depart_number_reference = depart_reference

        # ---- sphinx-proof -------------------------------------------------------------
        def _format_proof_title(self, node, directive_name, display_name=None):
            display_name = display_name or directive_name.title()
            number = self._get_proof_node_number(node, directive_name)
            title = ""
            for child in node.children:
                if isinstance(child, nodes.title):
                    title = child.astext().strip()
                    break
            if title.startswith("(") and title.endswith(")"):
                title = title[1:-1].strip()
            head = display_name + (f" {number}" if number else "")
            if title:
                head += f" ({title})"
            return f"**{head}.**\n\n"

        def visit_proof_node(self, node):
            # sphinx-proof writes "Proof. " as the first words of the first paragraph
            self.add_markdown_cell()
            self._remove_title_node(node)
            for text in node.traverse(nodes.Text):
                if text.astext().startswith("Proof. "):
                    text.parent.replace(text, nodes.Text(text.astext()[len("Proof. "):]))
                break
            self.markdown_lines.append("*Proof.* ")

        def depart_proof_node(self, node):
            body = "".join(self.markdown_lines).rstrip()
            self.markdown_lines = [body + " $\\blacksquare$\n\n"]
            self.add_markdown_cell()

        # ---- admonitions: bold title and a block quote ----------------------------------
        def _start_quote(self, node, default_title: str):
            self.add_markdown_cell()
            title = default_title
            for child in node.children:
                if isinstance(child, nodes.title):
                    title = child.astext().strip()
            node.children = [c for c in node.children if not isinstance(c, nodes.title)]
            self._capture += 1
            self._admonition_starts.append((len(self.markdown_lines), title))

        def _end_quote(self):
            start, title = self._admonition_starts.pop()
            body = "".join(self.markdown_lines[start:]).strip("\n")
            del self.markdown_lines[start:]
            quoted = "\n".join("> " + ln if ln.strip() else ">" for ln in body.splitlines())
            self.markdown_lines.append(f"> **{title}**\n>\n{quoted}\n\n")
            self._capture -= 1
            self.add_markdown_cell()

        def visit_admonition(self, node):
            if "proof" in node.get("classes", []):  # the body of a sphinx-proof proof
                return
            self._start_quote(node, "Note")

        def depart_admonition(self, node):
            if "proof" in node.get("classes", []):
                return
            self._end_quote()

        # ---- sphinx-exercise ------------------------------------------------------------
        def _exercise_number(self, label: str) -> str:
            fig = self.builder.env.toc_fignumbers.get(self.builder.docname, {})
            num = fig.get("exercise", {}).get(label)
            return ".".join(map(str, num)) if num else ""

        def visit_exercise_enumerable_node(self, node):
            self.add_markdown_cell()
            title = ""
            head = node.children[0] if node.children else None
            if head is not None and head.tagname in ("exercise_title", "title"):
                sub = [c for c in head.traverse() if c.tagname == "exercise_subtitle"]
                title = " ".join((sub[0] if sub else head).astext().split())
                node.children = node.children[1:]
            if title.startswith("(") and title.endswith(")"):
                title = title[1:-1].strip()
            number = self._exercise_number(node.get("label", ""))
            text = "Exercise" + (f" {number}" if number else "") + (f" ({title})" if title else "")
            anchor = node.get("label", "")
            self.markdown_lines.append(f'<a id="{anchor}"></a>\n**{text}.**\n\n')
            self._tag_from.append((len(self.output["cells"]), "exercise"))

        def depart_exercise_enumerable_node(self, node):
            self.add_markdown_cell()
            start, tag = self._tag_from.pop()
            for c in self.output["cells"][start:]:
                c.metadata.setdefault("tags", []).append(tag)

        visit_exercise_node = visit_exercise_enumerable_node
        depart_exercise_node = depart_exercise_enumerable_node

        def visit_solution_node(self, node):
            self.add_markdown_cell()
            head = node.children[0] if node.children else None
            summary = "Solution"
            if head is not None and head.tagname in ("solution_title", "title"):
                summary = " ".join(head.astext().split())
                node.children = node.children[1:]
            self._in_solution = True
            self._capture += 1
            self.markdown_lines.append(f"<details>\n<summary><b>{summary}</b></summary>\n\n")

        def depart_solution_node(self, node):
            self.markdown_lines.append("\n</details>\n")
            self._capture -= 1
            self._in_solution = False
            n = len(self.output["cells"])
            self.add_markdown_cell()
            for c in self.output["cells"][n:]:
                c.metadata.setdefault("tags", []).append("solution")

    titles = {n: n.title() for n in ("note", "tip", "warning", "important", "hint", "caution",
                                      "attention", "danger", "error")}
    titles["seealso"] = "See also"
    for name, title in titles.items():
        def _visit(self, node, _t=title):
            self._start_quote(node, _t)

        def _depart(self, node):
            self._end_quote()

        setattr(ReaderTranslator, f"visit_{name}", _visit)
        setattr(ReaderTranslator, f"depart_{name}", _depart)

    for t in _PROOF_TYPES:
        def _v(self, node, _t=t):
            self.add_markdown_cell()
            self.markdown_lines.append(self._format_proof_title(node, _t))
            self._remove_title_node(node)

        setattr(ReaderTranslator, f"visit_{t}_node", _v)
    return ReaderTranslator


def _builder_inited(app: Sphinx) -> None:
    if app.builder.name != "jupyter":
        return
    from sphinx_tojupyter.writers import jupyter as writer_mod
    from sphinx_tojupyter.writers.translate_all import JupyterTranslator

    translator = _make_translator(JupyterTranslator)
    writer_mod.JupyterWriter._identify_translator = lambda self, builder: translator
    cfg = app.config
    cfg.tojupyter_lang_synonyms = ["ipython3", "ipython", "python"]
    cfg.tojupyter_drop_solutions = False
    cfg.tojupyter_drop_tests = False


def setup(app: Sphinx) -> dict:
    _patch_glue_roles()
    app.setup_extension("sphinx_tojupyter")
    app.connect("builder-inited", _builder_inited)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
