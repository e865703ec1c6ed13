"""Runner overhead and parallel speed-up, as ratios against in-process baselines.

(1) AdaSSP on Adult: one trial through ``execute`` (data load + split + fit + metrics +
    record) against the fit alone (no runner).
(2) Harness overhead of an AIM trial (linreg_adult's DD-SSP cell, default profile, eps 1,
    trial 0): the whole trial through ``run_trial`` (lease, artifact cache, record, store)
    against the same work done by hand in the same process (load + split, fit, metrics);
    both warm (one run each first, so JAX programs are compiled in both), median of
    ``--repeats``; each ``run_trial`` gets a fresh results directory, so its artifact cache
    never serves the fit.
(3) The linreg_adult data-independent grid (public, ssp, adassp) with n_jobs=1 vs 2.
(4) With ``--full-grid``: the whole linreg_adult default grid (175 trials, AIM in most
    cells), each run in a fresh process and a fresh results directory (cold caches, as a
    first run): 1 worker and 2 workers with one XLA thread per process (what ``dpbench run``
    does), then 1 worker with 2 XLA threads (``NPROC=2``: one trial process using both
    cores, what a run did before XLA was pinned), and 2 workers with 2 XLA threads each
    (what ``dpbench run`` did before the pin); wall time and the cores used (CPU time of
    the run's processes over its wall time). About 25 + 16 + 24 + 18 minutes on 2 idle
    cores; the script says so before it starts.

Run: python scripts/bench_runner.py [--repeats 5] [--full-grid]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import timed
from joblib.externals.loky import get_reusable_executor
from threadpoolctl import threadpool_limits

from dpbench import compile_cache
from dpbench.data.discrete import load_discrete
from dpbench.methods.regression.adassp import AdaSSP
from dpbench.privacy import Accountant
from dpbench.runner.execute import execute, import_object, run_trial
from dpbench.runner.grid import expand, load_entry
from dpbench.runner.local import run_local
from dpbench.runner.store import ResultStore
from dpbench.tasks import TASKS
from dpbench.workspace import compose_config


def main() -> None:
    # like the dpbench command: PYTHONHASHSEED=0 unless set, so the one-worker grid (run in
    # this process) fits the same programs as `dpbench run runner.n_jobs=1` and its workers
    compile_cache.reexec_with_hash_seed()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--full-grid", action="store_true",
                    help="also time the whole linreg_adult default grid with 1 and 2 workers")
    ap.add_argument("--one-grid", type=int, help=argparse.SUPPRESS)   # a --full-grid child
    args = ap.parse_args()
    compile_cache.pin_xla_threads()          # as the dpbench command: before any JAX work
    if args.one_grid:
        one_grid(args.one_grid)
        return

    params = load_entry("dataset", "adult")["params"]
    split = load_discrete(rng=np.random.default_rng(0), **params)

    def direct() -> None:
        with threadpool_limits(limits=1):  # the runner pins BLAS to one thread too
            AdaSSP().fit(split.train, Accountant(1.0, 1e-5, currency="gdp"),
                         np.random.default_rng(0))

    overrides = ["experiment=linreg_adult", "methods=[public,ssp,adassp]"]  # data-independent
    spec = [s for s in expand(compose_config(overrides))
            if s.method == "adassp"][0]
    base = timed(direct, args.repeats)
    through = timed(lambda: execute(spec, trace_memory=False), args.repeats)
    traced = timed(lambda: execute(spec, trace_memory=True), args.repeats)
    print(f"AdaSSP fit on Adult, direct:             {base * 1e3:8.1f} ms  (baseline = 1.00)")
    print(f"one trial through the runner:            {through / base:8.2f} x baseline")
    print(f"  ... with tracemalloc peak memory:      {traced / base:8.2f} x baseline")

    specs = expand(compose_config(overrides))

    def grid(n_jobs: int) -> None:
        with tempfile.TemporaryDirectory() as d:
            run_local(specs, f"{d}/store", n_jobs=n_jobs, progress=False)

    g1 = timed(lambda: grid(1), 1)
    g2 = timed(lambda: grid(2), 1)
    print(f"linreg_adult grid ({len(specs)} trials), n_jobs=1: {g1:6.1f} s (baseline = 1.00)")
    print(f"linreg_adult grid, n_jobs=2:                 {g2 / g1:6.2f} x baseline", flush=True)

    aim_overhead(args.repeats)
    if args.full_grid:
        full_grid()


def aim_overhead(repeats: int) -> None:
    """(2): an AIM trial through run_trial vs the same work by hand, both warm.

    Two figures: the ratio of medians over ``repeats`` alternating pairs (by hand, then
    through the runner), and the harness's own time in each run_trial call (its wall time
    minus the data, fit and metric seconds its record holds), which does not carry the
    fit's run-to-run noise (about 1 s of 34 s here) and so resolves a 2% budget."""
    overrides = ["experiment=linreg_adult", "methods=[ddssp]", "epsilons=[1]", "trials=1"]
    spec = expand(compose_config(overrides))[0]

    def by_hand() -> None:
        with threadpool_limits(limits=1):
            split = import_object(spec.dataset_target)(rng=spec.data_rng(), **spec.dataset_params)
            cls = import_object(spec.method_target)
            model = cls(**spec.method_params)
            model.fit(split.train, Accountant(float(spec.epsilon), float(spec.delta),
                                              currency=cls.accounting), spec.method_rng())
            task = TASKS[spec.task]
            task.score(model.output(task.needs), split, spec.task_params)

    results = Path(tempfile.mkdtemp(prefix="bench-runner-"))

    def through() -> float:
        """run_trial's wall time minus the work its record times: the harness's seconds."""
        # one results directory, so the compile cache stays where it is (moving it resets
        # JAX's in-memory caches: a runner keeps it fixed too), but no stored record and no
        # cached artifact survives from the last run: the trial is computed in full
        for old in [results / "store", *(p for p in (results / "cache").glob("*")
                                         if not p.name.startswith("jax"))]:
            shutil.rmtree(old, ignore_errors=True)
        t0 = time.perf_counter()
        assert run_trial(spec, str(results / "store")) == "ok"
        wall = time.perf_counter() - t0
        return wall - sum(ResultStore(results / "store").get(spec.key)["timing"].values())

    compile_cache.use_root(results / "cache")       # both measured with the same cache
    hand, runner, harness = [], [], []
    try:
        by_hand()
        through()                                   # warm-up: programs compiled for both
        for _ in range(repeats):
            t0 = time.perf_counter()
            by_hand()
            hand.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            harness.append(through())
            runner.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    base = statistics.median(hand)
    ratio = statistics.median(runner) / base
    own = statistics.median(harness)
    print(f"AIM trial ({spec.method}, eps {spec.epsilon}, default profile) by hand: "
          f"{base:6.2f} s (baseline = 1.00; runs {', '.join(f'{t:.1f}' for t in hand)})")
    print(f"  ... through run_trial:                {ratio:8.3f} x baseline "
          f"(runs {', '.join(f'{t:.1f}' for t in runner)})")
    print(f"  ... run_trial's own time (wall - data - fit - metrics): {own:.3f} s = "
          f"{100 * own / base:.2f}% of the by-hand trial", flush=True)


#: (workers, XLA threads per process) of the --full-grid runs
FULL_GRID_RUNS = ((1, "1"), (2, "1"), (1, "2"), (2, "2"))


def full_grid() -> None:
    """(4): the whole linreg_adult default grid, one fresh process per FULL_GRID_RUNS entry."""
    specs = expand(compose_config(["experiment=linreg_adult"]))
    print(f"full linreg_adult default grid: {len(specs)} trials, (workers, XLA threads) = "
          f"{FULL_GRID_RUNS}; expect about 25 + 16 + 24 + 18 minutes on 2 idle cores", flush=True)
    seconds = {}
    for n_jobs, threads in FULL_GRID_RUNS:
        env = {**os.environ, compile_cache.XLA_THREADS_ENV: threads}
        out = subprocess.run([sys.executable, __file__, "--one-grid", str(n_jobs)], env=env,
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        wall, cpu = map(float, out.split()[-2:])
        seconds[n_jobs, threads] = wall
        print(f"full grid, {n_jobs} worker(s), {threads} XLA thread(s): {wall:7.1f} s, "
              f"{cpu / wall:.2f} cores used", flush=True)
    base = seconds[1, "1"]
    print(f"full grid, 2 workers over 1 (one XLA thread each): {base / seconds[2, '1']:.2f}x")
    print(f"full grid, 2 workers (one XLA thread each) over 1 worker with 2 XLA threads: "
          f"{seconds[1, '2'] / seconds[2, '1']:.2f}x")
    print(f"full grid, 2 workers: one XLA thread each over two each (the pin's effect): "
          f"{seconds[2, '2'] / seconds[2, '1']:.2f}x")


def one_grid(n_jobs: int) -> None:
    """Run the grid once with ``n_jobs`` workers in a fresh results directory; print its
    wall seconds and the CPU seconds of this process and its (reaped) workers."""
    specs = expand(compose_config(["experiment=linreg_adult"]))
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        run_local(specs, f"{d}/store", n_jobs=n_jobs, progress=False)
        wall = time.perf_counter() - t0
    get_reusable_executor().shutdown(wait=True)        # reap the workers: count their CPU
    cpu = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    print(wall, cpu)


if __name__ == "__main__":
    main()
