"""The reference results end to end on a fixture reference (exrisk_fig1's default grid, five
trials of a second of CPU): ``scripts/build_reference.py`` builds it from a store; with it
behind an empty store ``status`` finds the grid done, ``run`` runs nothing and ``site``
shows the page; ``compare`` finds nothing to compare before a local run, agreement bit for
bit after one, and names the cell of a planted change (exit 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli, stored_records

EXP = "experiment=exrisk_fig1"


@pytest.fixture(scope="module")
def fixture_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ref")
    run_cli("run", EXP, f"results_dir={root / 'published'}", "runner.n_jobs=1", check=True)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_reference.py"),
                           "exrisk_fig1", "--out", str(root / "reference"),
                           f"results_dir={root / 'published'}"],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={"DPBENCH_REFERENCE": "off", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "exrisk_fig1 (default): 5 of 5 trials" in proc.stdout, proc.stdout
    return root / "reference"


def test_a_build_of_another_grid_keeps_the_first(fixture_reference: Path,
                                                 tmp_path: Path) -> None:
    """Building one grid into a reference never drops another grid's trials (a grid run at
    another sitting or on another machine), and the manifest still counts both."""
    out = tmp_path / "reference"
    shutil.copytree(fixture_reference, out)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_reference.py"),
                           "exrisk_holdout", "--out", str(out),
                           f"results_dir={tmp_path / 'empty'}"],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={"DPBENCH_REFERENCE": "off", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "exrisk_fig1 (default): 5 of 5 trials" in proc.stdout, proc.stdout
    assert "0 stale trial(s)" in proc.stdout, proc.stdout
    grids = json.loads((out / "MANIFEST.json").read_text())["grids"]
    assert grids["exrisk_fig1@default"] == {"held": 5, "asked": 5}, grids
    assert grids["exrisk_holdout@default"]["held"] == 0, grids
    # two pages, built by two worker processes: each reads the reference too
    site = tmp_path / "site"
    run_cli("site", f"results_dir={site}", "runner.n_jobs=2", "runner.progress=false",
            env={"DPBENCH_REFERENCE": str(out)}, check=True)
    page = json.loads((site / "site" / "exrisk_fig1-default" / "page.json").read_text())
    assert page["trials_ok"] == 5, page["trials_ok"]


def test_an_empty_store_reads_the_reference(fixture_reference: Path, tmp_path: Path) -> None:
    env = {"DPBENCH_REFERENCE": str(fixture_reference)}
    # nothing run here at all: the site shows the grids the reference publishes
    bare = tmp_path / "bare"
    run_cli("site", f"results_dir={bare}", env=env, check=True)
    assert json.loads((bare / "site" / "exrisk_fig1-default" / "page.json").read_text())[
        "trials_ok"] == 5
    out = tmp_path / "fresh"
    status = run_cli("status", EXP, f"results_dir={out}", env=env, check=True).stdout
    assert "total: ok 5, failed 0, pending 0" in status, status
    # figures: drawn from the reference alone (an empty local store drew nothing before)
    figures = run_cli("figures", EXP, f"results_dir={out}", env=env, check=True).stdout
    assert "built from stored results (experiment: profiles): exrisk_fig1: default" in figures, \
        figures
    assert any((out / "figures").rglob("*.png")), figures
    run = run_cli("run", EXP, f"results_dir={out}", "runner.n_jobs=1", env=env, check=True)
    assert not stored_records(out), run.stdout          # nothing ran: the reference holds it
    run_cli("site", f"results_dir={out}", env=env, check=True)
    page = json.loads((out / "site" / "exrisk_fig1-default" / "page.json").read_text())
    assert page["trials_ok"] == 5
    assert any(o.startswith("reference, ") for o in page["provenance"]["origins"]), page
    # reference=false: this machine's store only
    alone = run_cli("status", EXP, f"results_dir={out}", "reference=false", env=env).stdout
    assert "total: ok 0, failed 0, pending 5" in alone, alone


def test_compare_agrees_after_a_rerun_and_names_a_planted_change(
        fixture_reference: Path, tmp_path: Path) -> None:
    env = {"DPBENCH_REFERENCE": str(fixture_reference)}
    mine = tmp_path / "mine"
    first = run_cli("compare", EXP, f"results_dir={mine}", env=env)
    assert first.returncode == 0 and "nothing to compare" in first.stdout, first.stdout
    run_cli("run", EXP, f"results_dir={mine}", "reference=false", "runner.n_jobs=1",
            env=env, check=True)
    agree = run_cli("compare", EXP, f"results_dir={mine}", env=env)
    assert agree.returncode == 0, agree.stdout + agree.stderr
    assert "exrisk_fig1: agrees" in agree.stdout and "bit-identical" in agree.stdout
    # plant a change in one stored trial: its cell is named, exit 1
    path = next((mine / "store" / "trials").glob("*/*.json"))
    rec = json.loads(path.read_text())
    metric = "max_abs_error"                   # the approximation task's (not coef_*)
    rec["metrics"][metric] = rec["metrics"][metric] * 1.5 + 1.0
    path.write_text(json.dumps(rec))
    differs = run_cli("compare", EXP, f"results_dir={mine}", env=env)
    assert differs.returncode == 1 and "exrisk_fig1: differs" in differs.stdout, differs.stdout
    assert "not bit-identical" in differs.stdout


def test_a_grid_naming_reference_metrics_ships_its_trials_compacted(tmp_path: Path) -> None:
    """binagg_sim declares ``reference_metrics`` (its figures read est_error; the
    per-coefficient metrics would take its 11,400 trials over the cap): the build ships its
    trials with those metrics only, says so per trial and in the manifest, and its figures
    still draw from the reference alone."""
    grid = ["experiment=binagg_sim", "profile=smoke", "methods=[binagg_sim]", "trials=1"]
    run_cli("run", *grid, f"results_dir={tmp_path / 'published'}", "runner.n_jobs=1",
            env={"DPBENCH_REFERENCE": "off"}, check=True)
    whole = list(stored_records(tmp_path / "published").values())
    assert whole and all("bias_0" in r["metrics"] for r in whole)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_reference.py"),
                           "binagg_sim", "--profile", "smoke", "--out",
                           str(tmp_path / "reference"), f"results_dir={tmp_path / 'published'}",
                           "methods=[binagg_sim]", "trials=1"],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={"DPBENCH_REFERENCE": "off", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "reference" / "MANIFEST.json").read_text())
    assert manifest["grids"]["binagg_sim@smoke"] == {
        "held": len(whole), "asked": len(whole), "metrics": ["est_error", "relmse"]}
    from dpbench.runner.reference import Reference

    shipped = Reference(tmp_path / "reference")
    for r in whole:
        got = shipped.get(r["key"])
        assert got["metrics"] == {k: r["metrics"][k] for k in ("est_error", "relmse")}
        assert got["metrics_kept"] == ["est_error", "relmse"]
        assert got["privacy"] == r["privacy"] and got["commit"] == r["commit"]
    figures = run_cli("figures", *grid, f"results_dir={tmp_path / 'fresh'}",
                      env={"DPBENCH_REFERENCE": str(tmp_path / "reference")}, check=True)
    assert "binagg_sim: smoke" in figures.stdout, figures.stdout
    assert any((tmp_path / "fresh" / "figures").rglob("*.png")), figures.stdout


def test_compare_without_a_reference_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("compare", EXP, f"results_dir={tmp_path}",
                   env={"DPBENCH_REFERENCE": str(tmp_path / "none")})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "no reference results to compare with" in proc.stderr


def test_an_arenas_asked_trials_leave_out_its_refused_cells(tmp_path: Path) -> None:
    """The manifest's ``asked`` of an arena grid counts the trials its board can hold: a
    cell the arena refuses (listed on the board, e.g. PATE on a table without public rows)
    is not asked for."""
    from dpbench.workspace import arena_grid, compose_config, grid

    cfg = compose_config(["experiment=arena_classification", "profile=smoke",
                          f"results_dir={tmp_path / 'empty'}"])
    runnable, refused = arena_grid(cfg)
    assert refused and len(runnable) < len(grid(cfg))
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_reference.py"),
                           "arena_classification", "--profile", "smoke",
                           "--out", str(tmp_path / "reference"),
                           f"results_dir={tmp_path / 'empty'}"],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={"DPBENCH_REFERENCE": "off", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    grids = json.loads((tmp_path / "reference" / "MANIFEST.json").read_text())["grids"]
    assert grids["arena_classification@smoke"] == {"held": 0, "asked": len(runnable)}, grids
