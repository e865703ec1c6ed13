# dpbench: the two commands a user needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
DPB    := $(VENV)/bin/dpbench
STAMP  := $(VENV)/.installed

.PHONY: install lock slurm-local browser demo test audit-mutations smoke figures site lint costs bench bench-peers bench-peers-qr bench-peers-qr-gem-pub bench-peers-qr-dq reference

install: $(STAMP)   ## virtualenv with every dependency (torch pinned to the 2.13.0 CPU build)

# TORCH_INDEX: where pip finds the torch 2.13.0 CPU build (2.13.0+cpu) when it is not on the
# machine already, e.g. make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
PIP_TORCH := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),)

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# exactly the locked versions, each checked against its sha256 (torch: the CPU build,
	# so no CUDA packages); then dpbench itself without resolving anything again
	$(PY) -m pip install --quiet --require-hashes --no-deps $(PIP_TORCH) -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	# compile ahead what the first trials would compile inside their fits (RAP's Numba loop)
	$(PY) scripts/warm_caches.py
	touch $(STAMP)

lock:               ## re-resolve requirements.lock after editing pyproject.toml (keeps other pins; LOCK_ARGS=--upgrade moves all; ~10 min)
	$(PYTHON) -m venv .lockenv
	.lockenv/bin/pip install --quiet "pip-tools==7.4.1" "click==8.1.8"
	CUSTOM_COMPILE_COMMAND="make lock" .lockenv/bin/pip-compile --quiet --allow-unsafe --extra=dev --generate-hashes --strip-extras \
		--no-emit-index-url --no-emit-find-links $(PIP_TORCH) $(LOCK_ARGS) \
		--output-file=requirements.lock pyproject.toml
	rm -rf .lockenv

demo: install       ## the main job, linreg_adult (DD-SSP Fig. 3a, Adult), on the smoke profile, + figure
	# the default-profile grid (AIM in every cell; time measured in the README): dpbench run experiment=linreg_adult
	$(DPB) run experiment=linreg_adult profile=smoke runner.n_jobs=2
	$(DPB) figures experiment=linreg_adult profile=smoke

slurm-local:        ## Debian packages of the single-node SLURM test cluster (root; no-op if present)
	bash scripts/slurm-local/install.sh

browser:            ## Debian's headless Chromium + chromium-driver for the site's browser test (root; no-op if present)
	bash scripts/browser/install.sh

# TEST_WORKERS: pytest-xdist workers for make test (a module's tests sharing a module fixture
# stay on one worker: tests/conftest.py); TEST_WORKERS=0 runs everything in one process
TEST_WORKERS ?= 2

test: install slurm-local browser   ## the whole test suite (what CI runs; starts the local SLURM cluster)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

# MUTATION_JOBS: mutants tested at once; MUTATIONS: catalogue ids to plant (default: all)
MUTATION_JOBS ?= 2
MUTATIONS ?=

audit-mutations: install   ## plant each privacy bug of tests/privacy/mutations.yaml in process, its tests must fail: prints caught N of M (docs/mutations.md; what CI runs after make test)
	$(PY) scripts/audit_mutations.py --jobs $(MUTATION_JOBS) $(MUTATIONS)

smoke: install      ## every experiment's and arena's smoke profile + figures into results/smoke (downloaded data: local raw fixtures), then its site results/smoke/site/index.html
	DPBENCH_SMOKE_RESULTS=results/smoke $(PY) -m pytest -q tests/experiments/test_experiments_smoke.py tests/experiments/test_arenas.py
	$(DPB) site results_dir=results/smoke

figures: install    ## every figure and table, and every arena board, from stored results only
	$(DPB) figures
	$(DPB) leaderboard

site: install       ## the static results site from stored results: results/site/index.html
	$(DPB) site

# REFERENCE: the experiments to keep (default: every one); REFERENCE_PROFILE: their profile
REFERENCE ?=
REFERENCE_PROFILE ?= default

reference: install  ## results/reference (shipped results) from results/store + the old reference: make reference [REFERENCE="linreg_adult ..."]
	$(PY) scripts/build_reference.py $(REFERENCE) --profile $(REFERENCE_PROFILE)
	# the arena lines README.md and docs/arena.md quote, from the reference just built
	$(PY) scripts/arena_summary.py

lint: install
	$(VENV)/bin/ruff check dpbench tests scripts

# COSTS: the experiments whose reference fits `make costs` measures; COSTS_PROFILE: their
# profile. One trial at each end of every sweep point's budgets, run two at a time into
# results/costs (its store keeps them: a stopped run resumes), then written to the
# experiment's costs.jsonl (its paper's folder, or its yaml's for an arena); docs/slurm.md
COSTS ?=
COSTS_PROFILE ?= default
COSTS_GRID = profile=$(COSTS_PROFILE) profile.trials=1 profile.max_epsilons=2 results_dir=results/costs

costs: install      ## reference fits for `plan`: COSTS="linreg_adult qr_adult" [COSTS_PROFILE=paper] (tests/core/test_shipped_costs.py asks every default grid to be measured)
	@test -n "$(COSTS)" || { echo 'make costs: name the experiments, e.g. COSTS="linreg_adult" (dpbench list)'; exit 2; }
	@for e in $(COSTS); do \
		$(DPB) run experiment=$$e $(COSTS_GRID) runner.n_jobs=2 && \
		$(PY) scripts/export_costs.py experiment=$$e $(COSTS_GRID) || exit 1; \
	done

bench: install      ## speed benchmarks (ratios against an in-process baseline)
	$(PY) scripts/bench_runner.py
	$(PY) scripts/bench_startup.py

bench-peers: install   ## dpbench's AIM vs smartnoise-synth's, same Adult, eps 0.1 and 1 (own venv .bench-peers-venv; prints its expected duration, ~40 min on 2 idle cores); BENCH_PEERS_ARGS="--exrisk mpdp_heart mpdp_compas --eps 1" for the excess-risk paper's 4-way fits
	$(PY) scripts/bench_peers.py $(BENCH_PEERS_ARGS)

# PEER_QR: the user's checkout of the query-release paper's code (git clone
# https://github.com/terranceliu/iterative-dp); without it the script says how to get it
PEER_QR ?=
bench-peers-qr: install   ## dpbench's MWEM, PEP, GEM, RAP vs the authors' code (PEER_QR=checkout; own venv .bench-peers-qr-venv; prints its expected duration); BENCH_PEERS_QR_ARGS="--methods rap --eps 1 --limit 600"
	$(PY) scripts/bench_peers_qr.py $(if $(PEER_QR),--checkout $(PEER_QR),) $(BENCH_PEERS_QR_ARGS)

bench-peers-qr-gem-pub: install   ## dpbench's GEM-Pub vs the authors' (gem_nondp.py, then gem.py) on ADULT, 5 seeds a side, errors ± s.e. and z (PEER_QR=checkout; each side pre-trains once: the authors' ~1.5 CPU-h, not run here); BENCH_PEERS_QR_ARGS="--pretrain-epochs 2 --T gem_pub=2 --eps 1 --trials 2" for the ~2 CPU-min check
	$(PY) scripts/bench_peers_qr.py $(if $(PEER_QR),--checkout $(PEER_QR),) --methods gem_pub --datasets qr_adult --trials 5 --out results/bench_peers_qr_gem_pub.json $(BENCH_PEERS_QR_ARGS)

bench-peers-qr-dq: install   ## dpbench's DualQuery vs the authors' (dualquery.py, Gurobi: gurobipy added to .bench-peers-qr-venv) on ADULT (reduced), 20 seeds a side, errors ± s.e. and z (PEER_QR=checkout; ~2 CPU-min); BENCH_PEERS_QR_DQ_ARGS="--eta 2 --samples 25 --eps 0.1 1"
	$(PY) scripts/bench_peers_qr_dq.py $(if $(PEER_QR),--checkout $(PEER_QR),) $(BENCH_PEERS_QR_DQ_ARGS)
