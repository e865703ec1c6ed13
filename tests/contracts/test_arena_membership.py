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


def test_a_dataset_naming_an_unknown_arena_task_is_refused_by_name(toy_root: Path) -> None:
    """``arena: [<task>, ...]`` with a misspelt task would keep the table off every board in
    silence: a one-line error names it, the yaml and the valid tasks."""
    from dpbench.runner.schema import ConfigError

    (toy_root / "conf" / "dataset" / "toy_heart.yaml").write_text(textwrap.dedent("""
        base: mpdp_heart
        label: Toy Heart
        arena: [query_relase]
    """))
    with pytest.raises(ConfigError, match=r"dataset 'toy_heart'.*unknown arena task "
                                          r"'query_relase' \(did you mean 'query_release'"):
        expand_cells(compose_config(["experiment=arena_synthetic", "profile=smoke"]))


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


# --- breadth (issue 60, item 1): the default profiles' tables and their public domains ----

#: the fewest tables each arena's default profile ranks on (issue 60: "at the default profile
#: >= 8 tables for synthetic data / query release, >= 6 for classification, >= 4 for
#: regression")
FLOORS = {"arena_synthetic": 8, "arena_classification": 6, "arena_regression": 4}


def default_tables(arena: str) -> dict[str, dict]:
    """Each table of ``arena``'s default grid and the dataset parameters of its cells."""
    specs, _ = expand_cells(compose_config([f"experiment={arena}", "profile=default"]))
    return {s.dataset: s.dataset_params for s in specs}


@pytest.mark.parametrize("arena", sorted(FLOORS))
def test_the_default_profile_ranks_on_the_issues_number_of_arena_tables(arena: str) -> None:
    from dpbench.runner.grid import arena_members

    tables = default_tables(arena)
    assert len(tables) >= FLOORS[arena], sorted(tables)
    # every one an arena member that serves the task, and on data shipped with dpbench
    assert set(tables) <= set(arena_members("dataset", ARENA_TASKS[arena]))
    assert not [d for d, p in tables.items() if "download" in p], tables


def _member_files() -> list[tuple[str, dict]]:
    """(table, dataset parameters) of every file-backed table of the three default profiles,
    one per data folder and parameters."""
    seen: dict[str, tuple[str, dict]] = {}
    for arena in sorted(FLOORS):
        for name, params in default_tables(arena).items():
            if "dataset_dir" in params:
                seen.setdefault(json.dumps(params, sort_keys=True), (name, params))
    return sorted(seen.values(), key=lambda t: t[0])


def _perturbed_copy(dataset_dir: str, root: Path) -> None:
    """``data/<dataset_dir>`` copied under ``root`` with every data row's codes set to 0
    (a table no domain computed from its rows could share with the original: each attribute
    would have one level), its MANIFEST's checksums rewritten to match."""
    import gzip
    import hashlib
    import io
    import shutil

    from dpbench.data.files import data_root, read_bytes

    src, dst = data_root() / dataset_dir, root / dataset_dir
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "MANIFEST.json").read_text())
    for name, entry in manifest["files"].items():
        if entry.get("rows") is None:           # the domain file (the schema): kept
            continue
        frame = pd.read_csv(io.BytesIO(read_bytes(src / name)))
        codes = [c for c in frame.columns if not c.startswith("Unnamed")]
        frame[codes] = 0
        raw = frame.to_csv(index=False).encode()
        (dst / name).write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
        entry["sha256_uncompressed"] = hashlib.sha256(raw).hexdigest()
    (dst / "MANIFEST.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(("table", "params"), _member_files(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_a_member_tables_domain_is_its_schemas_never_its_rows(
        table: str, params: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The public domain (and the bounds derived from it) of every file-backed table of the
    default arenas is read from its documented domain file: rows replaced by all-zero codes
    leave it unchanged."""
    from dpbench.runner.execute import import_object
    from dpbench.runner.grid import load_entry

    load = import_object(load_entry("dataset", table)["_target_"])
    real = load(rng=np.random.default_rng(0), **params).train
    _perturbed_copy(params["dataset_dir"], tmp_path)
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path))
    zeros = load(rng=np.random.default_rng(0), **params).train
    assert (zeros.discrete.to_numpy() == 0).all()           # the rows did change
    assert dict(zeros.domain) == dict(real.domain)
    assert min(real.domain.values()) >= 2                   # rows alone would give 1 level
    assert (zeros.x_bound, zeros.y_bound) == (real.x_bound, real.y_bound)


def test_the_board_states_each_table_run_at_fewer_epsilons_or_a_smaller_workload(
        tmp_path: Path) -> None:
    """The default synthetic-data board says which tables run at eps 1 only and on which
    workload, and lists a refused cell only at the epsilons its table runs at."""
    from omegaconf import OmegaConf

    from dpbench.report.leaderboard import boards_from_store, to_markdown
    from dpbench.runner.store import ResultStore

    cfg = compose_config(["experiment=arena_synthetic", "profile=default"])
    specs, refused = expand_cells(cfg)
    refused = [*refused, ("mpdp_dutch", "gem", "a refusal for the test")]
    experiment = OmegaConf.to_container(cfg.experiment, resolve=True)
    board = next(iter(boards_from_store(specs, ResultStore(tmp_path), experiment,
                                        profile="default", delta="1/n**2", trials="3",
                                        refused=refused).values()))
    stated = {line.split(":")[0]: line for line in board.header.reduced}
    added = {s.meta["dataset_label"] for s in specs if s.dataset != "qr_adult_reduced"}
    assert set(stated) == added and len(added) >= FLOORS["arena_synthetic"] - 1
    for line in stated.values():
        assert "epsilon 1 only (the grid: 0.1, 0.5, 1, 2)" in line
        assert "max_cells=n, number=64, seed=0" in line and "workload=all_3way" in line
    assert all(f"reduced at this profile (cost; docs/arena.md): {x}" in to_markdown(board)
               for x in board.header.reduced)
    dutch = {(t.epsilon, r.method) for t in board.tables if t.dataset == "mpdp_dutch"
             for r in t.rows if r.status == "refused"}
    assert dutch and {e for e, _ in dutch} == {1.0} and (1.0, "gem") in dutch


@pytest.mark.parametrize("task", sorted(set(ARENA_TASKS.values())))
def test_no_arena_holds_one_data_file_twice(task: str) -> None:
    """An arena's member tables (every profile's pool) are distinct data files, or distinct
    projections of one (the query-release paper's ADULT and ADULT (reduced)): Compas with
    and without public rows in one arena weighed Compas double in the mean ranks. A dataset
    yaml's ``arena: [<task>, ...]`` keeps it out of the other tasks' arenas."""
    from dpbench.runner.grid import arena_members, load_entry

    members = arena_members("dataset", task)
    files: dict[str, list[str]] = {}
    for name in members:
        params = load_entry("dataset", name).get("params") or {}
        if "dataset_dir" in params:
            where = f"{params['dataset_dir']}/{params.get('file')} {params.get('attributes')}"
            files.setdefault(where, []).append(name)
    assert not {f: n for f, n in files.items() if len(n) > 1}, files
    if task == "classification":
        assert "mpdp_compas_public" in members and "mpdp_compas" not in members
    if task == "query_release":
        assert "mpdp_compas" in members
