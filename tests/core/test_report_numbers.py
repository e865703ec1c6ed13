"""``report.numbers.compare``: the one z (both sides' noise, the printed rounding) and the
minimum-trials rule, and the paper_table cells and matches_paper claims agreeing on it."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from dpbench.report.claims.engine import check, parse_claim
from dpbench.report.kinds.paper_table import paper_table
from dpbench.report.numbers import MIN_TRIALS, NO_VERDICT, Z_NOTE, compare, paper_se

R3 = 0.001**2 / 12            # the variance of rounding to 3 printed decimals


def _row(value: float, digits: int = 3, **extra) -> pd.Series:
    return pd.Series({"value": value, "digits": digits, **extra})


def test_paper_se_is_ours_per_trial_sd_over_root_k():
    vals = np.array([0.70, 0.72, 0.77])
    sd = float(vals.std(ddof=1))
    se = sd / math.sqrt(3)
    # a mean over k = 10 trials: our per-trial sd / sqrt(10) (to float rounding)
    assert paper_se(se, 3, k=10) == pytest.approx(sd / math.sqrt(10), rel=1e-12)
    # a printed s.e. wins; no k and none printed: 0 (the printed number counts as exact)
    assert paper_se(se, 3, printed_se=0.004, k=10) == 0.004
    assert paper_se(se, 3) == 0.0
    gap = compare(float(vals.mean()), se, 3, _row(0.70, k=10.0))
    want = (vals.mean() - 0.70) / math.sqrt(se**2 + sd**2 / 10 + R3)
    assert gap.z == pytest.approx(want, rel=1e-12) and gap.text == f"{want:+.1f}"
    # the old formula ignored the paper's noise: |z| larger by more than 0.1 here
    assert abs((vals.mean() - 0.70) / math.sqrt(se**2 + R3)) > abs(want) + 0.1


def test_min_trials_and_deterministic_rows():
    assert MIN_TRIALS == 3 and NO_VERDICT == "fewer than 3 trials: no verdict"
    for n in (1, 2):
        gap = compare(0.780, 0.0 if n > 1 else math.nan, n, _row(0.766, k=10.0))
        assert gap.z is None and gap.text == NO_VERDICT
    # a deterministic number (a computation): one trial is its value, rounding only
    gap = compare(0.062, math.nan, 1, _row(0.061, deterministic=True))
    assert gap.z == pytest.approx(0.001 / math.sqrt(R3), rel=1e-9)


NUMBERS = """table,dataset,method,metric,stat,epsilon,value,digits,comparable,note,se,k
T,ds,m,acc,mean_se,1.0,0.700,3,true,over 10 trials,,10
T,ds,m,acc,mean_se,2.0,0.766,3,true,two trials,,10
T,ds,m,acc,mean_se,3.0,0.766,3,true,one trial,,10
T,ds,m,acc,mean_se,4.0,0.800,3,true,printed s.e.,0.004,
"""


def test_table_and_claims_agree(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "papers" / "toy").mkdir(parents=True)
    (root / "papers" / "toy" / "numbers.csv").write_text(NUMBERS)
    monkeypatch.setenv("DPBENCH_PATH", str(root))
    cells = {1.0: [0.70, 0.72, 0.77], 2.0: [0.7798, 0.7798], 3.0: [0.75], 4.0: [0.80, 0.81, 0.79]}
    frame = pd.DataFrame([{"dataset": "ds", "dataset_label": "DS", "method": "m",
                           "method_label": "M", "epsilon": e, "trial": t, "acc": v}
                          for e, vs in cells.items() for t, v in enumerate(vs)])
    fig = {"name": "t", "paper": "toy", "table": "T",
           "columns": [{"method": "m", "metric": "acc", "epsilon": e, "header": f"{e:g}"}
                       for e in cells]}
    md = paper_table(frame, fig, tmp_path)[0].read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| DS"))
    table = [re.search(r"\((.*)\)$", c.strip()).group(1) for c in row.strip("|").split("|")[1:]]
    assert Z_NOTE in md
    verdicts = check([parse_claim({"id": "c", "text": "t", "kind": "matches_paper",
                                   "table": "T"})], frame, root / "papers" / "toy")
    claims = {v.eps: v for v in verdicts}
    for e, z in zip(cells, table, strict=True):
        v = claims[e]
        if z == NO_VERDICT:
            assert v.status == "SKIP" and v.numbers.endswith(NO_VERDICT)
        else:
            assert f"z {z} " in v.numbers and v.status in ("PASS", "FAIL")
    assert table[1] == table[2] == NO_VERDICT     # 2 and 1 trials
    vals = np.array(cells[4.0])
    se = vals.std(ddof=1) / math.sqrt(3)
    assert table[3] == f"{(vals.mean() - 0.8) / math.sqrt(se**2 + 0.004**2 + R3):+.1f}"
