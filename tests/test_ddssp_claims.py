"""Linear-regression claim checks (claims.md) on hand-made result frames."""

from __future__ import annotations

import pandas as pd

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
