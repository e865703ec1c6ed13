"""Per-round time of the query-release histogram methods on ADULT (reduced) (the query-release
paper's 7 attributes, 35 3-way marginals, 336,000-cell domain), and the CPU cost of an
experiment's grid derived from them.

For each method and T (defaults: MWEM with past queries T=300, vanilla MWEM T=1000, PEP
T=200, the largest points of the paper's grids), one fit at ``--eps`` (delta = 1/N^2,
seed 0, one BLAS thread) is timed in process CPU seconds: total, per round, and the number
of multiplicative updates (MWEM) or projection steps (PEP). With ``--grid`` the script adds
the CPU seconds of one (eps, trial) cell of the paper's T grids, fitting every T.

DualQuery (eta 3, samples 100, the mid point of Table 3's grid; its T follows from the
budget) is timed with each best-response oracle: the authors' MIP (scipy's HiGHS) and the
enumeration of the 336,000 records that the default profile uses (the same maxima); the
ratio of the two is the speed-up the default profile takes.

Run: python scripts/bench_query_release.py [--eps 1.0] [--grid]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from dpbench.data.query_release import load_query_data
from dpbench.methods.query_release.dualquery import DualQuery
from dpbench.methods.query_release.mwem import MWEM
from dpbench.methods.query_release.pep import PEP
from dpbench.privacy.accountant import Accountant
from dpbench.runner.grid import _merged_params, load_entry, task_view

GRIDS = {"mwem": [50, 75, 100, 150, 200, 250, 300],
         "mwem_vanilla": [100, 150, 200, 250, 300, 400, 500, 750, 1000],
         "pep": [20, 30, 40, 50, 75, 100, 125, 150, 175, 200]}
MAKE = {"mwem": lambda T: MWEM(T=T), "mwem_vanilla": lambda T: MWEM(T=T, replay=False),
        "pep": lambda T: PEP(T=T)}


def fit_seconds(name: str, T: int, data, eps: float) -> tuple[float, dict]:  # noqa: N803
    """CPU seconds of one fit and its info."""
    model = MAKE[name](T)
    acc = Accountant(eps, 1 / data.n**2, "zcdp")
    t0 = time.process_time()
    model.fit(data, acc, np.random.default_rng(0))
    return time.process_time() - t0, model.info()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--grid", action="store_true", help="also time every T of the grids")
    args = ap.parse_args()
    view = task_view("qr_adult_reduced", load_entry("dataset", "qr_adult_reduced"),
                     "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "default")).train
    with threadpool_limits(limits=1):
        for name, T in (("mwem", 300), ("mwem_vanilla", 1000), ("pep", 200)):
            sec, info = fit_seconds(name, T, data, args.eps)
            work = (f"{info['updates']:,} MW updates" if "updates" in info
                    else f"{info['projection_steps']:,} projection steps")
            print(f"{name:13s} T={T:5d} eps={args.eps:g}: {sec:7.2f} s CPU, "
                  f"{1e3 * sec / T:6.2f} ms per round, {work}")
        delta = 1 / data.n**2
        times = {}
        for oracle in ("mip", "enumerate"):
            model = DualQuery(eta=3, samples=100, oracle=oracle)
            t0 = time.process_time()
            model.fit(data, Accountant(args.eps, delta, "zcdp"), np.random.default_rng(0))
            times[oracle] = sec = time.process_time() - t0
            info = model.info()
            print(f"dualquery     {oracle:9s} eps={args.eps:g}: {sec:7.2f} s CPU, "
                  f"{info['rounds_run']} rounds, {1e3 * sec / max(info['rounds_run'], 1):6.1f}"
                  f" ms per round ({info['oracle_seconds']:.2f} s in the oracle)")
        print(f"dualquery enumerate / mip CPU time: {times['enumerate'] / times['mip']:.3f}")
        if args.grid:
            total = 0.0
            for name, grid in GRIDS.items():
                cell = sum(fit_seconds(name, T, data, args.eps)[0] for T in grid)
                total += cell
                print(f"{name:13s} every T of {grid}: {cell:7.1f} s CPU")
            print(f"one (eps, trial) cell of the grids: {total:.1f} s CPU")


if __name__ == "__main__":
    main()
