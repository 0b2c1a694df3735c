# One entry point for people and CI. `make demo` and `make test` install what they need first.
#
# Supported interpreters: CPython 3.11, 3.12 and 3.13. The default, `python3`, is used as it
# is (its packages installed into it) with the build in build/. Any other interpreter, e.g.
# `make test PYTHON=python3.12`, gets its own virtual environment (.venv-3.12/) and build
# directory (build-3.12/); a versioned name not on PATH is found under pyenv.
PYTHON ?= python3
PYTHON_BIN := $(shell tools/find_python.sh $(PYTHON))
PY_VERSION := $(shell $(PYTHON_BIN) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifeq ($(PYTHON),python3)
VENV :=
PY := $(PYTHON_BIN)
BUILD_DIR ?= build
else
VENV := .venv-$(PY_VERSION)
PY := $(CURDIR)/$(VENV)/bin/python
BUILD_DIR ?= build-$(PY_VERSION)
endif
PIP := $(PY) -m pip install -q -c constraints.txt
JOBS ?= $(shell nproc)
PYTEST_ARGS ?=

.PHONY: deps build test test-py test-cpp demo bench leaks asan fuzz peer zoo-newest clean

# Stamp files keep repeated `make test` from re-running pip and apt.
# Debian packages the tests use: GoogleTest (C++ units), Chromium + its driver (the trace
# viewer's page is tested in a real headless browser), pdflatex with beamer (the slides).
APT_PACKAGES := libgtest-dev chromium chromium-driver texlive-latex-base texlive-latex-recommended \
  texlive-pictures poppler-utils

# Stamp files keep repeated `make test` from re-running pip and apt.
$(BUILD_DIR)/.deps: constraints.txt requirements-dev.txt
	@test -n "$(PY_VERSION)" || { echo "no interpreter for PYTHON=$(PYTHON)"; exit 1; }
	@mkdir -p $(BUILD_DIR)
	@if [ -n "$(VENV)" ] && [ ! -x $(PY) ]; then $(PYTHON_BIN) -m venv $(VENV); fi
	$(PIP) -r requirements-dev.txt
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null; then \
	    echo "installing Debian packages: $$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q --no-install-recommends $$missing >/dev/null 2>&1 || \
	    (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $$missing >/dev/null) || \
	    echo "could not install $$missing: the tests that need them are skipped"; \
	  else echo "no apt-get: the tests needing $$missing are skipped"; fi; fi
	@touch $@

deps: $(BUILD_DIR)/.deps

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPython_EXECUTABLE=$(PY) \
	  -DBYTEGRAPH_TESTS=$$([ -f /usr/include/gtest/gtest.h ] && echo ON || echo OFF) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS)

test-cpp: build
	@if [ -f $(BUILD_DIR)/bytegraph_cpp_tests ]; then \
	  cd $(BUILD_DIR) && PYTHONPATH=$$($(PY) -c 'import site; print(site.getsitepackages()[0])') \
	    ctest --output-on-failure -j $(JOBS); \
	else echo "C++ unit tests not built (GoogleTest missing)"; fi

test-py: build
	PYTHONPATH=$(CURDIR) $(PY) -m pytest -q $(PYTEST_ARGS) tests

test: test-cpp test-py

demo: build
	PYTHONPATH=$(CURDIR) $(PY) -m bytegraph demo

bench: build
	$(PIP) -r benchmarks/requirements.txt
	PYTHONPATH=$(CURDIR) $(PY) -m benchmarks.run

# Differential fuzzing (tools/fuzz): N random programs run eagerly and compiled, compared.
# FUZZ_ARGS passes more options, e.g. FUZZ_ARGS="--jobs 2 --save-failures".
N ?= 300
SEED ?= 0
FUZZ_ARGS ?=
fuzz: build
	PYTHONPATH=$(CURDIR) $(PY) -m tools.fuzz --n $(N) --seed $(SEED) $(FUZZ_ARGS)

# PyTorch's own test/dynamo files, unchanged, under torch._dynamo and under bytegraph, side by
# side (tools/peer.py): the table and the failure causes go to tests/peer/results.md. The files
# are read from tests/peer/dynamo/ (tests/peer/README.md says where they come from); nothing is
# fetched. PEER_ARGS passes options, e.g. PEER_ARGS="--jobs 2 --files test_sets --only bytegraph".
PEER_ARGS ?=
# The zoo against the newest transformers on the package index (next to the pinned one in
# the venv): installed into $(BUILD_DIR)/transformers-newest, ahead on the path.
zoo-newest: build
	$(PY) -m pip install -q --no-deps --upgrade --target $(BUILD_DIR)/transformers-newest transformers
	PYTHONPATH=$(BUILD_DIR)/transformers-newest:$(CURDIR) $(PY) -c 'import transformers; print("transformers", transformers.__version__)'
	PYTHONPATH=$(BUILD_DIR)/transformers-newest:$(CURDIR) $(PY) -m pytest -q -p no:cacheprovider tests/test_zoo.py tests/test_trace_models.py

peer: build
	$(PIP) -r tests/peer/requirements.txt
	PYTHONPATH=$(CURDIR) $(PY) tools/peer.py $(PEER_ARGS)

# 1,000,000 cache hits and 10,000 compile/reset cycles: no growth of live objects or memory.
leaks: build
	PYTHONPATH=$(CURDIR) $(PY) tools/leak_check.py

# ASan + UBSan build of the extension; the interpreter itself is not instrumented, so the
# runtime is preloaded. Leak detection is off: CPython's arenas and interned objects are
# reported as leaks otherwise (the reference-leak tests cover leaks instead).
asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBYTEGRAPH_SANITIZE=ON -DBYTEGRAPH_EXTENSION_DIR=$(CURDIR)/build-asan/ext \
	  -DPython_EXECUTABLE=$(PY) >/dev/null
	cmake --build build-asan -j $(JOBS)
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0 BYTEGRAPH_EXTENSION_DIR=$(CURDIR)/build-asan/ext \
	  PYTHONPATH=$(CURDIR) $(PY) -m pytest -q $(PYTEST_ARGS) tests

clean:
	rm -rf $(BUILD_DIR) build-asan bytegraph/_C.cpython-$(subst .,,$(PY_VERSION))*.so
