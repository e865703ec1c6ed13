"""``dpbench list`` (dpbench/catalog.py) says what the composed config says (issue 59,
defect 1): an experiment that extends another through ``defaults`` shows its parent's paper,
task and methods, and no name is listed twice."""

from __future__ import annotations

import re

import pytest

from dpbench import catalog
from dpbench.runner.schema import choices, entry_name
from dpbench.workspace import compose_config


def _names(axis: str) -> list[str]:
    """The names of a listed axis (``a, b (theta: 10 values), c``), sweep notes dropped."""
    return [re.sub(r"\s*\(.*\)$", "", item) for item in re.split(r",\s*(?![^()]*\))", axis)]


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, str]]:
    return {r["experiment"]: r for r in catalog.experiments()}


def test_every_experiment_lists_a_task_a_paper_and_its_methods(rows: dict) -> None:
    assert sorted(rows) == choices("experiment")
    for name, row in rows.items():
        assert row["paper"] and row["task"], (name, row)
        for axis in ("datasets", "methods"):
            names = _names(row[axis])
            assert "None" not in names and "" not in names, (name, axis, row[axis])
            assert len(names) == len(set(names)), (name, axis, row[axis])


@pytest.mark.parametrize("name", ["linreg_adult_noleak", "logreg_acs_income", "binagg_sim",
                                  "binagg_ablation"])
def test_a_row_is_the_composed_config(rows: dict, name: str) -> None:
    """Paper, task and the names on each axis are those of the composed config (Hydra's
    defaults list merged), in their order, each once."""
    cfg = compose_config([f"experiment={name}"])
    row = rows[name]
    assert row["paper"] == cfg.experiment.paper
    assert row["task"] == cfg.experiment.task
    for axis in ("datasets", "methods"):
        want = list(dict.fromkeys(entry_name(v) for v in cfg[axis]))
        assert _names(row[axis]) == want, (axis, row[axis])


def test_a_swept_entry_says_what_it_sweeps(rows: dict) -> None:
    assert "binagg (+ theta: 10 values)" in rows["binagg_ablation"]["methods"]
    assert "binagg_sim_d5 (n: 5 values; x_upper: 4 values)" in rows["binagg_sim"]["datasets"]


def test_an_arena_lists_its_members(rows: dict) -> None:
    """``datasets: arena`` is shown as the member yamls the grid would expand it to."""
    row = rows["arena_synthetic"]
    assert row["paper"] == "arena"
    assert "arena" not in _names(row["methods"]) and "mwem" in _names(row["methods"])
    assert "qr_adult_reduced" in _names(row["datasets"])
