# dpbench: the two commands a user needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
DPB    := $(VENV)/bin/dpbench
STAMP  := $(VENV)/.installed

.PHONY: install slurm-local demo test smoke figures lint bench

install: $(STAMP)   ## virtualenv with every dependency (torch pinned to the 2.13.0 CPU build)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch would pull several GB of CUDA packages
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: install       ## the main job, linreg_adult (DD-SSP Fig. 3a, Adult), on the smoke profile, + figure
	# the default-profile grid (AIM in every cell) takes about an hour: dpbench run experiment=linreg_adult
	$(DPB) run experiment=linreg_adult profile=smoke runner.n_jobs=2
	$(DPB) figures experiment=linreg_adult profile=smoke

slurm-local:        ## Debian packages of the single-node SLURM test cluster (root; no-op if present)
	bash scripts/slurm-local/install.sh

test: install slurm-local   ## the whole test suite (what CI runs; starts the local SLURM cluster)
	$(PY) -m pytest -q

smoke: install      ## every experiment's smoke profile + figures (downloaded data: local raw fixtures)
	$(PY) -m pytest -q tests/experiments/test_experiments_smoke.py

figures: install    ## every figure and table, from stored results only
	$(DPB) figures

lint: install
	$(VENV)/bin/ruff check dpbench tests scripts

bench: install      ## speed benchmarks (ratios against an in-process baseline)
	$(PY) scripts/bench_runner.py
