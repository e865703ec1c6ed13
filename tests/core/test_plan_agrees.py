"""``plan`` and ``run`` agree (issue 59, defects 2 and 7): a cell the run refuses is refused
by the plan in the same line, before any work; a dataset the user has not downloaded yet
leaves the plan's sizing intact and says the data checks were not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpbench.entry import main
from dpbench.runner.store import ResultStore

E = "experiment=linreg_adult"


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err.strip()


def test_plan_refuses_the_cell_run_refuses(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """mwem on Adult: a full-domain histogram of 15 attributes (domain too large)."""
    grid = [E, "profile=smoke", "methods=[ddssp,jlt,mwem]", f"results_dir={tmp_path}",
            "runner.progress=false"]
    plan_code, plan_err = _error(capsys, "plan", *grid)
    run_code, run_err = _error(capsys, "run", *grid)
    assert (plan_code, run_code) == (2, 2)
    assert "method 'mwem' on dataset 'adult'" in run_err and "max_cells" in run_err
    assert plan_err == run_err
    assert not ResultStore(tmp_path / "store").keys()        # nothing ran, nothing stored


def test_plan_sizes_a_grid_whose_data_is_not_downloaded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fire is downloaded by the user (not here): plan still prices it, and says which data
    checks it could not run; ``run`` refuses with the download line."""
    grid = ["experiment=linreg_fire", "profile=smoke", f"results_dir={tmp_path}"]
    assert main(["plan", *grid]) == 0
    out = capsys.readouterr().out
    assert "trials" in out and "cost:" in out
    assert "data checks not run" in out and "'fire'" in out


def test_plan_checks_the_data_again_only_when_the_grid_or_data_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A grid that passed ``run``'s checks is kept as passed (``runner/refusals.py``): the
    next plan loads no dataset; another grid is checked again and refused as ``run`` is."""
    from dpbench import workspace

    calls: list[int] = []
    real = workspace.preflight

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(workspace, "preflight", counted)
    grid = [E, "profile=smoke", f"results_dir={tmp_path}", "runner.progress=false"]
    assert main(["plan", *grid]) == 0
    assert main(["plan", *grid]) == 0
    assert calls == [1]
    capsys.readouterr()
    code, err = _error(capsys, "plan", *grid, "methods=[ddssp,jlt,mwem]")
    assert code == 2 and "method 'mwem' on dataset 'adult'" in err and calls == [1, 1]
