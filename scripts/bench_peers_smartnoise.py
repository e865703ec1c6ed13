"""smartnoise-synth's AIM on a CSV of integer codes: the peer side of scripts/bench_peers.py.

Runs in the benchmark's own virtual environment (smartnoise-synth 1.0.8 needs mbi < 2,
dpbench needs mbi 2), so it imports nothing from dpbench. Every column is declared
categorical (the data is already discretised, so the transformer spends no budget);
AIM runs with its defaults unless told otherwise: T = 16 d rounds (``--rounds``), all
k-way marginals of at most 10,000 cells as the workload (``--degree`` k = 2,
``--max-cells``), and 1,000 mirror-descent iterations per estimate, the final one included
(smartnoise has no setting for them).

    python bench_peers_smartnoise.py DATA.csv OUT.csv --eps 1 --delta 1e-5 \
        --max-model-size 200 --rows 47842 --seed 0
    python bench_peers_smartnoise.py DATA.csv OUT.csv --eps 1 --delta 1e-5 \
        --max-model-size 2 --rows 303 --degree 4 --max-cells 1000000 --rounds 42

Writes the synthetic rows to OUT.csv and prints one JSON line: fit / sample seconds and
the number of AIM rounds (counted from its verbose "Selected" lines). Those lines and the
"Initial Sigma" line (set-up done) also go to stderr as they are printed, with the seconds
since the fit began, so a run stopped at its time limit still tells how far it got.
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


class Progress(io.TextIOBase):
    """stdout for the fit: kept in ``log``; the "Initial Sigma" line (its one-way marginals
    measured, every candidate's data marginal computed) and each "Selected" line (a round
    done) also to stderr, timed."""

    def __init__(self, log: io.StringIO, t0: float) -> None:
        self.log, self.t0 = log, t0

    def write(self, text: str) -> int:
        self.log.write(text)
        if text.startswith(("Initial Sigma", "Selected")):
            print(f"[{time.perf_counter() - self.t0:.1f} s] {text}", file=sys.stderr, flush=True)
        return len(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--eps", type=float, required=True)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--max-model-size", type=float, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--degree", type=int, default=2, help="workload: all k-way marginals")
    ap.add_argument("--max-cells", type=int, default=10_000,
                    help="workload marginals with more cells are dropped")
    ap.add_argument("--rounds", type=int, help="T (default: 16 x number of columns)")
    args = ap.parse_args()

    from snsynth.aim import AIMSynthesizer

    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (mbi 1.x samples from the global generator;
    # the measurement noise comes from OpenDP's own, unseeded)
    frame = pd.read_csv(args.data)
    synth = AIMSynthesizer(epsilon=args.eps, delta=args.delta,
                           max_model_size=args.max_model_size, degree=args.degree,
                           max_cells=args.max_cells, rounds=args.rounds, verbose=True)
    log = io.StringIO()
    t0 = time.perf_counter()
    print("[0.0 s] fit started", file=sys.stderr, flush=True)
    with contextlib.redirect_stdout(Progress(log, t0)):
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
