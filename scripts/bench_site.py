"""How long ``dpbench site`` takes on a store, against ``dpbench figures`` on the same store
(the baseline, run in the same process): a cold build (no site yet), a warm one (nothing
changed), the figures of the same grids, then a cold build again with those figure folders
current (a page copies them instead of drawing).

The site and figures are written under a temporary results folder whose ``store`` links to
the given one, so the user's ``results/site`` and ``results/figures`` are left alone (the
figures' parquet compaction writes ``<store>/trials.parquet``, as ``dpbench figures`` does).

    .venv/bin/python scripts/bench_site.py [--results results]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import tempfile
import time
from pathlib import Path

from dpbench.entry import main


def timed(argv: list[str]) -> tuple[float, str]:
    """Seconds of ``dpbench <argv>`` in this process, and what it printed."""
    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"dpbench {' '.join(argv)} failed ({code})")
    return time.perf_counter() - t, out.getvalue()


def bench(store: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        results.mkdir()
        (results / "store").symlink_to(store.resolve())
        common = [f"results_dir={results}", "runner.progress=false"]
        cold, said = timed(["site", *common])
        warm, _ = timed(["site", *common])
        figures, _ = timed(["figures", *common])
        shutil.rmtree(results / "site")
        reused, _ = timed(["site", *common])      # the figure folders are current now
        print(said.strip().splitlines()[-1])
        print(f"site, cold (every page built): {cold:7.1f} s  = {cold / figures:.2f} x figures")
        print(f"site, cold after `figures` (folders copied): {reused:7.1f} s  = "
              f"{reused / figures:.2f} x figures")
        print(f"site, warm (nothing changed):  {warm:7.1f} s  = {warm / figures:.2f} x figures")
        print(f"figures of every profile run (baseline): {figures:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the results folder whose store to use (default: results)")
    args = parser.parse_args()
    store = args.results / "store"
    if not (store / "runs").is_dir():
        raise SystemExit(f"no `dpbench run` recorded under {store}: run one first "
                         "(e.g. `make demo` or `make smoke` with --results results/smoke)")
    bench(store)
