"""How long the ``dpbench`` command takes to answer, against the bare interpreter: the
start-up paths and ``figures`` of one experiment whose figures are up to date.

Each command runs as a fresh process (as a user types it), ``--repeat`` times; the median
wall time is printed with its ratio to ``python -c pass`` timed in the same way in this
process (the baseline), so figures from a loaded machine still compare. Run it on an
otherwise idle machine for absolute numbers.

    .venv/bin/python scripts/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DPBENCH = Path(sys.executable).with_name("dpbench")
COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "one-line error (unknown experiment)": ["run", "experiment=linreg_adlt"],
    "plan, linreg_adult default grid": ["plan", "experiment=linreg_adult"],
    "status, linreg_adult default grid": ["status", "experiment=linreg_adult"],
}
#: a small grid whose figures are drawn once, then asked for again (nothing changed)
FIGURES_GRID = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp,adassp]",
                "runner.progress=false"]


def median_seconds(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    """Median wall seconds of ``argv`` as a fresh process (output discarded)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:      # an empty store: no user result is read
        env = dict(os.environ)                      # as the user's shell has it
        base = median_seconds([sys.executable, "-c", "pass"], args.repeat, env)
        print(f"baseline `python -c pass`: {base:.3f} s")
        for name, argv in COMMANDS.items():
            extra = [] if argv[0].startswith("--") else [f"results_dir={tmp}"]
            t = median_seconds([str(DPBENCH), *argv, *extra], args.repeat, env)
            print(f"{name:40s} {t:6.2f} s  = {t / base:5.1f} x baseline")
        figures = [str(DPBENCH), "figures", *FIGURES_GRID, f"results_dir={tmp}/drawn"]
        for argv in ([str(DPBENCH), "run", *FIGURES_GRID, f"results_dir={tmp}/drawn"],
                     figures):                      # a grid run and drawn once, then timed
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=env, check=True)
        t = median_seconds(figures, args.repeat, env)
        print(f"{'figures, one experiment up to date':40s} {t:6.2f} s  = {t / base:5.1f} x "
              "baseline")


if __name__ == "__main__":
    main()
