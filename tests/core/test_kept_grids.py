"""A warm ``dpbench site`` composes and expands no grid again (issue 59, site warm <= 3 s): the
site keeps each grid it composed and expanded in ``<site>/.grids/`` (sealed, with the digest
of what it came from: the overrides, dpbench's code, the conf and data files' stat), takes it
back while that digest holds, and composes afresh when it changed or the file is damaged.
Hydra's compose is counted through ``workspace.compose_config``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import stored_runs

# the command modules first: one imported while a test replaces a workspace function would
# keep the replacement (``from dpbench.workspace import ...``) for every later test
import dpbench.cli  # noqa: F401
import dpbench.site.command  # noqa: F401
from dpbench import workspace
from dpbench.entry import main

GRID = ["experiment=exrisk_fig1", "profile=smoke"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored_runs(tmp_path_factory, "kept", GRID)


@pytest.fixture()
def results(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> Path:
    """A copy of the store with its site built (and its grid kept) once."""
    out = tmp_path / "results"
    shutil.copytree(built, out)
    composed, said = site(out, monkeypatch, capsys)
    assert composed == 2 and said.endswith("1 page(s), 1 rebuilt, 0 unchanged"), said
    monkeypatch.undo()
    return out


def site(results: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``dpbench site`` in this process: how many configs it composed, and its last line."""
    calls: list[int] = []
    real = workspace.compose_config

    def counted(overrides: list[str]) -> object:
        calls.append(1)
        return real(overrides)

    monkeypatch.setattr(workspace, "compose_config", counted)
    assert main(["site", f"results_dir={results}", "runner.progress=false"]) == 0
    return len(calls), capsys.readouterr().out.strip().splitlines()[-1]


def test_a_warm_site_composes_no_grid(results: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert len(list((results / "site" / ".grids").glob("*.grid"))) == 1
    composed, said = site(results, monkeypatch, capsys)
    assert composed == 1, composed                    # the command's own config only
    assert said.endswith("1 page(s), 0 rebuilt, 1 unchanged"), said


def test_a_changed_input_or_a_damaged_file_composes_again(
        results: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (kept,) = (results / "site" / ".grids").glob("*.grid")
    kept.write_bytes(kept.read_bytes()[:-10] + b"0123456789")       # damaged: seal fails
    composed, said = site(results, monkeypatch, capsys)
    assert composed == 2 and said.endswith("0 rebuilt, 1 unchanged"), (composed, said)
    assert site(results, monkeypatch, capsys)[0] == 1                # kept again
    monkeypatch.setattr(workspace, "tree_state", lambda: "a conf file changed")
    assert site(results, monkeypatch, capsys)[0] == 2


def test_the_inputs_cover_the_conf_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    conf = tmp_path / "root" / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("a: 1\n")
    monkeypatch.setenv("DPBENCH_PATH", str(tmp_path / "root"))
    before = workspace.tree_state()
    assert workspace.tree_state() == before
    (conf / "mine.yaml").write_text("a: 22\n")
    assert workspace.tree_state() != before
    data = tmp_path / "table.csv"
    data.write_text("x\n1\n")
    named = workspace.grid_inputs([f"data={data}"], before)
    data.write_text("x\n1\n2\n")
    assert workspace.grid_inputs([f"data={data}"], before) != named


def test_a_composed_config_is_kept_until_a_conf_file_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``compose_config`` keeps Hydra's compose in ``<cache>/configs`` (issue 59, plan <= 1 s):
    the same overrides compose once; a conf file of the same size rewritten, or a damaged
    file, composes again; the experiment's profile block is applied to each copy afresh."""
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "root" / "conf" / "experiment"
    root.mkdir(parents=True)
    mine = root / "mine_kept.yaml"
    mine.write_text("# @package _global_\ndefaults: [/experiment/ddssp/linreg_adult]\n"
                    "experiment: {name: mine_kept}\ntrials: 3\n")
    monkeypatch.setenv("DPBENCH_PATH", str(tmp_path / "root"))
    calls: list[int] = []
    real = workspace.hydra_compose
    monkeypatch.setattr(workspace, "hydra_compose",
                        lambda ov: calls.append(1) or real(ov))
    overrides = ["experiment=mine_kept", "profile=smoke"]
    first = workspace.compose_config(overrides)
    first.trials = 99                                    # a caller's change stays its own
    again = workspace.compose_config(overrides)
    assert len(calls) == 1 and again.trials == 3 and again.profile.name == "smoke"
    mine.write_text(mine.read_text().replace("trials: 3", "trials: 4"))   # same size
    assert workspace.compose_config(overrides).trials == 4 and len(calls) == 2
    (kept,) = (tmp_path / "cache" / "configs").glob("*.cfg")
    kept.write_bytes(kept.read_bytes()[:-4] + b"oops")                    # seal fails
    assert workspace.compose_config(overrides).trials == 4 and len(calls) == 3
    assert workspace.compose_config(overrides).trials == 4 and len(calls) == 3
