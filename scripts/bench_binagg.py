"""Seconds per BinAgg synthetic dataset (the paper's Table 5), without the runner.

For each offline dataset of Table 3 (80/20 split, eps = 1, delta = 1/n^1.1), times
BinAggSynth.fit (PrivTree + aggregates + Alg. 3) in-process, single-threaded, median of
``--repeats`` runs after one warm-up, and prints it next to the paper's laptop number
(papers/binagg/numbers.csv, table 5).
Run: python scripts/bench_binagg.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from dpbench.data.uci import load_uci
from dpbench.methods.binagg import BinAggSynth
from dpbench.privacy import Accountant
from dpbench.report.kinds.paper_table import Paper
from dpbench.report.numbers import read_numbers
from dpbench.roots import paper_dir

DATASETS = ["intrusion_proxy", "liver", "abalone", "parkinsons", "wine", "airquality",
            "appliances"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    table5 = Paper(read_numbers(paper_dir("binagg") / "numbers.csv"), "5")
    print(f"{'dataset':<18}{'n_train':>8}{'ours (s)':>11}{'paper (s)':>11}")
    with threadpool_limits(limits=1):
        for name in DATASETS:
            split = load_uci(rng=np.random.default_rng(0), name=name, test_fraction=0.2)
            delta = split.train.n ** -1.1

            def fit(seed: int, split=split, delta=delta) -> None:
                BinAggSynth().fit(split.train, Accountant(1.0, delta, currency="gdp"),
                                  np.random.default_rng(seed))

            fit(0)
            times = []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                fit(r + 1)
                times.append(time.perf_counter() - t0)
            paper = table5.value(f"binagg_{name}_split", "binagg_synth", "fit_s", "mean_se",
                                 proxies=True)[0]
            note = " (proxy data)" if name.endswith("proxy") else ""
            print(f"{name:<18}{split.train.n:>8}{statistics.median(times):>11.4f}"
                  f"{paper if paper is not None else float('nan'):>11.4f}{note}")


if __name__ == "__main__":
    main()
