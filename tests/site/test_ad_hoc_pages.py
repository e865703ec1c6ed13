"""Ad-hoc runs on the site (issue 61, item 6): a grid changed on the command line
(here ``methods=[bern_1,bern_4]``) gets its own page, marked "ad hoc" with the overrides
that made it, beside the experiment as written, and its trials are in the site's data
files; the run note keeps the overrides, not where or how the grid ran."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from conftest import run_cli

from dpbench.runner.store import ResultStore
from dpbench.workspace import grid_overrides

EXP = "experiment=exrisk_fig1"


def test_grid_overrides_keep_what_shapes_the_grid() -> None:
    assert grid_overrides(["experiment=x", "profile=smoke", "results_dir=/r", "runner.n_jobs=1",
                           "+runner.progress=false", "reference=false", "trials=1",
                           "epsilons=[0.1,1]", "experiment.task_params.k=2"]) == [
        "trials=1", "epsilons=[0.1,1]", "experiment.task_params.k=2"]


def test_an_ad_hoc_run_has_its_own_marked_page(tmp_path: Path) -> None:
    root = tmp_path / "results"
    narrowed = "methods=[bern_1,bern_4]"
    run_cli("run", EXP, narrowed, f"results_dir={root}", "runner.n_jobs=1", check=True)
    store = ResultStore(root / "store")
    assert store.runs() == [("exrisk_fig1", "default")]     # as before: its grid was run
    assert store.custom_runs() == [("exrisk_fig1", "default", [narrowed])]
    run_cli("site", f"results_dir={root}", check=True)
    folders = [p for p in (root / "site").glob("exrisk_fig1-default-custom-*") if p.is_dir()]
    assert len(folders) == 1, sorted(p.name for p in (root / "site").iterdir())
    page = json.loads((folders[0] / "page.json").read_text())
    assert page["custom"] == narrowed and page["trials_ok"] == page["trials_asked"] == 2
    index = (root / "site" / "index.html").read_text()
    assert f"ad hoc: {narrowed}" in index and f"{folders[0].name}/index.html" in index
    own = pd.read_csv(folders[0] / "trials.csv")
    assert len(own) == 2 and set(own["ad_hoc"]) == {narrowed}
    # the site's data: every stored trial once (here also on the page as written)
    data = pd.read_csv(root / "site" / "data" / "trials.csv")
    stored = {p.stem for p in (root / "store" / "trials").glob("*/*.json")}
    assert sorted(data["key"]) == sorted(stored), data[["experiment", "ad_hoc"]]
