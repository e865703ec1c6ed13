"""Every experiment in conf/experiment runs on its smoke profile and builds its figures.

The list is ``dpbench.runner.grid.choices("experiment")`` (every yaml under
conf/experiment/, per-paper subfolders included), so a new experiment is covered without
touching this file; NARROW and RAW are keyed by experiment name. Runs go through the
CLI's ``main`` in this process (one import of JAX / torch for the whole file); each
writes to its own temporary results folder. Experiments on downloaded data (ACS via
folktables, Fire, Taxi) run on small files in the real raw formats
(tests/raw_fixtures.py) under a temporary data root.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from claims_golden import assert_golden
from conftest import smoke_results
from raw_fixtures import fake_fire, fake_pums, fake_taxi, write_fire, write_pums, write_taxi
from smoke_grids import NARROW

from dpbench.data import discrete, files, uci
from dpbench.entry import main
from dpbench.runner.schema import choices
from dpbench.runner.store import OK, ResultStore
from dpbench.workspace import is_arena

# the arenas build leaderboards, not figures: tests/experiments/test_arenas.py runs them
EXPERIMENTS = [e for e in choices("experiment") if not is_arena(e)]

# Experiments whose data is downloaded, not shipped: raw files written before the run.
RAW: dict[str, Callable[[], Path]] = {
    "linreg_fire": lambda: write_fire(fake_fire(n=4000)),
    "linreg_taxi": lambda: write_taxi(fake_taxi(n=2500)),
    "logreg_acs_income": lambda: write_pums(fake_pums(n=5000)),
    "logreg_acs_public_coverage": lambda: write_pums(fake_pums(n=5000)),
}


def test_overrides_name_existing_experiments() -> None:
    # a renamed or moved experiment must not silently lose its narrowed grid or raw files
    assert set(NARROW) | set(RAW) <= set(EXPERIMENTS), sorted((set(NARROW) | set(RAW))
                                                              - set(EXPERIMENTS))


def _clear_data_caches() -> None:
    for fn in (discrete._read_discrete, files._verified, uci.read_table):
        fn.cache_clear()


@pytest.fixture()
def data_root(experiment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A temporary data root with raw fixture files for the downloaded datasets."""
    if experiment in RAW:
        monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path / "data"))
        _clear_data_caches()
        RAW[experiment]()
    yield
    _clear_data_caches()


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_smoke_profile_runs_and_reports(experiment: str, data_root: None, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    results = smoke_results(tmp_path)
    common = [f"experiment={experiment}", "profile=smoke", f"results_dir={results}",
              *NARROW.get(experiment, [])]
    assert main(["run", *common, "runner.progress=false", "runner.n_jobs=1"]) == 0
    capsys.readouterr()
    # every planned trial is stored as ok
    assert main(["plan", *common]) == 0
    plan = capsys.readouterr().out
    assert "failed 0, to do 0" in plan, plan
    store = ResultStore(results / "store")
    assert store.keys() and all(store.status(k) == OK for k in store.keys())

    assert main(["figures", *common]) == 0
    figures_out = capsys.readouterr().out
    # one written path per line; claim checks add a summary line "<path>: n PASS, ..."
    outputs = [Path(ln) for ln in figures_out.splitlines()
               if "/figures/" in ln and " " not in ln and not ln.endswith(":")]
    assert outputs, f"{experiment}: no figures or tables written"
    assert all(p.exists() and p.stat().st_size > 0 for p in outputs)
    # figures in both formats, tables in both formats (claims.md has claims.json beside it)
    assert any(p.suffix == ".md" for p in outputs)
    for p in outputs:
        if p.suffix == ".png":
            assert p.with_suffix(".pdf") in outputs, p
        if p.suffix == ".md" and p.name != "claims.md":
            assert p.with_suffix(".tex") in outputs, p
    for p in outputs:
        if p.name == "claims.md":   # the CLI's verdict count, from claims.json beside it
            assert p.with_suffix(".json") in outputs, p
            assert re.search(rf"^{re.escape(str(p))}: \d+ PASS, \d+ FAIL, \d+ SKIP$",
                             figures_out, re.M), figures_out
    # the same verdicts as the per-paper checks the claims engine replaced
    assert_golden(experiment, next((p for p in outputs if p.name == "claims.json"), None))
