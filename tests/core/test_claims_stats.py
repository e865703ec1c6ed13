"""Claim kinds on statistics of one method (trend, band, share_within, matches_paper)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from dpbench.report.claims.engine import check, parse_claim


def verdicts(frame: pd.DataFrame, paper_dir=None, **spec) -> list:
    return check([parse_claim({"id": "c", "text": "t", **spec})], frame, paper_dir)


def _rows(cells: dict[tuple[str, float], dict[str, list[float]]]) -> pd.DataFrame:
    """{(method, eps): {column: values over trials}} -> one row per trial."""
    rows = []
    for (m, e), cols in cells.items():
        for t in range(len(next(iter(cols.values())))):
            rows.append({"dataset": "toy", "method": m, "epsilon": e, "trial": t,
                         **{c: v[t] for c, v in cols.items()}})
    return pd.DataFrame(rows)


def test_trend_nonincreasing_within_z_se():
    f = _rows({("m", 0.1): {"ks_0": [0.5, 0.5], "ks_1": [0.1, 0.1]},
               ("m", 1.0): {"ks_0": [0.2, 0.2], "ks_1": [0.3, 0.3]},        # ks_1 rises
               ("one", 1.0): {"ks_0": [0.2, 0.2], "ks_1": [0.2, 0.2]}})      # one eps only
    got = {v.subject: v.status for v in verdicts(f, kind="trend", columns=r"ks_\d+")}
    assert got == {"m ks_0": "PASS", "m ks_1": "FAIL", "one ks_0": "SKIP", "one ks_1": "SKIP"}
    up = {v.subject: v.status for v in verdicts(f, kind="trend", columns=r"ks_\d+",
                                                  direction="nondecreasing", methods=["m"])}
    assert up == {"m ks_0": "FAIL", "m ks_1": "PASS"}
    # a rise inside z x combined s.e. passes
    noisy = _rows({("m", 0.1): {"ks_0": [0.1, 0.3]}, ("m", 1.0): {"ks_0": [0.2, 0.4]}})
    assert [v.status for v in verdicts(noisy, kind="trend", columns="ks_0")] == ["PASS"]
    assert [v.eps for v in verdicts(noisy, kind="trend", columns="ks_0")] == [None]


def test_band_mean_for_every_coefficient():
    f = _rows({("good", 1.0): {"cov_0": [1, 1, 1, 0] * 5, "cov_1": [1] * 19 + [0]},
               ("bad", 1.0): {"cov_0": [1] * 20, "cov_1": [1] * 19 + [0]},
               ("none", 1.0): {"other": [1] * 20}})
    # good: means 0.75 and 0.95; bad: 1.0 and 0.95; none: no cov_j values
    got = {v.subject: v.status for v in verdicts(f, kind="band", column="cov_{j}", lo=0.7,
                                                 hi=0.97)}
    assert got == {"good": "PASS", "bad": "FAIL", "none": "SKIP"}
    got = {v.subject: v.status for v in verdicts(f, kind="band", column="cov_{j}", lo=0.7,
                                                 hi=0.9)}
    assert got == {"good": "FAIL", "bad": "FAIL", "none": "SKIP"}


def test_band_difference_strict_and_sd_ratio():
    f = _rows({("m", 1.0): {"cov_0": [1.0, 1.0], "naive_0": [0.9, 0.9],
                            "bias_0": [-1.0, 1.0], "se_0": [1.4, 1.5]}})
    diff = dict(kind="band", column="cov_{j}", other="naive_{j}", stat="mean_diff", lo=0.05)
    assert verdicts(f, **diff)[0].status == "PASS"
    assert verdicts(f, **{**diff, "lo": 0.2})[0].status == "FAIL"
    # sd(bias) = sqrt(2) = 1.414; mean se 1.45: ratio 0.975
    ratio = dict(kind="band", column="bias_{j}", other="se_{j}", stat="sd_over_mean")
    assert verdicts(f, **ratio, lo=0.9, hi=1.1)[0].status == "PASS"
    assert verdicts(f, **ratio, lo=0.99, hi=1.1)[0].status == "FAIL"


def test_share_within_from_stored_or_fallback_edges():
    edges = np.linspace(-3, 3, 7)                     # centres -2.5 .. 2.5
    inside = json.dumps([0, 0, 3, 3, 0, 0])
    outside = json.dumps([3, 0, 0, 0, 1, 3])
    f = pd.DataFrame([
        {"dataset": "a", "method": "m", "epsilon": 1.0, "hist": inside,
         "edges": json.dumps(edges.tolist())},
        {"dataset": "b", "method": "m", "epsilon": 1.0, "hist": outside, "edges": None},
        {"dataset": "a", "method": "m", "epsilon": 0.1, "hist": outside, "edges": None}])
    spec = dict(kind="share_within", method=["absent", "m"], column="hist",
                edges_column="edges", edges={"start": -3, "stop": 3, "num": 7}, bound=1,
                threshold=0.5, where={"eps": "==1"})
    got = {(v.dataset, v.eps): v.status for v in verdicts(f, **spec)}
    assert got == {("a", 1.0): "PASS", ("b", 1.0): "FAIL"}
    assert verdicts(f, **{**spec, "method": "other"}) == []


def test_matches_paper_from_numbers_csv(tmp_path):
    (tmp_path / "numbers.csv").write_text(
        "table,dataset,method,metric,stat,epsilon,value,digits,comparable,note\n"
        "1,toy,m,err,mean_se,1.0,0.50,2,true,close\n"
        "1,toy,m,err,mean_se,2.0,0.90,2,true,far\n"
        "1,toy,m,err,mean_se,3.0,0.50,2,false,proxy data\n"
        "1,toy,m,err,best_over,1.0,0.50,2,true,not computed\n"
        "1,toy,absent,err,mean_se,1.0,0.50,2,true,no results\n"
        "2,toy,m,err,mean_se,1.0,9.99,2,true,other table\n")
    # 3 trials: the minimum for a verdict (report.numbers.MIN_TRIALS)
    f = _rows({("m", 1.0): {"err": [0.49, 0.50, 0.51]}, ("m", 2.0): {"err": [0.49, 0.50, 0.51]},
               ("m", 3.0): {"err": [0.49, 0.50, 0.51]}})
    got = [(v.eps, v.status) for v in verdicts(f, tmp_path, kind="matches_paper", table="1")]
    assert got == [(1.0, "PASS"), (2.0, "FAIL"), (3.0, "SKIP"), (1.0, "SKIP")]
    assert len(verdicts(f, tmp_path, kind="matches_paper")) == 5
    assert verdicts(f, None, kind="matches_paper") == []
    # one trial: SKIP with the table's no-verdict text, not the old z of a zero s.e.
    # ((0.49 - 0.50) / (0.01 / sqrt(12)) = -3.5, a FAIL at tol 2)
    one = verdicts(f[f["trial"] == 0], tmp_path, kind="matches_paper", table="1")
    assert [(v.eps, v.status) for v in one] == [(1.0, "SKIP"), (2.0, "SKIP"), (3.0, "SKIP"),
                                                (1.0, "SKIP")]
    assert one[0].numbers == "ours 0.49 vs paper 0.50, fewer than 3 trials: no verdict"
