"""Golden trial keys: renaming a yaml, moving a module or regrouping conf/ keeps every key.

``golden_keys.json`` holds, per experiment (by its ``experiment.name``) and profile (smoke,
default), the number of trials, a digest of all their keys and a digest per
(dataset, method) cell, named by the cell's pinned identity. A deliberate key change is made
by regenerating the file (``python tests/core/test_identity.py --write``), named in the
commit, and its grids re-run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from dpbench.runner.grid import expand
from dpbench.runner.schema import choices
from dpbench.workspace import compose_config

GOLDEN = Path(__file__).with_name("golden_keys.json")
PROFILES = ("smoke", "default")


def _digest(keys: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]


def keys_of(experiment: str, profile: str) -> tuple[str, dict]:
    """(experiment.name, {n, keys, cells}) of one experiment's grid under a profile."""
    cfg = compose_config([f"experiment={experiment}", f"profile={profile}"])
    specs = expand(cfg)
    cells: dict[str, list[str]] = defaultdict(list)
    for s in specs:
        ident = s.identity()
        cells[f"{ident['dataset']}|{ident['method']}"].append(s.key)
    return str(cfg.experiment.name), {
        "n": len(specs), "keys": _digest([s.key for s in specs]),
        "cells": {c: _digest(k) for c, k in sorted(cells.items())}}


def current() -> dict[str, dict]:
    out = {}
    for experiment in choices("experiment"):
        for profile in PROFILES:
            name, entry = keys_of(experiment, profile)
            out[f"{name}/{profile}"] = entry
    return out


@pytest.fixture(scope="module")
def now() -> dict[str, dict]:
    return current()


def test_every_golden_grid_still_exists(now: dict[str, dict]) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(now)


def _golden_grids() -> list[str]:
    return sorted(json.loads(GOLDEN.read_text())) if GOLDEN.exists() else []


@pytest.mark.parametrize("grid", _golden_grids())
def test_keys_unchanged(grid: str, now: dict[str, dict]) -> None:
    want, got = json.loads(GOLDEN.read_text())[grid], now.get(grid)
    assert got is not None, f"{grid}: experiment gone"
    changed = sorted(c for c in set(want["cells"]) | set(got["cells"])
                     if want["cells"].get(c) != got["cells"].get(c))
    assert got["keys"] == want["keys"] and got["n"] == want["n"], (
        f"{grid}: trial keys changed ({want['n']} -> {got['n']} trials); "
        f"cells changed: {changed}")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
