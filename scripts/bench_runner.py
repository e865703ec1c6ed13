"""Runner overhead and parallel speed-up, as ratios against in-process baselines.

Baseline: fitting AdaSSP directly on a loaded Adult split (no runner). Measured:
(1) one trial through ``execute`` (data load + split + fit + metrics + record),
(2) the smoke grid of linreg_adult with n_jobs=1 vs n_jobs=2 through run_local.
Run: python scripts/bench_runner.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

from dpbench.cli import compose_config
from dpbench.data.discrete import load_discrete
from dpbench.methods.regression.adassp import AdaSSP
from dpbench.privacy import Accountant
from dpbench.runner.execute import execute
from dpbench.runner.grid import expand, load_entry
from dpbench.runner.local import run_local


def timed(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

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
            run_local(specs, d, n_jobs=n_jobs, progress=False)

    g1 = timed(lambda: grid(1), 1)
    g2 = timed(lambda: grid(2), 1)
    print(f"linreg_adult grid ({len(specs)} trials), n_jobs=1: {g1:6.1f} s (baseline = 1.00)")
    print(f"linreg_adult grid, n_jobs=2:                 {g2 / g1:6.2f} x baseline")


if __name__ == "__main__":
    main()
