"""The run stores what readers need (issue 59, "read once"): an arena run writes the cells it
refuses, with their reasons, into the store (``runner/refusals.py``), and ``status``,
``leaderboard`` and the site's arena pages read them back instead of loading every dataset
again, while they are current; ``leaderboard`` keeps a fingerprint beside its board, and a
site page copies a current board instead of computing it again.

Each reader runs in this process with :func:`dpbench.workspace.preflight` (the dataset
loads and method checks) or the board's computation replaced by a function that fails, so
a reader that loads a dataset or recomputes a board fails the test."""

from __future__ import annotations

import json
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
from dpbench.runner import refusals
from dpbench.runner.store import ResultStore, parse_record

#: an arena grid with a cell the grid refuses (MWEM on continuous data) and one the data
#: refuse (MWEM's full-domain histogram of adult)
ARENA = ["experiment=arena_regression", "profile=smoke", "methods=[mean,ssp,mwem]"]
DATA_REASON = "full-domain histogram"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored_runs(tmp_path_factory, "refusals", ARENA)


@pytest.fixture()
def results(stored: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results"
    shutil.copytree(stored, out)
    return out


def refusal_file(results: Path) -> Path:
    (path,) = (results / "store" / "refusals").glob("arena_regression@smoke*.json")
    return path


def counting(monkeypatch: pytest.MonkeyPatch, name: str, fail: bool = False) -> list[int]:
    """Count the calls of ``workspace.<name>`` (``fail``: make each one fail)."""
    calls: list[int] = []
    real = getattr(workspace, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if fail:
            raise AssertionError(f"workspace.{name} was called")
        return real(*args, **kwargs)

    monkeypatch.setattr(workspace, name, counted)
    return calls


def no_data(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make loading the data (and checking the methods against it) fail."""
    return counting(monkeypatch, "preflight", fail=True)


def board_reasons(results: Path) -> dict[tuple[str, str], str]:
    (board,) = (results / "leaderboard").glob("arena_regression-smoke*/board.json")
    rows = [r for t in json.loads(board.read_text())["tables"] for r in t["rows"]]
    return {(r["dataset"], r["method"]): r["note"] for r in rows if r["status"] == "refused"}


def test_the_run_stores_its_refusals_outside_the_trial_records(stored: Path) -> None:
    record = json.loads(refusal_file(stored).read_text())
    assert record["schema"] == refusals.SCHEMA
    assert (record["experiment"], record["profile"]) == ("arena_regression", "smoke")
    by = {(r["dataset"], r["method"]): r["by"] for r in record["refused"]}
    assert by == {("synthetic_linear", "mwem"): "grid", ("adult", "mwem"): "data"}
    assert DATA_REASON in next(r["reason"] for r in record["refused"] if r["by"] == "data")
    assert len(record["fingerprint"]) == 64
    # no reader of trial records sees it: not a key, not a record, refused as one
    store = ResultStore(stored / "store")
    assert store.keys() and not any(k.startswith("arena_regression") for k in store.keys())
    assert all("schema" not in r for r in store.records())
    assert isinstance(parse_record(refusal_file(stored).read_bytes(), "x"), str)


def test_readers_take_the_stored_refusals_without_loading_data(
        results: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    calls = no_data(monkeypatch)
    common = [*ARENA, f"results_dir={results}", "runner.progress=false", "runner.n_jobs=1"]
    assert main(["status", *common]) == 0
    assert "total: ok 8, failed 0, pending 0" in capsys.readouterr().out
    assert main(["leaderboard", *common]) == 0
    reasons = board_reasons(results)
    assert set(reasons) == {("synthetic_linear", "mwem"), ("adult", "mwem")}
    assert DATA_REASON in reasons[("adult", "mwem")]
    assert main(["site", *common]) == 0
    page = (results / "site" / "arena_regression-smoke" / "index.html").read_text()
    assert DATA_REASON in page
    assert not calls


def test_a_current_stored_refusal_is_what_readers_show(
        results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = refusal_file(results)
    record = json.loads(path.read_text())
    for r in record["refused"]:
        if r["by"] == "data":
            r["reason"] = "as the run stored it"
    path.write_text(json.dumps(record))
    no_data(monkeypatch)
    assert main(["leaderboard", *ARENA, f"results_dir={results}"]) == 0
    assert "as the run stored it" in board_reasons(results)[("adult", "mwem")]


def test_a_stale_stored_refusal_is_ignored(results: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    path = refusal_file(results)
    record = json.loads(path.read_text())
    for r in record["refused"]:
        r["reason"] = "as the run stored it"
    record["fingerprint"] = "0" * 64          # decided by other code, data or settings
    path.write_text(json.dumps(record))
    calls = counting(monkeypatch, "preflight")
    assert main(["leaderboard", *ARENA, f"results_dir={results}"]) == 0
    assert calls
    reasons = board_reasons(results)
    assert DATA_REASON in reasons[("adult", "mwem")]
    assert "as the run stored it" not in "".join(reasons.values())


def test_the_fingerprint_covers_the_data_files(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = workspace.compose_config(ARENA)
    specs, by_grid = workspace.arena_grid(cfg, data=False)
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path))
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    before = refusals.fingerprint(specs, by_grid)
    assert refusals.fingerprint(specs, by_grid) == before
    (tmp_path / "table.csv").write_text("a,b\n1,2\n3,4\n")
    assert refusals.fingerprint(specs, by_grid) != before
    assert refusals.fingerprint(specs[:-2], by_grid) != before
    assert refusals.fingerprint(specs, by_grid[:-1]) != before


def test_an_arena_page_copies_a_current_board(results: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    common = [*ARENA, f"results_dir={results}", "runner.progress=false", "runner.n_jobs=1"]
    assert main(["leaderboard", *common]) == 0
    (board,) = (results / "leaderboard").glob("arena_regression-smoke*/board.json")
    written = board.read_bytes()

    counting(monkeypatch, "arena_boards", fail=True)
    no_data(monkeypatch)
    assert main(["leaderboard", *common]) == 0          # unchanged: not written again
    assert "not written again" in capsys.readouterr().out
    assert main(["site", *common]) == 0
    page = results / "site" / "arena_regression-smoke"
    assert (page / "board.json").read_bytes() == written == board.read_bytes()
    assert (page / "pareto-adult.png").read_bytes() == \
        (board.parent / "pareto-adult.png").read_bytes()
    assert "mwem" in (page / "index.html").read_text().lower()


def test_a_stale_board_is_computed_again(results: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    common = [*ARENA, f"results_dir={results}", "runner.progress=false", "runner.n_jobs=1"]
    assert main(["leaderboard", *common]) == 0
    (board,) = (results / "leaderboard").glob("arena_regression-smoke*/board.json")
    assert (board.parent / ".fingerprint").is_file()
    board.write_text(board.read_text().replace('"mean"', '"stale"'))
    store = ResultStore(results / "store")
    key = store.keys()[0]                                   # a trial record rewritten
    store.put(json.loads(store.path(key).read_text()))
    calls = counting(monkeypatch, "arena_boards")
    assert main(["site", *common]) == 0
    assert calls == [1]
    page = results / "site" / "arena_regression-smoke"
    assert '"stale"' not in (page / "board.json").read_text()
    capsys.readouterr()
    assert main(["leaderboard", *common]) == 0
    assert calls == [1, 1] and "not written again" not in capsys.readouterr().out
    assert '"stale"' not in board.read_text()


def test_a_reader_that_found_the_refusals_stores_them(results: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A store without refusals (a clean clone's, reading the shipped results): the first
    reader loads the data, as the run did, and keeps what it found; the next one does not."""
    path = refusal_file(results)
    written = json.loads(path.read_text())
    path.unlink()
    calls = counting(monkeypatch, "preflight")
    common = [*ARENA, f"results_dir={results}", "runner.progress=false", "runner.n_jobs=1"]
    assert main(["status", *common]) == 0
    assert calls == [1]
    again = json.loads(refusal_file(results).read_text())
    assert again["fingerprint"] == written["fingerprint"]
    assert again["refused"] == written["refused"]
    monkeypatch.undo()
    no_data(monkeypatch)
    assert main(["leaderboard", *common]) == 0
    assert DATA_REASON in board_reasons(results)[("adult", "mwem")]


def test_boards_drawn_by_one_or_two_workers_are_the_same_files(
        results: Path, tmp_path: Path) -> None:
    """``leaderboard`` draws each metric's board in a worker process
    (``workspace.draw_boards``): the files do not depend on how many."""
    other = tmp_path / "other"
    shutil.copytree(results, other)
    for folder, workers in ((results, 1), (other, 2)):
        assert main(["leaderboard", *ARENA, f"results_dir={folder}", "runner.progress=false",
                     f"runner.n_jobs={workers}"]) == 0
    one = sorted(p.relative_to(results) for p in (results / "leaderboard").rglob("*")
                 if p.is_file() and ".grids" not in p.parts)
    two = sorted(p.relative_to(other) for p in (other / "leaderboard").rglob("*")
                 if p.is_file() and ".grids" not in p.parts)
    assert one == two and len([p for p in one if p.suffix == ".png"]) >= 2
    for rel in one:
        if rel.name != ".fingerprint":
            assert (results / rel).read_bytes() == (other / rel).read_bytes(), rel


def test_a_rebuilt_board_deletes_the_plots_it_no_longer_draws(results: Path) -> None:
    """A plot left by an older board (the eps-0.1 and eps-0.5 diagrams once shared the name
    ``critical_difference-0.png``) is deleted when the board is written again; the plots the
    new board lists stay."""
    common = [*ARENA, f"results_dir={results}", "runner.progress=false", "runner.n_jobs=1"]
    assert main(["leaderboard", *common]) == 0
    (folder,) = (results / "leaderboard").glob("arena_regression-smoke*")   # ad hoc: -custom-
    listed = set((folder / workspace.OUTPUTS_FILE).read_text().split())
    stale = folder / "critical_difference-0.png"
    stale.write_bytes(b"an older board's plot")
    (folder / workspace.FINGERPRINT_FILE).unlink()          # as if its inputs changed
    assert main(["leaderboard", *common]) == 0
    assert not stale.exists()
    assert all((folder / name).is_file() for name in listed)
    assert {p.name for p in folder.glob("*.png")} <= listed
