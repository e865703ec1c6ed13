"""Rebuild results/reference (the reference results shipped with dpbench) from a store.

    python scripts/build_reference.py [experiment ...] [--profile default] [--out DIR]
        [results_dir=...]

For each experiment (default: every one) at the profile, the ok trials of its current grid
are taken from the store of ``results_dir`` (default ``results``) with the shipped reference
behind it (the local trial wins, a grid run over several sittings keeps what earlier ones
published), and written with ``runner/reference.py``'s ``write_reference``: trials of the
grids kept, a manifest saying how many of each grid's trials it holds. Trials whose key no
kept grid has any more (stale) are dropped, and counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench.runner.grid import choices  # noqa: E402
from dpbench.runner.reference import default_dir, shipped, write_reference  # noqa: E402
from dpbench.workspace import compose_config, grid, store_of  # noqa: E402


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
    records, grids, keys = {}, {}, set()
    for name in names or choices("experiment"):
        for profile in profiles:
            cfg = compose_config([f"experiment={name}", f"profile={profile}", *overrides])
            store = store_of(cfg)
            specs = grid(cfg)
            held = 0
            for s in specs:
                keys.add(s.key)
                rec = store.get(s.key)
                if rec is not None and rec.get("status") == "ok":
                    records[s.key] = rec
                    held += 1
            grids[f"{name}@{profile}"] = {"held": held, "asked": len(specs)}
            print(f"{name} ({profile}): {held} of {len(specs)} trials")
    old = shipped()
    stale = 0 if old is None else sum(k not in keys for k in old.keys())
    path = write_reference(records.values(), out, grids)
    print(f"{path}: {len(records)} trials, {path.stat().st_size / 2**20:.2f} MB; "
          f"{stale} stale trial(s) of the old reference dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
