"""``dpbench compare``'s comparison (report/compare.py) on fabricated stores: a re-run that
reproduces the reference agrees (bit-identical where keys and versions match), a planted
change is named with its cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpbench.report import compare as cmp
from dpbench.runner import reference as ref
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import ResultStore

VERSIONS = {"numpy": "2.0.0"}


def spec(method: str, trial: int) -> TrialSpec:
    return TrialSpec(dataset="d", dataset_target="toy.load", dataset_params={},
                     method=method, method_target="toy.m", method_params={},
                     task="regression", epsilon=1.0, delta=1e-5, budget_unit="epsilon",
                     trial=trial, meta={"experiment": "toy"})


def record(s: TrialSpec, mse: float, versions: dict | None = None) -> dict:
    return {"key": s.key, "status": "ok", "spec": s.to_dict(), "metrics": {"mse": mse},
            "privacy": {"target_delta": 1e-5}, "timing": {"fit_s": 0.1},
            "versions": versions or VERSIONS}


def value(method: str, trial: int) -> float:
    # seeded per (method, trial): the same trial gives the same number on both sides
    return {"a": 1.0, "b": 2.0}[method] + np.random.default_rng(trial).normal(0, 0.1)


SPECS = [spec(m, t) for m in ("a", "b") for t in range(5)]


def test_a_faithful_rerun_agrees_bit_for_bit(tmp_path: Path) -> None:
    ref.write_reference([record(s, value(s.method, s.trial)) for s in SPECS], tmp_path / "r")
    local = ResultStore(tmp_path / "s")
    for s in SPECS:
        local.put(record(s, value(s.method, s.trial)))
    v = cmp.compare("toy", SPECS, local, ref.Reference(tmp_path / "r"), ["mse"])
    assert v.verdict.startswith("agrees: 2 cell-metric(s)") and "10 trial(s) bit-identical" \
        in v.verdict, v.verdict
    assert all(c.z == 0.0 for c in v.cells)
    assert cmp.lines(v)[-1] == f"toy: {v.verdict}"


def test_a_planted_change_is_reported_with_its_cell(tmp_path: Path) -> None:
    ref.write_reference([record(s, value(s.method, s.trial)) for s in SPECS], tmp_path / "r")
    local = ResultStore(tmp_path / "s")
    for s in SPECS:                      # method b 1.0 worse here: z far beyond tolerance
        local.put(record(s, value(s.method, s.trial) + (1.0 if s.method == "b" else 0.0)))
    v = cmp.compare("toy", SPECS, local, ref.Reference(tmp_path / "r"), ["mse"])
    assert v.verdict.startswith("differs"), v.verdict
    assert any(p.startswith("d/b/1 mse: z = +") for p in v.problems), v.problems
    assert any("d/b/1 mse: 5 trial(s)" in p for p in v.problems), v.problems
    assert not any(p.startswith("d/a/") for p in v.problems)


def test_other_library_versions_are_compared_by_z_only(tmp_path: Path) -> None:
    ref.write_reference([record(s, value(s.method, s.trial)) for s in SPECS], tmp_path / "r")
    local = ResultStore(tmp_path / "s")
    for s in SPECS:   # another numpy, numbers a little different: no bit test, z small
        local.put(record(s, value(s.method, s.trial) + 1e-6, {"numpy": "2.1.0"}))
    v = cmp.compare("toy", SPECS, local, ref.Reference(tmp_path / "r"), ["mse"])
    assert v.verdict.startswith("agrees") and not any(c.identical or c.different
                                                       for c in v.cells)


def test_nothing_to_compare_and_the_tolerance_grows_with_cells(tmp_path: Path) -> None:
    ref.write_reference([], tmp_path / "r")
    v = cmp.compare("toy", SPECS, ResultStore(tmp_path / "s"), ref.Reference(tmp_path / "r"),
                    ["mse"])
    assert v.verdict.startswith("nothing to compare")
    assert 2.5 < cmp.z_tolerance(1) < cmp.z_tolerance(100) < 5
