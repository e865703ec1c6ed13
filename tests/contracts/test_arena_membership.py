"""Arenas derive their line-up from the contracts: a method or dataset registered outside
the repository (``DPBENCH_PATH``) with an ``arena:`` role joins every arena whose task it
serves and no other, with no arena code or yaml changed; a generator that declares only
``produces = (SyntheticTable,)`` serves regression, classification and query release.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbench.entry import main
from dpbench.runner.grid import expand_cells
from dpbench.workspace import compose_config

TOY_MODULE = '''
"""A toy generator for the arena membership test: uniform records, pure 0-DP."""
import numpy as np
import pandas as pd

from dpbench.methods.base import Method
from dpbench.methods.outputs import SyntheticTable


class ToyGenerator(Method):
    accounting = "pure"
    neighbours = "replace_one"
    requires = frozenset({"discrete"})
    produces = (SyntheticTable,)

    def fit(self, data, accountant, rng):
        accountant.charge_pure(0.0, "toy: reads no row")
        cols = {a: rng.integers(0, k, size=data.n) for a, k in data.domain.items()}
        self.records_ = pd.DataFrame(cols)
        self.encoding_ = data.encoding
        return self

    def output(self, kind):
        if kind is SyntheticTable or (isinstance(kind, tuple) and SyntheticTable in kind):
            X, y = self.encoding_.encode(self.records_)
            return SyntheticTable(X, y, self.records_)
        return super().output(kind)
'''

ARENA_TASKS = {"arena_regression": "regression", "arena_classification": "classification",
               "arena_synthetic": "query_release"}


@pytest.fixture()
def toy_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "toy_arena_module.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("toy_arena_module", None)
    (tmp_path / "conf" / "method").mkdir(parents=True)
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "method" / "toy_generator.yaml").write_text(textwrap.dedent("""
        _target_: toy_arena_module.ToyGenerator
        label: Toy generator
        arena: method
    """))
    (tmp_path / "conf" / "dataset" / "toy_heart.yaml").write_text(textwrap.dedent("""
        base: mpdp_heart
        label: Toy Heart
        arena: true
    """))
    monkeypatch.setenv("DPBENCH_PATH", str(tmp_path))
    return tmp_path


def test_a_records_only_generator_serves_every_task_that_scores_records(toy_root: Path) -> None:
    from toy_arena_module import ToyGenerator

    served = ToyGenerator.tasks_scored({})
    assert {"regression", "classification", "query_release", "tstr"} <= served
    assert "inference" not in served and "posterior" not in served


@pytest.mark.parametrize("arena", sorted(ARENA_TASKS))
def test_toy_method_and_dataset_join_exactly_the_arenas_they_serve(toy_root: Path,
                                                                   arena: str) -> None:
    specs, refused = expand_cells(compose_config([f"experiment={arena}", "profile=paper"]))
    methods = {s.method for s in specs} | {r.method for r in refused}
    datasets = {s.dataset for s in specs} | {r.dataset for r in refused}
    assert "toy_generator" in methods                  # it serves all three tasks
    # the toy dataset is Heart's data (its tstr, classification and query-release views):
    # every arena but regression
    assert ("toy_heart" in datasets) == (arena != "arena_regression")


def test_toy_cells_run_and_reach_the_board(toy_root: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    common = ["experiment=arena_classification", "profile=smoke", f"results_dir={results}",
              "datasets=[toy_heart]", "experiment.profiles.smoke.datasets=[toy_heart]",
              "methods=[toy_generator,majority,mwem]"]
    assert main(["run", *common, "runner.progress=false", "runner.n_jobs=1"]) == 0
    assert main(["leaderboard", *common]) == 0
    capsys.readouterr()
    (folder,) = (results / "leaderboard").glob("arena_classification-smoke-custom-*")
    board = json.loads((folder / "board.json").read_text())
    rows = {r["method"]: r for t in board["tables"] for r in t["rows"]}
    assert rows["toy_generator"]["trials_ok"] == 2 and np.isfinite(rows["toy_generator"]["mean"])
    assert rows["mwem"]["status"] == "refused"          # one cell out, the others intact
    assert isinstance(pd.read_csv(folder / "board.csv"), pd.DataFrame)
