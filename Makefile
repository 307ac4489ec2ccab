# etc: one-command build. `make` sets up .venv (translator + its PyPI dependencies +
# the grammar's Python binding) and builds the runtime libraries; `make test` runs the
# whole suite; `make demo` compiles and runs a sample on several nodes.

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
BUILD    := $(CURDIR)/build
STAMP    := $(VENV)/.etc-installed

GRAMMAR_SOURCES := grammar/src/parser.c grammar/setup.py grammar/pyproject.toml \
                   $(wildcard grammar/bindings/python/tree_sitter_threaded_c/*)

.PHONY: all test demo runtime grammar golden fuzz bench lint clean distclean

all: $(STAMP) runtime

# Re-installs only when the package metadata or the generated grammar changes.
$(STAMP): pyproject.toml $(GRAMMAR_SOURCES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q ./grammar -e '.[test]'
	@touch $@

runtime:
	@$(MAKE) --no-print-directory -C runtime BUILD=$(BUILD)/runtime

# pytest exits 5 when it collects nothing: that is a failure here, never a pass.
test: all
	@$(PY) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: error: pytest collected no tests"; exit 1; fi; \
	exit $$rc

demo: all
	@$(PY) -m etcpre.demo

# Regenerate grammar/src from grammar/grammar.js (needs the tree-sitter CLI:
# `cargo install tree-sitter-cli --locked`). Review the diff, then commit src/.
grammar:
	@$(MAKE) --no-print-directory -C grammar generate

# Regenerate the translator's golden files; review `git diff tests/golden` after.
golden: $(STAMP)
	@$(PY) tests/golden/regen.py

# A longer mutation-fuzz run of the translator than the suite's few seconds.
fuzz: $(STAMP)
	@$(PY) tests/translator/fuzz.py 300

bench: all
	@$(PY) bench/run.py

lint: $(STAMP)
	$(VENV)/bin/ruff check etcpre tests bench

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(VENV)
