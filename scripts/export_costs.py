"""Write the measured cost of a grid's stored trials into its reference fits (its paper's
``papers/<paper>/costs.jsonl``, or for an experiment of no paper the ``costs.jsonl`` next to
its yaml; :mod:`dpbench.runner.reference_costs`), so that ``dpbench plan`` can size that
grid from a clean clone.

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
paper's. ``--unfinished DATASET/METHOD/EPS=CPU_SECONDS`` (as ``plan`` and ``status`` name
a cell; repeatable) records a trial of that cell stopped before it finished, after that
much CPU time: ``plan`` then gives the cell at least that, and says so. Not a test.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from collections.abc import Sequence  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

from dpbench.runner.cost import stored_trials, trial_name  # noqa: E402
from dpbench.runner.reference_costs import (  # noqa: E402
    export,
    home_of,
    machine_text,
    unfinished_line,
)
from dpbench.runner.spec import TrialSpec  # noqa: E402
from dpbench.runner.store import OK, ResultStore  # noqa: E402
from dpbench.workspace import compose_config, runnable, store_of  # noqa: E402


def _option(args: list[str], flag: str) -> tuple[list[str], list[str]]:
    """The values of every ``flag VALUE`` in ``args``, and ``args`` without them."""
    values, rest, i = [], [], 0
    while i < len(args):
        if args[i] == flag and i + 1 < len(args):
            values.append(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    return values, rest


def unfinished_lines(specs: Sequence[TrialSpec], store: ResultStore, items: list[str]
                     ) -> list[dict]:
    """A reference line per ``DATASET/METHOD/EPS=CPU_SECONDS`` (the cell's first trial the
    store has no ok record of; the dataset's size from an ok record of it); ValueError
    naming the item if the cell or the size is not found."""
    sizes = {t.spec.dataset: t.size for t in stored_trials(store) if t.size}
    when = datetime.now(UTC).isoformat()
    out = []
    for item in items:
        name, _, value = item.rpartition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not name or not seconds > 0:
            raise ValueError(f"--unfinished {item!r}: expected DATASET/METHOD/EPS=CPU_SECONDS "
                             "with CPU_SECONDS > 0")
        cell = [s for s in specs if trial_name(s) == name
                and (store.get(s.key) or {}).get("status") != OK]
        if not cell:
            raise ValueError(f"--unfinished {item!r}: no unfinished trial of that cell in the "
                             f"grid; cells: {', '.join(sorted({trial_name(s) for s in specs}))}")
        spec = min(cell, key=lambda s: s.trial)
        if spec.dataset not in sizes:
            raise ValueError(f"--unfinished {item!r}: no ok trial of {spec.dataset} in the "
                             "store to take its size from")
        out.append(unfinished_line(spec, seconds, sizes[spec.dataset], machine_text(), when))
    return out


def main(args: list[str]) -> int:
    outs, args = _option(args, "--out")    # another file than the paper's (to look first)
    out = Path(outs[-1]) if outs else None
    stopped, args = _option(args, "--unfinished")
    cfg = compose_config(args)
    specs, _ = runnable(cfg)
    store = store_of(cfg)
    records = [r for r in (store.get(s.key) for s in specs) if r and r.get("status") == OK]
    if not records:
        print(f"no ok trial of the grid in {store.root}: run it first", file=sys.stderr)
        return 2
    try:
        extra = unfinished_lines(specs, store, stopped)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    path = out or home_of(cfg.experiment.get("paper"), str(cfg.experiment.name))
    n = export(records, path, machine_text(), extra)
    print(f"{n - len(extra)} of the grid's {len(specs)} trial(s) written to {path}"
          + (f", and {len(extra)} unfinished one(s) (lower bounds)" if extra else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
