"""Trials whose metric is null (issue 59, defect 6): ``figures`` and ``site`` write every
file, mark each cell short of finite values in the captions (INCOMPLETE) and the claims,
and a claim on a cell without any finite value is SKIP, not a crash (exit 2, nothing
written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import figure_folder, run_cli

GRID = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp,adassp]"]


@pytest.fixture(scope="module")
def nulled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smoke run (2 trials per cell, eps 0.05 and 2) whose AdaSSP trials at eps 0.05 both
    store ``mse: null`` and whose SSP trial 0 at eps 0.05 does."""
    results = tmp_path_factory.mktemp("nulled") / "results"
    run_cli("run", *GRID, f"results_dir={results}", "runner.progress=false", check=True)
    changed = 0
    for path in (results / "store" / "trials").glob("*/*.json"):
        rec = json.loads(path.read_text())
        spec = rec["spec"]
        if spec["epsilon"] == 0.05 and (spec["method"] == "adassp"
                                        or (spec["method"] == "ssp" and spec["trial"] == 0)):
            rec["metrics"] = {k: None for k in rec["metrics"]}
            path.write_text(json.dumps(rec))
            changed += 1
    assert changed == 3
    return results


def test_figures_write_everything_and_mark_the_cells(nulled: Path) -> None:
    proc = run_cli("figures", *GRID, f"results_dir={nulled}")
    assert proc.returncode == 0, proc.stderr
    assert "without a finite value" in proc.stderr, proc.stderr
    folder = figure_folder(*GRID, f"results_dir={nulled}")
    for name in ("mse_vs_eps.png", "mse_vs_eps.md", "claims.md", "claims.json"):
        assert (folder / name).is_file(), name
    for name in ("mse_vs_eps.md", "claims.md"):
        text = (folder / name).read_text()
        assert "INCOMPLETE" in text, (name, text)
        assert "AdaSSP / epsilon=0.05: 0 of 2 trials with a finite mse" in text, text
        assert "SSP / epsilon=0.05: 1 of 2 trials with a finite mse" in text, text


def test_a_claim_on_a_cell_without_finite_values_is_skip() -> None:
    """``better`` of a over b where b's cell at eps 1 holds two trials, both NaN: SKIP,
    saying so; at eps 2 (one NaN, one value) the claim uses the one finite value and its
    numbers say n = 1."""
    import math

    import pandas as pd

    from dpbench.report.claims.engine import check, parse_claim

    rows = [{"dataset": "d", "dataset_label": "D", "method": m, "method_label": m.upper(),
             "epsilon": e, "trial": t, "mse": v, "trials_asked": 2}
            for m, e, t, v in [("a", 1.0, 0, 1.0), ("a", 1.0, 1, 1.2), ("b", 1.0, 0, math.nan),
                               ("b", 1.0, 1, math.nan), ("a", 2.0, 0, 0.5), ("a", 2.0, 1, 0.7),
                               ("b", 2.0, 0, math.nan), ("b", 2.0, 1, 0.9)]]
    claim = parse_claim({"id": "a_better_b", "text": "a < b", "kind": "better", "a": "a",
                         "b": "b", "metric": "mse", "better": "lower"})
    one, two = check([claim], pd.DataFrame(rows))
    assert (one.eps, one.status) == (1.0, "SKIP") and "no finite MSE for b" in one.numbers
    assert (two.eps, two.status) == (2.0, "PASS") and "0.6 vs 0.9" in two.numbers, two


def test_the_site_is_written(nulled: Path) -> None:
    proc = run_cli("site", *GRID, f"results_dir={nulled}")
    assert proc.returncode == 0, proc.stderr
    page = (nulled / "site" / "linreg_adult-smoke" / "index.html").read_text()
    assert "0 of 2 trials with a finite mse" in page
