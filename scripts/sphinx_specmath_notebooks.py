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
* Admonitions: a bold title and a block quote; one holding a table (the symbol boxes) is
  a bold title and the table, because nbconvert does not render tables in block quotes.
* Every internal link (``{eq}``, ``{numref}``, ``{prf:ref}``, ``{cite}``, ``{doc}``) points
  at the page and anchor of the published site (``html.baseurl``), with the site's text.
* Glued values print as on the site; a sentence with values that depend on the machine
  (glue keys with ``_live_``) says so once, at its end (:data:`LIVE_NOTE`), unless it
  already names the build machine.
* Nested lists are indented to their parent item's content column (three spaces under
  ``1. ``), so CommonMark renderers (JupyterLab, Colab, nbconvert) keep the nesting.
* Each figure's caption follows its code cell as a Markdown cell, ``*Fig. 5.1* …``,
  numbered as on the site.
* The Colab install cell (the first code cell, tagged ``remove-cell``) opens with a
  ``#@title`` line and carries ``cellView: form``, so Colab shows it collapsed to its title;
  ``jupyter.source_hidden`` hides it in JupyterLab.
* Inline math is written ``$x$`` (no inner spaces), which every Markdown renderer accepts.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx

__all__ = ["setup", "LIVE_NOTE", "LIVE_PHRASES", "INSTALL_TITLE", "is_live_key",
           "mark_live_sentences"]

#: Printed once at the end of a sentence whose glued values depend on the machine that
#: executed the chapter.
LIVE_NOTE = " (on the machine that built the website)"

#: A sentence containing one of these already says that its values are the build machine's
#: (the translator adds no :data:`LIVE_NOTE` to it; ``scripts/reader_notebooks.py`` ignores
#: its numbers when comparing notebooks).
LIVE_PHRASES = ("machine that built the website", "on the build machine")

#: First line of the Colab install cell in a reader notebook (Colab shows a cell with
#: ``cellView: form`` collapsed to its ``#@title``).
INSTALL_TITLE = "#@title Install specmath (Colab only; run this cell first)"

_LIVE_MARK = "\x00live\x00"   # placed after a live value, resolved per sentence
_SENTENCE = re.compile(r"(?<=[.!?])(?=\s)")
_TRAILING = re.compile(r"([.!?:;,]*\s*)$")

_PROOF_TYPES = ("theorem", "axiom", "lemma", "definition", "remark", "conjecture", "corollary",
                "algorithm", "criterion", "example", "property", "observation", "proposition",
                "assumption", "notation")


def is_live_key(key: str) -> bool:
    """Glue keys of machine-dependent values (chapter 7's live runs, chapter 8's float32
    rounding counts) contain ``_live_``."""
    return "_live_" in key


def mark_live_sentences(text: str) -> str:
    """Replace the live-value marks in a paragraph by one :data:`LIVE_NOTE` per sentence.

    The note goes before the sentence's closing punctuation; a sentence that already names
    the build machine (:data:`LIVE_PHRASES`) gets none.
    """
    if _LIVE_MARK not in text:
        return text
    out = []
    for sentence in _SENTENCE.split(text):
        if _LIVE_MARK in sentence:
            sentence = sentence.replace(_LIVE_MARK, "")
            if not any(ph in sentence for ph in LIVE_PHRASES):
                sentence = _TRAILING.sub(lambda m: LIVE_NOTE + m.group(1), sentence, count=1)
        out.append(sentence)
    return "".join(out)


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
            self._paragraph_starts: list[int] = []

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
            # the install cell's repository address, from _config.yml (one place)
            from sphinx_specmath_repository import fill, repository_of
            source = fill(cell.source, *repository_of(self.builder.config))
            if "remove-cell" in meta.get("tags", []):
                meta["jupyter"] = {"source_hidden": True}
                first = not any(c.cell_type == "code" for c in self.output["cells"])
                if first and "google.colab" in source:
                    # Colab ignores source_hidden: a form cell shows only its #@title
                    meta["cellView"] = "form"
                    if not source.startswith("#@title"):
                        source = INSTALL_TITLE + "\n" + source
            self.output["cells"].append(nbformat.v4.new_code_cell(source, metadata=meta))

        def _emit_captions(self, container) -> None:
            """``*Fig. 5.1* caption`` after the code cell, for each figure it outputs."""
            numbers = self.builder.env.toc_fignumbers.get(self.builder.docname, {})
            for fig in container.traverse(nodes.figure):
                caption = next((c for c in fig.children if isinstance(c, nodes.caption)), None)
                if caption is None:
                    continue
                num = next((numbers.get("figure", {}).get(i) for i in fig["ids"]
                            if i in numbers.get("figure", {})), None)
                self.add_markdown_cell()
                head = "*Fig. " + ".".join(map(str, num)) + "* " if num else ""
                self.markdown_lines.append(("\n" if self._in_solution else "") + head)
                for child in caption.children:
                    child.walkabout(self)
                self.markdown_lines.append("\n\n")
                self.add_markdown_cell()

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
                self._emit_captions(node)
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

        # ---- glue: one note per sentence with machine-dependent values ------------------
        def depart_inline(self, node):
            key = node.get("glue_key")
            if key and is_live_key(key):
                if self.table_builder or not self._paragraph_starts:
                    self._emit(LIVE_NOTE)
                else:
                    self.markdown_lines.append(_LIVE_MARK)
            super().depart_inline(node)

        def visit_paragraph(self, node):
            self._paragraph_starts.append(len(self.markdown_lines))
            super().visit_paragraph(node)

        def depart_paragraph(self, node):
            start = self._paragraph_starts.pop()
            if any(_LIVE_MARK in ln for ln in self.markdown_lines[start:]):
                text = mark_live_sentences("".join(self.markdown_lines[start:]))
                self.markdown_lines[start:] = [text]
            super().depart_paragraph(node)

        # ---- nested lists: indent to the content column of "1. " -------------------------
        def visit_enumerated_list(self, node):
            super().visit_enumerated_list(node)
            self.indents[-1] = len(self.bullets[-1]) + 1   # "1. " is three columns wide

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
            if any(ln.lstrip().startswith("|") for ln in body.splitlines()):
                # a table (the chapters' symbol boxes): nbconvert's Markdown (mistune) does
                # not render a table inside a block quote, so the box is a titled section
                self.markdown_lines.append(f"**{title}**\n\n{body}\n\n")
            else:
                quoted = "\n".join("> " + ln if ln.strip() else ">"
                                    for ln in body.splitlines())
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
