"""Every shipped experiment is sized by ``plan`` from a clean clone (an empty store): the
reference fits that ship with dpbench (dpbench/runner/reference_costs.py) give each of its
trials a figure. A paper's default grid on vendored data is measured cell by cell: one
trial at each end of its budgets for every sweep point, the budgets between interpolated,
so a fit left stale by a change of a method's settings (a new trial key) fails here until
its cells are measured again (``make costs``). A grid on data the user downloads (Fire,
Taxi, the ACS tasks: never here), the paper profiles and the arenas may lean on the
per-method model fitted on every shipped fit, but leave no trial unknown."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dpbench.runner.cost import INTERPOLATED, REFERENCE, UNKNOWN, grid_cost
from dpbench.runner.reference_costs import read_reference, shipped_files
from dpbench.runner.schema import entries
from dpbench.runner.store import ResultStore
from dpbench.workspace import compose_config, reference_of, runnable

EXPERIMENTS = sorted(entries("experiment"))


def sources(experiment: str, profile: str, tmp_path: Path) -> tuple[Counter[str], bool]:
    """Where ``plan`` takes each trial's figure from for an empty store, and whether the
    grid is measurable here (a paper's, on vendored data only: no dataset to download)."""
    cfg = compose_config([f"experiment={experiment}", f"profile={profile}",
                          f"results_dir={tmp_path}"])
    specs, _ = runnable(cfg)
    cost = grid_cost(specs, specs, ResultStore(tmp_path / "store"), *reference_of(cfg))
    vendored = not any("download" in s.dataset_params for s in specs)
    return (Counter(cost.estimates[s.key].source for s in specs),
            bool(cfg.experiment.get("paper")) and vendored)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_the_default_grid_is_sized_from_measured_cells(experiment: str,
                                                       tmp_path: Path) -> None:
    found, measurable = sources(experiment, "default", tmp_path)
    assert UNKNOWN not in found, found
    if measurable:
        assert set(found) <= {REFERENCE, INTERPOLATED}, found


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_the_paper_grid_has_no_unknown_trial(experiment: str, tmp_path: Path) -> None:
    found, _ = sources(experiment, "paper", tmp_path)
    assert UNKNOWN not in found, found


def test_every_shipped_line_is_read_and_names_its_machine() -> None:
    files = shipped_files()
    papers = {p.name for p in (Path(__file__).resolve().parents[2] / "papers").iterdir()
              if p.is_dir()}
    assert {p.parent.name for p in files} >= papers       # every paper ships its fits
    for path in files:
        lines = read_reference(path)
        assert lines and all(ln["machine"] and ln["seconds"] >= 0 for ln in lines), path


#: the three arenas' default profiles together, by ``plan`` from a clean clone (issue 60,
#: item 1: "the three default profiles together <= 4 CPU-hours by plan")
ARENA_DEFAULT_CPU_HOURS = 4.0


def test_the_three_default_arenas_plan_within_their_cpu_budget(tmp_path: Path,
                                                               monkeypatch) -> None:
    """As ``plan`` prices them from a clean clone: from the shipped results' trials of
    their cells (their recorded CPU time) and the shipped fits."""
    monkeypatch.delenv("DPBENCH_REFERENCE", raising=False)
    hours = {}
    for arena in ("arena_synthetic", "arena_classification", "arena_regression"):
        cfg = compose_config([f"experiment={arena}", "profile=default",
                              f"results_dir={tmp_path / arena}", "reference=false"])
        specs, _ = runnable(cfg)
        cost = grid_cost(specs, specs, ResultStore(tmp_path / arena / "store"),
                         *reference_of(cfg, specs))
        assert not cost.unknown(), arena
        hours[arena] = cost.seconds(specs) / 3600
    assert 0 < sum(hours.values()) <= ARENA_DEFAULT_CPU_HOURS, hours
