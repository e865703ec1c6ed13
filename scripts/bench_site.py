"""How long ``dpbench site`` takes on a store, against ``dpbench figures`` on the same store
(the baseline, run in the same process): a cold build (no site yet), a warm one (nothing
changed), the figures of the same grids, ``dpbench leaderboard`` cold (no board yet) and warm
(nothing changed), then a cold build again with those figure folders and boards current (a
page copies them instead of drawing). Each line gives the wall seconds and the CPU seconds
of this process (the page workers' are not counted: ``--jobs 1`` builds every page in this
process, so its CPU seconds are the whole work), and the load average around the run.

The site and figures are written under a temporary results folder whose ``store`` links to
the given one, so the user's ``results/site`` and ``results/figures`` are left alone (the
figures' parquet compaction writes ``<store>/trials.parquet``, as ``dpbench figures`` does).

    .venv/bin/python scripts/bench_site.py [--results results] [--jobs N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from dpbench.entry import main


def cpu_now() -> float:
    """User + system CPU seconds of this process and of its children waited for."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``dpbench <argv>`` in this process, and what it printed."""
    out = io.StringIO()
    t, c = time.perf_counter(), cpu_now()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"dpbench {' '.join(argv)} failed ({code})")
    return time.perf_counter() - t, cpu_now() - c, out.getvalue()


def bench(store: Path, jobs: int | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        results.mkdir()
        (results / "store").symlink_to(store.resolve())
        common = [f"results_dir={results}", "runner.progress=false",
                  *([] if jobs is None else [f"runner.n_jobs={jobs}"])]
        load = os.getloadavg()
        runs = {"site, cold (every page built)": timed(["site", *common]),
                "site, warm (nothing changed)": timed(["site", *common])}
        said = runs["site, cold (every page built)"][2]
        figures = timed(["figures", *common])
        runs["leaderboard, cold (every board written)"] = timed(["leaderboard", *common])
        runs["leaderboard, warm (nothing changed)"] = timed(["leaderboard", *common])
        shutil.rmtree(results / "site")
        runs["site, cold after `figures` and `leaderboard` (their files copied)"] = \
            timed(["site", *common])
        print(said.strip().splitlines()[-1])
        for what, (wall, cpu, _) in runs.items():
            print(f"{what}: {wall:7.1f} s wall, {cpu:6.1f} CPU-s  = {wall / figures[0]:.2f} x "
                  "figures")
        print(f"figures of every profile run (baseline): {figures[0]:.1f} s wall, "
              f"{figures[1]:.1f} CPU-s")
        print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.1f}' for x in load)}; "
              f"after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the results folder whose store to use (default: results)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="runner.n_jobs for the site (default: one worker per core)")
    args = parser.parse_args()
    store = args.results / "store"
    if not (store / "runs").is_dir():
        raise SystemExit(f"no `dpbench run` recorded under {store}: run one first "
                         "(e.g. `make demo` or `make smoke` with --results results/smoke)")
    bench(store, args.jobs)
