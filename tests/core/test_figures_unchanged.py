"""``dpbench figures`` draws a folder again only when something it is built from changed
(report.fingerprint): a second call leaves every file as it was and says so; a changed
trial record, a changed figure yaml or a deleted ``.fingerprint`` draws it again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_cli

GRID = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp]",
        "runner.progress=false"]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("drawn") / "results"
    run_cli("run", *GRID, f"results_dir={results}", check=True)
    run_cli("figures", *GRID, f"results_dir={results}", check=True)
    return results


def stamps(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.is_file()}


def figures(results: Path) -> str:
    return run_cli("figures", *GRID, f"results_dir={results}", check=True).stdout


def folder_of(results: Path) -> Path:
    (folder,) = (results / "figures").iterdir()
    return folder


def test_unchanged_figures_are_not_drawn_again(drawn: Path) -> None:
    before = stamps(folder_of(drawn))
    said = figures(drawn)
    assert "not drawn again" in said and "mse_vs_eps.png" in said, said
    assert stamps(folder_of(drawn)) == before


def test_a_changed_record_or_a_deleted_fingerprint_draws_them_again(drawn: Path) -> None:
    folder = folder_of(drawn)
    record = next((drawn / "store" / "trials").rglob("*.json"))
    os.utime(record, ns=(record.stat().st_atime_ns, record.stat().st_mtime_ns + 10**9))
    before = stamps(folder)
    said = figures(drawn)
    assert "not drawn again" not in said, said
    assert stamps(folder)["mse_vs_eps.png"] != before["mse_vs_eps.png"]
    assert "not drawn again" in figures(drawn)
    (folder / ".fingerprint").unlink()
    assert "not drawn again" not in figures(drawn)


def test_the_site_copies_an_unchanged_figure_folder(drawn: Path) -> None:
    """A site page whose figure folder is current copies its files (same bytes, same
    modification time: copied, not drawn again)."""
    figures(drawn)                                      # current at this commit
    run_cli("site", *GRID, f"results_dir={drawn}", check=True)
    folder = folder_of(drawn)
    page = drawn / "site" / "linreg_adult-smoke"       # the page of the (experiment, profile) run
    for name in ("mse_vs_eps.png", "mse_vs_eps.pdf", "claims.json"):
        assert (page / name).read_bytes() == (folder / name).read_bytes(), name
        assert (page / name).stat().st_mtime_ns == (folder / name).stat().st_mtime_ns, name


def test_the_worker_count_redraws_nothing(drawn: Path) -> None:
    """Issue 59, defect 4: ``runner.*`` (workers, progress bar) changes no figure, so
    neither a figure folder nor a site page is drawn again for ``runner.n_jobs=1``."""
    figures(drawn)
    before = stamps(folder_of(drawn))
    said = run_cli("figures", *GRID, "runner.n_jobs=1", f"results_dir={drawn}",
                   check=True).stdout
    assert "not drawn again" in said, said
    assert stamps(folder_of(drawn)) == before
    run_cli("site", *GRID, f"results_dir={drawn}", check=True)
    said = run_cli("site", *GRID, "runner.n_jobs=1", f"results_dir={drawn}", check=True).stdout
    assert ", 0 rebuilt," in said, said
