"""``paper_table`` kind on small hand-made frames and a hand-written numbers.csv."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpbench.report.kinds.paper_table import paper_table, zscore

NUMBERS = """table,dataset,method,metric,stat,epsilon,value,digits,comparable,note
T,ds_a,m1,err,mean_se,1.0,0.500,3,true,
T,ds_a,m2,err,mean_se,1.0,0.40,2,true,
T,ds_proxy,m1,err,mean_se,1.0,0.500,3,false,stand-in
T,ds_a,m1,err,best_over,1.0,0.300,3,true,
"""


@pytest.fixture
def paper(tmp_path, monkeypatch) -> str:
    root = tmp_path / "root"
    (root / "papers" / "toy").mkdir(parents=True)
    (root / "papers" / "toy" / "numbers.csv").write_text(NUMBERS)
    monkeypatch.setenv("DPBENCH_PATH", str(root))
    return "toy"


def _frame() -> pd.DataFrame:
    rows = []
    values = {("ds_a", "m1"): [0.50, 0.52, 0.54], ("ds_a", "m2"): [0.40, 0.40, 0.40],
              ("ds_proxy", "m1"): [0.6, 0.7, 0.8]}
    for (d, m), vs in values.items():
        for t, v in enumerate(vs):
            rows.append({"dataset": d, "dataset_label": d.upper(), "method": m,
                         "method_label": m.upper(), "epsilon": 1.0, "trial": t, "err": v,
                         "grid_err_a": v + 0.1, "grid_err_b": v - 0.1 * (m == "m1")})
    return pd.DataFrame(rows)


def _rows(path) -> list[list[str]]:
    lines = [ln for ln in path.read_text().splitlines() if ln.startswith("| ")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]


def _row(value: float, digits: int = 3, **extra) -> pd.Series:
    return pd.Series({"value": value, "digits": digits, **extra})


def test_zscore_widens_se_by_the_printed_rounding():
    # ours 0.52 +- 0.01155 over 3 trials vs 0.500 printed to 3 decimals, no paper s.e.
    se = np.std([0.50, 0.52, 0.54], ddof=1) / math.sqrt(3)
    z = (0.52 - 0.5) / math.sqrt(se**2 + 0.001**2 / 12)
    assert zscore(0.52, se, 3, _row(0.5)) == f"{z:+.1f}" == "+1.7"
    # a deterministic result equal to a 2-decimal paper value up to rounding: |z| <= 1.7
    assert zscore(0.404, 0.0, 1, _row(0.40, 2, deterministic=True)) \
        == f"{0.004 / (0.01 / math.sqrt(12)):+.1f}" == "+1.4"
    assert zscore(0.4, 0.1, 3, None) == "—"


def test_zscore_no_verdict_below_min_trials():
    # the old formula: two trials that agree by chance (se 0) put only the rounding
    # (0.0003) in the denominator, z = 0.014 / 0.00029 = +48.5; now no z at all
    assert zscore(0.780, 0.0, 2, _row(0.766)) == "fewer than 3 trials: no verdict"
    assert zscore(0.780, math.nan, 1, _row(0.766)) == "fewer than 3 trials: no verdict"


def test_mean_se_proxy_others_best_over_and_ranking(tmp_path, paper):
    fig = {"name": "t", "paper": paper, "table": "T", "caption": "Toy table",
           "columns": [{"method": "m1", "metric": "err", "header": "paper M1"},
                       {"others": True, "metric": "err"},
                       {"method": "m1", "metric": "err", "stat": "best_over",
                        "prefix": "grid_err_", "format": "{ours} at {at} ({z})"},
                       {"method": "m1", "metric": "err", "stat": "median_iqr",
                        "count_above": 0.51, "header": "M1 median"},
                       {"stat": "ranking", "header": "ranking"}],
           "notes": ["{trials} rows"]}
    paths = paper_table(_frame(), fig, tmp_path)
    assert [p.name for p in paths] == ["t.md", "t.tex"]
    text = paths[0].read_text()
    assert text.startswith("## Toy table\n") and "- 9 rows" in text
    assert "| dataset | paper M1 | M2 | M1 | M1 median | ranking |" in text
    a, proxy = _rows(paths[0])
    se = np.std([0.50, 0.52, 0.54], ddof=1) / math.sqrt(3)
    z = (0.52 - 0.5) / math.sqrt(se**2 + 0.001**2 / 12)
    assert a[0] == "DS_A"
    assert a[1] == f"0.520 ± {se:.3f} / 0.500 ({z:+.1f})"
    # the 'others' column: m2 is constant (se 0), paper printed with 2 decimals
    assert a[2] == "0.400 ± 0.000 / 0.40 (+0.0)"
    # best grid point: grid_err_b = err - 0.1 -> mean 0.42, paper's best_over row 0.300
    zb = (0.42 - 0.3) / math.sqrt(se**2 + 0.001**2 / 12)
    assert a[3] == f"0.420 ± {se:.3f} at b ({zb:+.1f})"
    assert a[4] == "0.520 [0.510, 0.530], 2"
    assert a[5] == "M2 < M1"
    # not comparable: labelled, no paper value, no z
    assert proxy[0] == "DS_PROXY [PROXY, not comparable]"
    assert proxy[1].endswith(" / — (—)") and proxy[2] == "— / — (—)"  # m2 has no trials


def test_over_column_rows_by_method_and_min_max_median(tmp_path, paper):
    f = _frame().assign(**{"method.theta": lambda d: np.where(d["method"] == "m1", 0.0, -5.0),
                           "info.k": lambda d: d["trial"] + 3})
    numbers = NUMBERS + "T,ds_a,m2,info.k,min,1.0,1,0,true,\nT,ds_a,m2,info.k,max,1.0,9,0,true,\n" \
        "T,ds_a,m2,info.k,median,1.0,4,0,true,\n"
    (tmp_path / "root" / "papers" / "toy" / "numbers.csv").write_text(numbers)
    tuned = {"name": "tuned", "paper": paper, "table": "T",
             "columns": [{"metric": "err", "stat": "best_over", "over": "method.theta",
                          "format": "{ours} (θ={at}) / {paper} (θ={paper_at})",
                          "format_nopaper": "{ours} (θ={at}) / —"}]}
    a, proxy = _rows(paper_table(f, tuned, tmp_path)[0])
    assert a[1] == "0.400 ± 0.000 (θ=-5) / 0.300 (θ=0)"
    assert proxy[1].endswith("(θ=0) / —")
    bins = {"name": "bins", "paper": paper, "table": "T", "rows": ["dataset", "method"],
            "keep": ["m1"], "order": "method.theta", "row_headers": ["dataset", "θ"],
            "row_cells": [{"column": "method.theta", "format": "{:g}"}],
            "columns": [{"metric": "info.k", "stat": "min_max_median"},
                        {"metric": "info.k", "stat": "min_max_median", "format": "{paper}"}]}
    rows = _rows(paper_table(f, bins, tmp_path)[0])
    # m2 has paper numbers on ds_a only; m1 is always kept; rows sorted by theta
    assert rows == [["DS_A", "-5", "3 / 5 / 4", "1 / 9 / 4"], ["DS_A", "0", "3 / 5 / 4", "—"],
                    ["DS_PROXY [PROXY, not comparable]", "0", "3 / 5 / 4", "—"]]


def test_index_rows_per_method_with_sd_and_coverage(tmp_path, paper):
    numbers = NUMBERS + "C,ds_a,m1,cov_0,coverage,1.0,0.950,3,true,\n" \
        "C,ds_a,m1,b_0,sd,1.0,0.100,3,true,\n"
    (tmp_path / "root" / "papers" / "toy" / "numbers.csv").write_text(numbers)
    rows = [{"dataset": "ds_a", "dataset_label": "A", "method": m, "method_label": m.upper(),
             "trial": t, "cov_0": float(t < 3), "b_0": 0.1 * t, "cov_1": 1.0, "b_1": 0.0}
            for m in ("m1", "m2") for t in range(4)]
    fig = {"name": "ci", "paper": paper, "table": "C", "per": "method", "rows": "index",
           "index": {"count": "b_{i}", "label": "β{n}"}, "row_headers": ["coef"],
           "caption": "CI ({label})",
           "columns": [{"metric": "b_{i}", "stat": "sd", "paper_method": "m1"},
                       {"metric": "cov_{i}", "stat": "coverage", "paper_method": "m1"}]}
    paths = paper_table(pd.DataFrame(rows), fig, tmp_path)
    assert [p.name for p in paths] == ["ci_m1.md", "ci_m1.tex", "ci_m2.md", "ci_m2.tex"]
    assert paths[0].read_text().startswith("## CI (M1)")
    b1, b2 = _rows(paths[0])
    sd = float(np.std([0.0, 0.1, 0.2, 0.3], ddof=1))
    se_sd = sd / math.sqrt(2 * 3)
    assert b1[1] == f"{sd:.3f} ± {se_sd:.3f} / 0.100 ({zscore(sd, se_sd, 4, _row(0.1))})"
    q = (0.75 + 0.95) / 2
    se_cov = math.sqrt(q * (1 - q) / 4)
    assert b1[2] == f"0.750 ± {se_cov:.3f} / 0.950 ({zscore(0.75, se_cov, 4, _row(0.95))})"
    z_cov = (0.75 - 0.95) / math.sqrt(se_cov**2 + 0.001**2 / 12)
    assert zscore(0.75, se_cov, 4, _row(0.95)) == f"{z_cov:+.1f}"
    # no paper number for the second coefficient; a 0/1 column with no variation
    assert b2[0] == "β2" and b2[2] == f"1.000 ± {math.sqrt(0.25 / 4 / 4):.3f} / — (—)"
