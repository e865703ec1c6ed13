"""bayesglm_logistic_ks (Fig. 5) smoke profile end to end through the CLI: run, figures,
and the printed claim check."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli


@pytest.mark.slow
def test_fig5_smoke_runs_and_prints_the_ks_check(results: Path) -> None:
    common = ["experiment=bayesglm_logistic_ks", "profile=smoke", f"results_dir={results}"]
    run_cli("run", *common, "runner.progress=false", "runner.trace_memory=false", check=True)
    proc = run_cli("figures", *common, check=True)
    assert "Fig 5 KS non-increasing in eps within error bars: " in proc.stdout
    outputs = proc.stdout.split()
    assert any(p.endswith("posterior_ecdf_bayesglm_synth_logistic_bayesglm_logistic_synth.png")
               for p in outputs)
    table = next(p for p in outputs if p.endswith("bayesglm_logistic_synth.md"))
    assert Path(table).read_text().startswith("## ")
