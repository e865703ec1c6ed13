"""Write the measured cost of a grid's stored trials into its paper's reference fits
(``papers/<paper>/costs.jsonl``, :mod:`dpbench.runner.reference_costs`), so that ``dpbench
plan`` can size that grid from a clean clone.

Takes the same overrides as ``dpbench run``: the grid they compose is looked up in their
``results_dir``'s store and every ok trial of it becomes a line (a trial measured again
replaces its line; other lines stay). Run the trials first, one worker per core at most
and one thread each (the runner's default), e.g. one trial per end point of each sweep:

    dpbench run experiment=exrisk_table2 profile=paper profile.trials=1 \\
        'epsilons=[0.25,2.0]' results_dir=/tmp/costs runner.n_jobs=1
    python scripts/export_costs.py experiment=exrisk_table2 profile=paper \\
        profile.trials=1 'epsilons=[0.25,2.0]' results_dir=/tmp/costs

The seconds kept are each trial's CPU time (``cpu_s``), which other work on the machine
does not stretch; the line names the machine. ``--out FILE`` writes another file than the
paper's. Not a test.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench.cli import compose_config, runnable, store_of  # noqa: E402
from dpbench.roots import paper_dir  # noqa: E402
from dpbench.runner.reference_costs import FILE, export, machine_text  # noqa: E402
from dpbench.runner.store import OK  # noqa: E402


def main(args: list[str]) -> int:
    out = None
    if "--out" in args:      # another file than the paper's (e.g. to look before writing)
        i = args.index("--out")
        out, args = Path(args[i + 1]), args[:i] + args[i + 2:]
    cfg = compose_config(args)
    paper = cfg.experiment.get("paper")
    if not paper:
        print(f"experiment {cfg.experiment.name!r} belongs to no paper: nowhere to keep its "
              "reference fits", file=sys.stderr)
        return 2
    specs, _ = runnable(cfg)
    store = store_of(cfg)
    records = [r for r in (store.get(s.key) for s in specs) if r and r.get("status") == OK]
    if not records:
        print(f"no ok trial of the grid in {store.root}: run it first", file=sys.stderr)
        return 2
    path = out or paper_dir(str(paper)) / FILE
    n = export(records, path, machine_text())
    print(f"{n} of the grid's {len(specs)} trial(s) written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
