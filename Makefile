# etc: one-command build. `make` sets up .venv (translator + its PyPI dependencies +
# the grammar's Python binding) and builds the runtime libraries; `make test` runs the
# whole suite; `make demo` compiles and runs a sample on several nodes.

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
BUILD    := $(CURDIR)/build
STAMP    := $(VENV)/.etc-installed
GSTAMP   := $(VENV)/.etc-grammar

GRAMMAR_SOURCES := grammar/src/parser.c grammar/setup.py grammar/pyproject.toml \
                   grammar/queries/highlights.scm \
                   $(wildcard grammar/bindings/python/tree_sitter_threaded_c/*)

.PHONY: all test test-asan test-mpich demo native runtime runtime-san runtime-debug runtime-mpich grammar golden fuzz bench lint clean distclean

all: $(STAMP) native runtime

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The grammar's binding is rebuilt only when its generated sources change.
$(GSTAMP): $(VENV)/bin/python $(GRAMMAR_SOURCES)
	@echo "pip install ./grammar (log: $(VENV)/pip-grammar.log)"
	@$(PY) -m pip install ./grammar > $(VENV)/pip-grammar.log 2>&1 || { cat $(VENV)/pip-grammar.log; exit 1; }
	@touch $@

# The package itself is installed in editable mode (the runtime is found beside it).
$(STAMP): $(GSTAMP) pyproject.toml
	@echo "pip install -e .[test] (log: $(VENV)/pip-etc.log)"
	@$(PY) -m pip install -e '.[test]' > $(VENV)/pip-etc.log 2>&1 || { cat $(VENV)/pip-etc.log; exit 1; }
	@$(PY) -m etcpre.cli.venv_scripts $(VENV)/bin
	@touch $@

# The translator's C part: the clang view's walk over a function's cursors, loaded by
# etcpre/passes/cursor_walk.py (it calls the libclang the Python binding loads).
NATIVE_FLAGS := -std=c11 -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
                -fPIC -shared
NATIVE_LIB   := $(BUILD)/native/libetc_cursor_walk.so

native: $(NATIVE_LIB)

$(NATIVE_LIB): etcpre/native/cursor_walk.c etcpre/native/cursor_walk.h
	@mkdir -p $(@D)
	@echo "  CC      $< (shared)"
	@$(CC) $(NATIVE_FLAGS) -o $@ $< -ldl

runtime:
	@$(MAKE) --no-print-directory -C runtime BUILD=$(BUILD)/runtime

# The runtime again with ASan+UBSan, for `make test-asan` (etcc picks it for -fsanitize).
runtime-san:
	@$(MAKE) --no-print-directory -C runtime BUILD=$(BUILD)/runtime-san SAN=1

# The runtime with its internal invariants checked (ETC_ASSERT; etcc picks it
# when ETC_RUNTIME=debug): the suite runs the stress and conformance tests on it.
runtime-debug:
	@$(MAKE) --no-print-directory -C runtime BUILD=$(BUILD)/runtime-debug DEBUG=1

# MPICH beside Open MPI (Debian names its wrapper and launcher mpicc.mpich and
# mpiexec.mpich): the runtime built with it into build/mpich/, an ETC_HOME of its
# own, on which `make test` runs the mpi target's tests a second time.
MPICH_CC   := mpicc.mpich
MPICH_RUN  := mpiexec.mpich
MPICH_HOME := $(BUILD)/mpich
HAVE_MPICH := $(and $(shell command -v $(MPICH_CC) 2>/dev/null),$(shell command -v $(MPICH_RUN) 2>/dev/null))

runtime-mpich:
	@mkdir -p $(MPICH_HOME) && ln -sfn $(CURDIR)/runtime $(MPICH_HOME)/runtime
	@ETC_MPICC=$(MPICH_CC) $(MAKE) --no-print-directory -C runtime BUILD=$(MPICH_HOME)/build/runtime
	@ETC_MPICC=$(MPICH_CC) $(MAKE) --no-print-directory -C runtime \
		BUILD=$(MPICH_HOME)/build/runtime-debug DEBUG=1

# pytest exits 5 when it collects nothing: that is a failure here, never a pass.
test: all runtime-san runtime-debug $(if $(HAVE_MPICH),runtime-mpich)
	@$(PY) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: error: pytest collected no tests"; rc=1; fi; \
	if [ -n "$(HAVE_MPICH)" ]; then $(MAKE) --no-print-directory test-mpich || rc=1; \
	else echo "make test: MPICH is not installed ($(MPICH_CC), $(MPICH_RUN) missing):" \
		"the mpi target's tests did not run a second time, under it"; fi; \
	exit $$rc

# The mpi target's end-to-end and layer tests under MPICH (sanitized builds aside;
# "not compile": -k matches substrings, and "compile" holds "mpi").
ifneq ($(filter test-mpich,$(MAKECMDGOALS)),)
ifeq ($(HAVE_MPICH),)
$(error MPICH is not installed ($(MPICH_CC), $(MPICH_RUN) missing): apt-get install mpich libmpich-dev)
endif
endif
test-mpich: all runtime-mpich
	@echo "make test: the mpi target's tests again, under MPICH ($(MPICH_RUN))"
	@ETC_HOME=$(MPICH_HOME) ETC_MPICC=$(MPICH_CC) ETC_MPIRUN=$(MPICH_RUN) \
		$(PY) -m pytest -q -k "mpi and not compile" tests/e2e tests/runtime \
		--ignore=tests/e2e/test_sanitized.py; \
	rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-mpich: error: pytest collected no tests"; exit 1; fi; \
	exit $$rc

# The end-to-end suite with every program built with ASan+UBSan.
test-asan: all runtime-san
	@ETC_TEST_SANITIZE=1 $(PY) -m pytest -q tests/e2e; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-asan: error: pytest collected no tests"; exit 1; fi; \
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

# The translator's structure-aware fuzz: 2,000 mutants (the suite runs 40); prints
# the count of each outcome. FUZZ_SEED=n for another series.
FUZZ_SEED ?= 1
fuzz: $(STAMP)
	@$(PY) tests/translator/fuzz.py --count 2000 --seed $(FUZZ_SEED)

bench: all $(if $(HAVE_MPICH),runtime-mpich)
	@$(PY) bench/run.py

lint: $(STAMP)
	$(VENV)/bin/ruff check etcpre tests bench

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(VENV)
