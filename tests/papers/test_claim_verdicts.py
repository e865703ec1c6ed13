"""The claims engine gives the verdicts of the old per-paper checks.

``golden_verdicts.json`` holds, per experiment, the verdict rows (claim id, dataset, eps,
subject, status) that the old checks wrote on each experiment's smoke profile (extracted
by ``extract_old_verdicts.py``). ``claims_golden.assert_golden`` compares an experiment's
claims.json with them; tests/experiments/test_experiments_smoke.py calls it after each smoke run's
``figures`` step. Here, with ``DPBENCH_BASELINE`` set to folders (os.pathsep-separated) holding the
old smoke runs' ``*/results/`` stores, every experiment's claims are rebuilt from those
stores and compared.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from claims_golden import assert_golden, golden


def _baseline_results() -> dict[str, Path]:
    out = {}
    for base in os.environ.get("DPBENCH_BASELINE", "").split(os.pathsep):
        for folder in Path(base).glob("*/results/figures/*-smoke") if base else []:
            out[folder.name.removesuffix("-smoke")] = folder.parents[1]
    return out


@pytest.mark.parametrize("experiment", sorted(golden()))
def test_rebuilt_claims_match_old_verdicts(experiment: str, tmp_path: Path) -> None:
    from omegaconf import OmegaConf
    from smoke_grids import NARROW

    from dpbench.report.build import build_claims
    from dpbench.report.frame import results_frame
    from dpbench.workspace import compose_config, grid, store_of

    results = _baseline_results().get(experiment)
    if results is None:
        pytest.skip("DPBENCH_BASELINE names no old smoke run of this experiment")
    cfg = compose_config([f"experiment={experiment}", "profile=smoke",
                          f"results_dir={results}", *NARROW.get(experiment, [])])
    frame = results_frame(grid(cfg), store_of(cfg), experiment)
    paths = build_claims(frame, OmegaConf.to_container(cfg.experiment, resolve=True), tmp_path)
    assert_golden(experiment, next((p for p in paths if p.suffix == ".json"), None))
