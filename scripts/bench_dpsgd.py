"""Time DP-SGD on Adult (logistic) over the paper's 108-configuration grid.

Usage: python scripts/bench_dpsgd.py [--eps 1.0] [--mode optimistic]
A run's cost depends on its batch size and epochs only (clip and learning rate change
numbers, not work), so the script times the 9 (batch, epochs) pairs once each (clip 0.1,
lr 0.1) and multiplies by the 12 (clip, lr) pairs: the full grid's time for one trial.
A benchmark, not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpbench.methods.classification.dpsgd import DPSGD, PAPER_GRID, grid_configs
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry, task_view


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--mode", choices=["optimistic", "realistic"], default="optimistic")
    args = ap.parse_args()
    entry = task_view("adult", load_entry("dataset", "adult"), "classification")
    split = import_object(entry["_target_"])(rng=np.random.default_rng(0), **entry["params"])
    configs = [cfg for cfg in grid_configs(PAPER_GRID) if cfg[1] == 0.1 and cfg[3] == 0.1]
    repeats = len(grid_configs(PAPER_GRID)) // len(configs)
    print(f"Adult: n = {split.train.n}, d = {split.train.d}; timing {len(configs)} configs "
          f"(x{repeats} = the full grid)")
    total = 0.0
    for b, c, e, lr in configs:
        grid = {"batch_sizes": [b], "clips": [c], "epochs": [e], "lrs": [lr]}
        t0 = time.perf_counter()
        DPSGD(mode=args.mode, grid=grid).fit(split.train, Accountant(args.eps, 1e-5),
                                             np.random.default_rng(0))
        dt = time.perf_counter() - t0
        total += dt
        print(f"batch={b!s:>5} clip={c:<5} epochs={e:<3} lr={lr:<6} {dt:7.2f} s")
    print(f"timed {total:.1f} s; full 108-run grid ~ {total * repeats / 60:.1f} min per trial "
          f"and mode (x 5 eps x 5 trials x 2 modes per dataset at the paper profile)")


if __name__ == "__main__":
    main()
