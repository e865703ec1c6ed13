"""Linear-regression claim checks (claims.md) on hand-made result frames."""

from __future__ import annotations

import pandas as pd

from dpbench.cli import claims_summary
from dpbench.report.ddssp_ablations import mixture_claims, mst_claims
from dpbench.report.ddssp_linreg import linreg_claims


def _frame(rows):
    out = []
    for method, eps, values in rows:
        for t, v in enumerate(values):
            out.append({"dataset": "adult", "dataset_label": "Adult", "method": method,
                        "method_label": method, "epsilon": eps, "trial": t, "mse": v})
    return pd.DataFrame(out)


def test_linreg_claims_pass_fail_and_skip(tmp_path):
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("aim_synth", 0.1, [0.11, 0.13]),   # ~ : |diff| .01
        ("adassp", 0.1, [0.50, 0.52]),
        ("ddssp", 1.0, [0.10, 0.10]), ("aim_synth", 1.0, [0.30, 0.30]),   # not ~ (se 0)
        ("adassp", 1.0, [0.20, 0.20]),                                     # AIM-Synth worse
    ])
    text = linreg_claims(frame, tmp_path)[0].read_text()
    assert "| PASS | adult | 0.1 | DD-SSP ~ AIM-Synth |" in text
    assert "| FAIL | adult | 1.0 | DD-SSP ~ AIM-Synth |" in text
    assert "| PASS | adult | 1.0 | DD-SSP MSE < AdaSSP MSE |" in text
    assert "| FAIL | adult | 1.0 | AIM-Synth MSE < AdaSSP MSE |" in text
    only_ada = linreg_claims(_frame([("adassp", 0.1, [0.5, 0.6])]), tmp_path)[0].read_text()
    assert "| SKIP | adult | 0.1 | DD-SSP MSE < AdaSSP MSE |" in only_ada


def test_ablation_claims_by_epsilon_range(tmp_path):
    """Fig. 5: MST competitive at low eps (within the s.e. sum), AIM better at high eps;
    Fig. 6: Private-PGM competitive at low eps and better at high eps; AUC: higher is better."""
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("ddssp_mst", 0.1, [0.115, 0.135]),  # .015 worse, se .02
        ("ddssp", 0.5, [0.10, 0.10]), ("ddssp_mst", 0.5, [0.90, 0.90]),   # mid eps: no claim
        ("ddssp", 1.0, [0.20, 0.20]), ("ddssp_mst", 1.0, [0.10, 0.10]),   # MST better: FAIL
    ])
    text = mst_claims(frame, tmp_path)[0].read_text()
    assert "| PASS | adult | 0.1 | DD-SSP (MST) competitive with DD-SSP (AIM) |" in text
    assert "| FAIL | adult | 1.0 | DD-SSP (AIM) better than DD-SSP (MST) |" in text
    assert "| 0.5 |" not in text
    auc = _frame([("ddssp_logistic", 1.0, [0.80, 0.80]),
                  ("ddssp_mixture_logistic", 1.0, [0.70, 0.70])]).rename(columns={"mse": "auc"})
    text = mixture_claims(auc, tmp_path)[0].read_text()
    assert "| PASS | adult | 1.0 | DD-SSP (Private-PGM) better than DD-SSP (mixture) |" in text
    missing = mixture_claims(_frame([("ddssp", 0.05, [0.1, 0.1])]), tmp_path)[0].read_text()
    assert "| SKIP | adult | 0.05 | DD-SSP (Private-PGM) competitive with DD-SSP (mixture) |" \
        in missing


def test_linreg_claim_against_realistic_dpsgd(tmp_path):
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("dpsgd_lin_realistic", 0.1, [0.105, 0.105]),  # se .01
        ("ddssp", 1.0, [0.30, 0.30]), ("dpsgd_lin_realistic", 1.0, [0.10, 0.10]),
    ])
    text = linreg_claims(frame, tmp_path)[0].read_text()
    assert "| PASS | adult | 0.1 | DD-SSP competitive with DP-SGD (realistic) |" in text
    assert "| FAIL | adult | 1.0 | DD-SSP competitive with DP-SGD (realistic) |" in text


def test_figures_prints_claim_counts_and_failures(tmp_path):
    frame = _frame([
        ("ddssp", 1.0, [0.10, 0.10]), ("aim_synth", 1.0, [0.30, 0.30]),
        ("adassp", 1.0, [0.20, 0.20]),
    ])
    path = linreg_claims(frame, tmp_path)[0]
    text = claims_summary(path).splitlines()
    assert text[0] == f"{path}: 1 PASS, 2 FAIL, 0 SKIP"
    assert [ln.split("|")[4].strip() for ln in text[1:]] == [
        "DD-SSP ~ AIM-Synth", "AIM-Synth MSE < AdaSSP MSE"]


def test_acs_income_claim_is_similar_not_better(tmp_path):
    frame = _frame([("ddssp", 1.0, [0.110, 0.110]), ("adassp", 1.0, [0.100, 0.100]),
                    ("ddssp", 2.0, [0.050, 0.050]), ("adassp", 2.0, [0.100, 0.100])])
    frame["dataset"] = "acs_income_lin"
    text = linreg_claims(frame, tmp_path)[0].read_text()
    assert "| PASS | acs_income_lin | 1.0 | DD-SSP MSE similar to AdaSSP MSE |" in text
    assert "| FAIL | acs_income_lin | 2.0 | DD-SSP MSE similar to AdaSSP MSE |" in text
