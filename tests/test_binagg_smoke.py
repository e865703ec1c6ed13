"""Each BinAgg experiment's smoke profile runs end to end through the CLI and builds its
tables (restricted to one or two datasets so the whole file takes ~30 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

CASES = {
    "binagg_ci": [],
    "binagg_sim": ["datasets=[binagg_sim_d5_n500,binagg_sim_d5_b2]"],
    "binagg_real": ["datasets=[binagg_liver]"],
    "binagg_sdg": ["datasets=[binagg_liver_split]"],
    "binagg_ablation": ["datasets=[binagg_intrusion_proxy]"],
}


@pytest.mark.slow
@pytest.mark.parametrize("experiment", sorted(CASES))
def test_smoke_profile_runs_and_reports(experiment: str, results: Path) -> None:
    common = [f"experiment={experiment}", "profile=smoke", f"results_dir={results}",
              *CASES[experiment]]
    run_cli("run", *common, "runner.progress=false", "runner.trace_memory=false", check=True)
    proc = run_cli("figures", *common, check=True)
    tables = [p for p in proc.stdout.split() if p.endswith(".md")]
    assert tables, proc.stdout
    assert all(Path(p).read_text().startswith("## ") for p in tables)
