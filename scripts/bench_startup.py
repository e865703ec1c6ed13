"""How long the ``dpbench`` command takes to answer, against the bare interpreter: the
start-up paths and ``figures`` of one experiment whose figures are up to date.

Each command runs as a fresh process (as a user types it), ``--repeat`` times; the median
wall time and the median CPU time (user + system of the process and its children) are
printed with their ratios to ``python -c "import numpy"`` timed in the same way in this run
(the baseline: issue 59's goal for ``list`` and ``plan`` is <= 5x it), so figures from a
loaded machine still compare; ``python -c pass`` is printed too. Run it on an otherwise idle
machine for absolute numbers.

    .venv/bin/python scripts/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
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
    "list": ["list"],
    "plan, linreg_adult default grid": ["plan", "experiment=linreg_adult"],
    "status, linreg_adult default grid": ["status", "experiment=linreg_adult"],
}
#: a small grid whose figures are drawn once, then asked for again (nothing changed)
FIGURES_GRID = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp,adassp]",
                "runner.progress=false"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def median_seconds(argv: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``argv`` as a fresh process (output discarded)."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _children_cpu()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def line(name: str, t: tuple[float, float], base: tuple[float, float]) -> str:
    """One command's wall and CPU seconds, each with its ratio to the baseline's."""
    return (f"{name:40s} {t[0]:6.2f} s wall = {t[0] / base[0]:5.1f} x   "
            f"{t[1]:6.2f} CPU-s = {t[1] / base[1]:5.1f} x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:      # an empty store: no user result is read
        env = dict(os.environ)                      # as the user's shell has it
        base = median_seconds([sys.executable, "-c", "import numpy"], args.repeat, env)
        bare = median_seconds([sys.executable, "-c", "pass"], args.repeat, env)
        print(f"load average {os.getloadavg()[0]:.2f}; baseline `python -c \"import numpy\"`: "
              f"{base[0]:.3f} s wall, {base[1]:.3f} CPU-s; ratios (x) are to it")
        print(line("`python -c pass`", bare, base))
        for name, argv in COMMANDS.items():
            extra = [] if argv[0].startswith("--") or argv == ["list"] \
                else [f"results_dir={tmp}"]
            print(line(name, median_seconds([str(DPBENCH), *argv, *extra], args.repeat, env),
                       base))
        figures = [str(DPBENCH), "figures", *FIGURES_GRID, f"results_dir={tmp}/drawn"]
        for argv in ([str(DPBENCH), "run", *FIGURES_GRID, f"results_dir={tmp}/drawn"],
                     figures):                      # a grid run and drawn once, then timed
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=env, check=True)
        print(line("figures, one experiment up to date", median_seconds(figures, args.repeat,
                                                                         env), base))
        print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
