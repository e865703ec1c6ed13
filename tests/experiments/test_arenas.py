"""Each arena runs end to end on its smoke profile (narrowed to cheap methods) and
``dpbench leaderboard`` writes its board: every method of the grid is on it, the refused
cells with their reasons, and the numbers equal a recomputation from the stored trials.

The narrowed method lists keep one method per kind of cell an arena holds: a native
add/remove method (converted to replace-one by group privacy: SSP, ObjPert), one running its
own replace-one analysis (MST-Synth, the independent baseline), a native replace-one
method, a generator scored through its records, a baseline, the non-private reference and
a method the data refuse (the full-domain histogram of MWEM).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import smoke_results

from dpbench.entry import main
from dpbench.roots import REPO
from dpbench.runner.schema import choices
from dpbench.runner.store import OK, ResultStore
from dpbench.workspace import arena_grid, compose_config, is_arena

ARENAS = [e for e in choices("experiment") if is_arena(e)]
NARROW = {
    "arena_regression": "methods=[ssp,binagg_sqrtd,mst_synth,mwem,mean,independent,original]",
    "arena_classification": "methods=[objpert,mst_synth,mwem,pate_public,majority,uniform,"
                            "nondp_logistic]",
    "arena_synthetic": "methods=[mst_synth,mwem,uniform,independent,original,"
                       "{original:{fraction:[0.1]}}]",
}


def test_three_arenas_exist_and_each_is_narrowed() -> None:
    assert set(ARENAS) == set(NARROW)


@pytest.mark.slow
@pytest.mark.parametrize("arena", ARENAS)
def test_arena_runs_and_its_board_matches_the_store(arena: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    results = smoke_results(tmp_path)
    common = [f"experiment={arena}", "profile=smoke", f"results_dir={results}", NARROW[arena]]
    assert main(["run", *common, "runner.progress=false", "runner.n_jobs=1"]) == 0
    run_out = capsys.readouterr().out
    specs, refused = arena_grid(compose_config(common))
    store = ResultStore(results / "store")
    assert all(store.status(s.key) == OK for s in specs)      # every runnable cell ran
    assert all(f"{r.method} on {r.dataset}" in run_out for r in refused)
    assert refused or arena == "arena_synthetic"   # MWEM fits ADULT (reduced)
    assert main(["leaderboard", *common]) == 0
    # a narrowed grid is ad hoc: its board goes to its own folder
    (folder,) = (results / "leaderboard").glob(f"{arena}-smoke-custom-*")
    board = json.loads((folder / "board.json").read_text())
    assert board["header"]["relation"] == "replace_one"
    rows = [(t, r) for t in board["tables"] for r in t["rows"]]
    on_board = {r["method"] for _, r in rows}
    assert {s.method for s in specs} | {r.method for r in refused} <= on_board
    for r in refused:
        row = next(r2 for t, r2 in rows if r2["method"] == r.method
                   and t["dataset"] == r.dataset)
        assert row["status"] == "refused" and r.reason in row["note"]
    # the board's means are the stored trials' means
    metric = board["header"]["metric"]
    for t, row in rows:
        if row["mean"] is None:
            continue
        values = [store.get(s.key)["metrics"][metric] for s in specs
                  if s.method == row["method"] and s.dataset == t["dataset"]
                  and s.epsilon == t["epsilon"]]
        assert row["mean"] == pytest.approx(float(np.mean(values)), rel=1e-12)
    if arena == "arena_synthetic":    # calibrated against the reference on 10% of the rows
        assert all(r["as_good_as_text"] for _, r in rows
                   if r["mean"] is not None and r["role"] != "reference"), rows
    # converted cells state the arena's relation and a guarantee within the cell
    for s in specs:
        p = store.get(s.key)["privacy"]
        if s.relation is not None:
            assert p["relation"] == "replace_one" and p["relation_epsilon"] <= \
                p["cell_epsilon"] * (1 + 1e-9)
        elif p["private"]:
            assert p["neighbours"] == "replace_one"


def test_figures_of_an_arena_point_to_the_leaderboard(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["figures", "experiment=arena_synthetic", "profile=smoke",
                 f"results_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dpbench leaderboard experiment=arena_synthetic" in err


def test_a_dataset_not_downloaded_is_a_refused_cell_not_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpbench.data import discrete, files, uci

    # an arena member that is a download: Fire's yaml, joined to the arenas from an extra
    # root (Fire itself is not a member: its levels come from its rows)
    fire_yaml = (REPO / "conf/dataset/remote/fire.yaml").read_text()
    extra = tmp_path / "root" / "conf" / "dataset" / "downloads"
    extra.mkdir(parents=True)
    (extra / "fire_member.yaml").write_text(fire_yaml.replace("arena: false", "arena: true"))
    monkeypatch.setenv("DPBENCH_PATH", str(tmp_path / "root"))
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path / "no-downloads"))
    for fn in (discrete._read_discrete, files._verified, uci.read_table):
        fn.cache_clear()
    specs, refused = arena_grid(compose_config(["experiment=arena_regression",
                                                "profile=paper"]))
    fire = [r for r in refused if r.dataset == "fire_member"]
    assert fire and all("not vendored" in r.reason or "needs data with" in r.reason
                        for r in fire)
    assert any("not vendored" in r.reason for r in fire)
    assert not any(s.dataset in ("fire", "fire_member") for s in specs) and specs
