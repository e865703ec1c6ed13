"""A method that ran is in some table (issue 59, defect 5): a method the experiment's
figures do not show (added to a paper's line-up on the command line) gets figures and
tables of its own, ``other_methods[_<metric>]``; an experiment as written shows every
method in its own figures, so its folder gains nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import figure_folder, run_cli

from dpbench.report.build import OTHER_METHODS, unshown
from dpbench.runner.schema import choices
from dpbench.workspace import compose_config, figure_specs, grid, is_arena


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_every_experiments_figures_show_each_of_its_methods(profile: str) -> None:
    for name in choices("experiment"):
        if is_arena(name):
            continue
        cfg = compose_config([f"experiment={name}", f"profile={profile}"])
        methods = list(dict.fromkeys(s.method for s in grid(cfg)))
        assert unshown(methods, figure_specs(cfg)) == [], name


def test_a_method_added_to_the_line_up_gets_its_own_tables(tmp_path: Path) -> None:
    """The issue's grid: MWEM and PEP (qr_fig1, qr_fig3, qr_fig7 show them) and MST-Synth
    (none does), smoke profile, 1 trial per cell."""
    grid_args = ["experiment=qr_adult_reduced", "profile=smoke",
                 "methods=[mwem,pep,{mst_synth:{model:none}}]"]
    results = f"results_dir={tmp_path}"
    run_cli("run", *grid_args, results, "runner.progress=false", check=True)
    proc = run_cli("figures", *grid_args, results, check=True)
    assert "mst_synth[model=none] in none of the experiment's figures" in proc.stderr
    folder = figure_folder(*grid_args, results)
    tables = sorted(folder.glob(f"{OTHER_METHODS}_*.md"))
    assert [p.stem for p in tables] == [f"{OTHER_METHODS}_{m}" for m in
                                        ("max_error", "mean_error", "rmse")]
    for table in tables:
        rows = [ln for ln in table.read_text().splitlines() if ln.startswith("| ")][1:]
        assert [r.split(" | ")[0] for r in rows] == ["| MST-Synth (model=none)"], rows
        assert (folder / f"{table.stem}.png").is_file()
