"""smartnoise-synth's AIM on a CSV of integer codes: the peer side of scripts/bench_peers.py.

Runs in the benchmark's own virtual environment (smartnoise-synth 1.0.8 needs mbi < 2,
dpbench needs mbi 2), so it imports nothing from dpbench. Every column is declared
categorical (the data is already discretised, so the transformer spends no budget);
AIM runs with its defaults for the rest: T = 16 d rounds, 1,000 mirror-descent
iterations per estimate, all 2-way marginals of at most 10,000 cells as the workload.

    python bench_peers_smartnoise.py DATA.csv OUT.csv --eps 1 --delta 1e-5 \
        --max-model-size 200 --rows 47842 --seed 0

Writes the synthetic rows to OUT.csv and prints one JSON line: fit / sample seconds and
the number of AIM rounds (counted from its verbose "Selected" lines).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import time

import numpy as np
import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--eps", type=float, required=True)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--max-model-size", type=float, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from snsynth.aim import AIMSynthesizer

    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (mbi 1.x samples from the global generator;
    # the measurement noise comes from OpenDP's own, unseeded)
    frame = pd.read_csv(args.data)
    synth = AIMSynthesizer(epsilon=args.eps, delta=args.delta,
                           max_model_size=args.max_model_size, verbose=True)
    log = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(log):
        synth.fit(frame, categorical_columns=list(frame.columns), preprocessor_eps=0.0)
    fit_s = time.perf_counter() - t0
    rows = synth.sample(args.rows)
    sample_s = time.perf_counter() - t0 - fit_s
    out = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=frame.columns)
    out.columns = frame.columns
    out.to_csv(args.out, index=False)
    rounds = sum(line.startswith("Selected") for line in log.getvalue().splitlines())
    print(json.dumps({"fit_s": fit_s, "sample_s": sample_s, "rounds": rounds}), file=sys.stdout)


if __name__ == "__main__":
    main()
