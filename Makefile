# Set-up and the two README commands.  Everything a fresh machine needs is installed here.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup demo test test-all bench models clean

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
	$(BIN)/anchordiv demo

test: setup
	$(BIN)/python -m pytest -q

test-all: setup
	$(BIN)/python -m pytest -q -m ''

bench: setup
	for b in divergence empirical scale memory faiss adapt; do $(BIN)/python benchmarks/bench_$$b.py || exit 1; done

# Rebuild the broad priors in models/ (MiniLM embeddings of WordNet glosses, clinical text,
# ImageNet names; each prior's own anchor count and regions: anchordiv.app.studies.priors.PRIORS).
models: setup
	$(BIN)/anchordiv build-models -o models

clean:
	rm -rf $(VENV) build *.egg-info
