"""Each trial record is read once per command (issue 59, "read once"): ``plan``, ``status``,
``figures``, ``leaderboard`` and ``site`` ask many questions of one trial (its status, its
seconds, its row of the frame, its board cell), and the store answers all of them from one
read of its file (``ResultStore.read`` remembers a parsed record with its file's identity).
Counted by the store's own counter of file reads, in this process (the site with one
worker), on a store holding a paper grid and an arena grid. The cells the arena's run
refused are stored beside the records (``<store>/refusals/``, runner/refusals.py): an arena
reader reads that file once, and no reader takes it for a trial record or a record for it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import stored_runs

from dpbench.entry import main
from dpbench.runner import store as store_module

PAPER = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp]"]
ARENA = ["experiment=arena_regression", "profile=smoke", "methods=[mean,ssp]"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored_runs(tmp_path_factory, "read_once", PAPER, ARENA)


@pytest.mark.parametrize("argv", [["plan", *PAPER], ["status", *PAPER], ["figures", *PAPER],
                                  ["leaderboard", *ARENA], ["status", *ARENA],
                                  ["site", "runner.n_jobs=1"]],
                         ids=lambda a: f"{a[0]}-{a[1].partition('=')[2] or 'all'}")
def test_a_command_reads_each_record_once(stored: Path, tmp_path: Path, argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    shutil.copytree(stored, results)
    store_module._READ.clear()                 # a new command: nothing remembered
    store_module.FILE_READS.clear()
    assert main([*argv, f"results_dir={results}", "runner.progress=false"]) == 0
    capsys.readouterr()
    reads = store_module.FILE_READS
    assert reads, "the command read no record"
    assert max(reads.values()) == 1, reads.most_common(3)
    store = results / "store"
    trials = {p for p in reads if Path(p).parent.parent == store / "trials"}
    refusals = {p for p in reads if Path(p).parent == store / "refusals"}
    assert trials and trials | refusals == set(reads), sorted(set(reads) - trials - refusals)
    assert all(Path(p).stem in store_module.ResultStore(store).keys() for p in trials)
    if argv[1] == ARENA[0]:              # an arena's reader: its run's refusals, read once
        assert [Path(p).name.partition("@")[0] for p in refusals] == ["arena_regression"]
