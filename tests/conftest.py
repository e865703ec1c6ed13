"""Shared fixtures: a repo-local CLI runner writing into temporary result folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# submitit configures logging when it is first imported (logging.config.dictConfig), which
# closes every handler registered by then. absl's handler, registered when JAX is first
# imported, closes its stream unless it is the current sys.stderr: under pytest's capture
# that stream is the capture's file, which a later test's capsys then finds closed ("I/O
# operation on closed file"), depending on test order. Importing submitit here runs its
# configuration before any such handler exists.
import submitit  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
# the suite's grids run their trials: no shipped reference answers them (the reference's own
# tests name a folder); subprocesses inherit it
os.environ["DPBENCH_REFERENCE"] = "off"
# ... and a plan's seconds are the stored trials' as recorded, not scaled to this machine's
# speed at the moment (tests/core/test_hostspeed.py sets a speed where it tests the scaling)
os.environ["DPBENCH_HOST_PROBE"] = "off"


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


def stored_runs(tmp_path_factory: pytest.TempPathFactory, name: str,
                *grids: list[str]) -> Path:
    """A results folder (in a new temporary folder ``name``) holding ``dpbench run`` of
    each of ``grids``: the store of a module's fixture."""
    results = tmp_path_factory.mktemp(name) / "results"
    for grid in grids:
        run_cli("run", *grid, f"results_dir={results}", "runner.progress=false", check=True)
    return results


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
    ``-custom-<hash>`` folder, dpbench.workspace.figure_dir)."""
    from dpbench.workspace import compose_config, figure_dir

    return figure_dir(compose_config([o for o in overrides if not o.startswith("runner.")]))


@pytest.hookimpl(trylast=True)      # after pytest's tmp_path set-up, which it uses
def pytest_configure(config: pytest.Config) -> None:
    """One JAX program cache for the whole test run: ``$DPBENCH_PROGRAM_CACHE_DIR`` (and
    ``$DPBENCH_CACHE_DIR``) = ``<pytest's basetemp>/programs``, set in the first process
    before pytest-xdist starts its workers, so they, the CLI processes tests start and every
    trial of every temporary results folder (compile_cache.use_root keeps a pinned cache)
    load what any of them compiled or traced instead of compiling it again (a Bayesian GLM
    sampler: ~40 s of compilation per process). Sound: a loaded program is the same
    executable, so no result depends on the cache (tests/core/test_compile_cache.py checks
    bit-identity); the tests that check the cache itself set their own fresh folder
    (``DPBENCH_CACHE_DIR`` in their processes, ``PIN_ENV`` removed where they go through
    ``use_root``). A cache the user pinned is kept. Also keeps in-process fits from writing
    into the checkout's ``results/cache``.

    The processes started from here (xdist workers, CLI runs) get ``PYTHONHASHSEED`` = 0
    unless it is set (compile_cache.pin_hash_seed, as every ``dpbench`` command does for its
    own processes): the keys of mbi's programs depend on the hash seed, so with a random
    seed per worker the workers would not find each other's AIM/MST programs. The tests that
    need an unset or another seed pass their own in their processes' environment."""
    from dpbench import compile_cache

    compile_cache.pin_hash_seed()
    if os.environ.get(compile_cache.PIN_ENV):      # the user's, or inherited by a worker
        os.environ[compile_cache.ROOT_ENV] = os.environ[compile_cache.PIN_ENV]
        return
    folder = config._tmp_path_factory.getbasetemp() / "programs"   # what xdist itself uses
    os.environ[compile_cache.PIN_ENV] = os.environ[compile_cache.ROOT_ENV] = str(folder)


#: Tests that run the same expensive JAX programs, by a word of their node id: under
#: pytest-xdist the slow ones among them run on one worker, one after the other, so a
#: program traced and compiled for one test is reused by the next from the process's memory
#: (the Bayesian GLM's samplers: dpbench.methods.bayes.sampling._PROGRAMS, keyed by model,
#: settings and shapes; the contract test, the privacy audit and the smoke runs fit the same
#: yamls on the same cells). The persistent cache (pytest_configure) saves only the XLA
#: compile; this saves the tracing too (~20 s a sampler). Sound: the same program gives the
#: same draws whichever test compiled it; only where the tests run changes.
SHARED_PROGRAMS = ("bayesglm",)


def _group(config: pytest.Config, item: pytest.Item, group: str) -> None:
    """Mark ``item`` for pytest-xdist's group ``group``. xdist's worker tells the scheduler
    a test's group by appending ``@group`` to its node id (``item._nodeid``), which pytest
    9.2 no longer reads (its node id is the structured ``item._id``: pytest-xdist issue
    1386), so no test was grouped (checked: two tests of one module fixture ran on gw0 and
    gw1, each building the fixture); here the id gets the suffix that xdist's scheduler
    reads. Older pytest (no ``_id``): xdist's own hook does it."""
    item.add_marker(pytest.mark.xdist_group(group))
    if getattr(config.option, "loadgroup", False) and hasattr(item, "_id"):   # xdist worker
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(f"{item.nodeid}@{group}")


def _module_group(item: pytest.Item) -> str | None:
    """The item's module when it uses a module- or session-scoped fixture of that module."""
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    if info is not None and any(defs and defs[-1].scope in ("module", "session")
                                and defs[-1].baseid == module
                                for defs in info.name2fixturedefs.values()):
        return module
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``: ``-n 2 --dist loadgroup``), the tests of a module
    that share a module- or session-scoped fixture of that module run on one worker, so the
    fixture (a smoke run, the SLURM cluster, a browser) is built once and never twice at
    the same time, and so do the slow tests of one :data:`SHARED_PROGRAMS` word (with the
    module groups they belong to); every other test is balanced freely.

    The order: xdist hands out the groups first (largest first), then single tests in
    collection order, one at a time to whichever worker is free; so the slow single tests
    (``@pytest.mark.slow``) are moved to the front, longest-first scheduling: a minute-long
    test started last keeps one worker busy while the other has nothing left. Only under
    xdist, and never inside a group: a module's fixture-sharing tests stay together."""
    module_of = {item.nodeid: _module_group(item) for item in items}
    shared_of = {item.nodeid: next((w for w in SHARED_PROGRAMS if w in item.nodeid), None)
                 for item in items if item.get_closest_marker("slow")}
    merged = {module_of[n]: w for n, w in shared_of.items() if w and module_of[n]}
    for item in items:
        group = shared_of.get(item.nodeid) or merged.get(module_of[item.nodeid]) \
            or module_of[item.nodeid]
        if group:
            _group(config, item, group)
    if hasattr(config, "workerinput"):      # an xdist worker: its order is the one used
        single_slow = [bool(item.get_closest_marker("slow"))
                       and not item.get_closest_marker("xdist_group") for item in items]
        order = sorted(range(len(items)), key=lambda i: not single_slow[i])   # stable
        items[:] = [items[i] for i in order]


#: Every test's time in the last run that ran it (``.pytest_cache/v/dpbench/durations``), by
#: the controlling process: ``scripts/test_durations.py`` lists the slowest tests and modules
#: of a run after the fact, since CI's ``--durations=25`` shows only the first 25.
_DURATIONS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call", "teardown"):
        _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or getattr(config, "cache", None) is None \
            or not _DURATIONS:
        return
    kept = config.cache.get("dpbench/durations", {})     # a partial run updates its tests
    config.cache.set("dpbench/durations", dict(sorted({**kept, **_DURATIONS}.items())))
