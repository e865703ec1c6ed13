"""Shared fixtures: a repo-local CLI runner writing into temporary result folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def stored_records(results: Path) -> dict[str, dict]:
    """The trial records under ``<results>/store``, by key (temporary files of a write in
    flight or killed, ``.``-prefixed, are not records)."""
    return {p.stem: json.loads(p.read_text())
            for p in (results / "store" / "trials").glob("*/*.json")
            if not p.name.startswith(".")}


def stored_metrics(results: Path) -> dict[str, dict]:
    """The metrics of the ok trials under ``<results>/store``, by key."""
    from dpbench.runner.store import OK
    return {k: r["metrics"] for k, r in stored_records(results).items() if r["status"] == OK}


def dpbench_cmd(*args: str) -> list[str]:
    """The dpbench CLI of this checkout, run with the current interpreter."""
    return [sys.executable, "-m", "dpbench.entry", *args]


def run_cli(*args: str, env: dict[str, str | None] | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """``dpbench *args`` in a subprocess; ``env`` is merged over ``os.environ`` (a value of
    None removes the variable)."""
    full_env = {**os.environ, **(env or {})}
    full_env = {k: v for k, v in full_env.items() if v is not None}
    proc = subprocess.run(dpbench_cmd(*args), capture_output=True, text=True, cwd=REPO,
                          env=full_env, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"dpbench {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def finished_run(results: Path, grid: list[str], n: int) -> Path:
    """``dpbench run *grid`` into ``results``, which must then hold ``n`` records: the
    reference run of the fault tests."""
    run_cli("run", *grid, f"results_dir={results}", check=True)
    assert len(stored_records(results)) == n
    return results


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


#: ``make smoke`` sets it: the smoke runs then share one results folder (not the user's
#: ``results/``: some run on fixture files standing in for downloaded data) for the site
SMOKE_RESULTS_ENV = "DPBENCH_SMOKE_RESULTS"


def smoke_results(tmp_path: Path) -> Path:
    """Where a smoke run writes: ``$DPBENCH_SMOKE_RESULTS`` if set, else under ``tmp_path``."""
    shared = os.environ.get(SMOKE_RESULTS_ENV)
    return Path(shared).resolve() if shared else tmp_path / "results"


def figure_folder(*overrides: str) -> Path:
    """Where ``dpbench figures <overrides>`` writes (an ad-hoc grid gets its own
    ``-custom-<hash>`` folder, dpbench.cli.figure_dir)."""
    from dpbench.cli import compose_config, figure_dir

    return figure_dir(compose_config([o for o in overrides if not o.startswith("runner.")]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``: ``-n 2 --dist loadgroup``), the tests of a module
    that share a module- or session-scoped fixture of that module run on one worker, so the
    fixture (a smoke run, the SLURM cluster, a browser) is built once and never twice at
    the same time; every other test is balanced freely."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        module = item.nodeid.split("::")[0]
        if info is None:
            continue
        if any(defs and defs[-1].scope in ("module", "session") and defs[-1].baseid == module
               for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(module))
