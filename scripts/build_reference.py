"""Rebuild results/reference (the reference results shipped with dpbench) from a store.

    python scripts/build_reference.py [experiment ...] [--profile default] [--out DIR]
        [results_dir=...]

For each experiment (default: every one) at the profile, the ok trials of its current grid
are taken from the store of ``results_dir`` (default ``results``) with the reference being
rebuilt (``--out``, default the shipped one) behind it: the local trial wins, and a grid
run over several sittings keeps what earlier ones published. They are written with
``runner/reference.py``'s ``write_reference``, a file per grid (a trial two grids share in
the first's, by name), with a manifest saying how many of each grid's trials it holds.
Every grid the old manifest names is kept too (building one grid never drops another's
trials); trials whose key no kept grid has any more (stale:
``stale_keys``) are dropped, and counted. A grid whose experiment names
``reference_metrics`` ships its trials with those metrics only (``compacted``; a trial
another grid ships whole stays whole), and the manifest says so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench.runner.reference import (  # noqa: E402
    ENV,
    Reference,
    compacted,
    default_dir,
    kept_metrics,
    stale_keys,
    write_reference,
)
from dpbench.runner.schema import choices  # noqa: E402
from dpbench.workspace import arena_grid, compose_config, grid, is_arena, store_of  # noqa: E402


def main(argv: list[str]) -> int:
    profiles, out, overrides, names = ["default"], default_dir(), [], []
    it = iter(argv)
    for arg in it:
        if arg == "--profile":
            profiles = next(it).split(",")
        elif arg == "--out":
            out = Path(next(it))
        elif "=" in arg:
            overrides.append(arg)
        else:
            names.append(arg)
    unknown = sorted(set(names) - set(choices("experiment")))
    if unknown:
        print(f"unknown experiment(s) {unknown}; valid: {', '.join(choices('experiment'))}",
              file=sys.stderr)
        return 2
    # the reference rebuilt is the one in ``out``: read behind the store, so its trials
    # (of grids run at other sittings or on other machines) carry over
    old = Reference(out) if Reference(out).exists() else None
    if old is not None:
        os.environ[ENV] = str(out)
    wanted = [f"{n}@{p}" for n in names or choices("experiment") for p in profiles]
    # the grids the old reference held stay in it (a build of one grid keeps the others);
    # their trials are kept where the grid still asks for them, dropped as stale otherwise
    kept = list(dict.fromkeys(wanted + sorted((old.manifest() if old else {}).get("grids", {}))))
    records, grids, keys, parts, asks = {}, {}, set(), {}, {}
    for entry in sorted(kept):
        name, profile = entry.split("@", 1)
        if name not in choices("experiment"):
            continue                      # an experiment since removed: its trials are stale
        cfg = compose_config([f"experiment={name}", f"profile={profile}", *overrides])
        store = store_of(cfg)
        # an arena's cells that cannot run (refused, listed on its board) are not asked for
        specs = arena_grid(cfg, store=store)[0] if is_arena(name) else grid(cfg)
        keep = cfg.experiment.get("reference_metrics")
        keep = None if keep is None else sorted(keep)
        held = 0
        for s in specs:
            keys.add(s.key)
            asks.setdefault(s.key, []).append(keep)
            rec = store.get(s.key)
            if rec is not None and rec.get("status") == "ok":
                records[s.key] = rec
                parts.setdefault(s.key, entry)    # a trial two grids share: the first's file
                held += 1
        grids[entry] = {"held": held, "asked": len(specs)} | ({"metrics": keep} if keep else {})
        print(f"{name} ({profile}): {held} of {len(specs)} trials")
    stale = [] if old is None else stale_keys(old, keys)
    for key, rec in records.items():
        keep = kept_metrics(asks[key])
        if keep is not None:
            records[key] = compacted(rec, keep)
    path = write_reference(records.values(), out, grids, parts)
    size = sum(f.stat().st_size for f in path.glob("*.jsonl.*"))
    print(f"{path}: {len(records)} trials, {size / 2**20:.2f} MB; "
          f"{len(stale)} stale trial(s) of the old reference dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
