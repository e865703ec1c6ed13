"""Claim kinds over columns of one method: ``band`` with per-target ``{suffix}`` columns and
``extreme`` (which dataset has the largest / smallest statistic), on hand-made frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbench.report.claims.engine import check, parse_claim
from dpbench.runner.schema import ConfigError


def rows(dataset: str, eps: float, **cols: list[float]) -> list[dict]:
    n = len(next(iter(cols.values())))
    return [{"dataset": dataset, "dataset_label": dataset, "method": "m", "method_label": "m",
             "epsilon": eps, "trial": t, **{c: v[t] for c, v in cols.items()}}
            for t in range(n)]


def verdicts(frame: pd.DataFrame, **spec):
    return check([parse_claim({"id": "c", "text": "t", **spec})], frame)


def test_band_suffix_covers_the_main_and_every_filled_target():
    f = pd.DataFrame(rows("d", 1.0, accuracy=[0.80, 0.82], real_accuracy=[0.81, 0.83],
                          accuracy_sex=[0.70, 0.70], real_accuracy_sex=[0.75, 0.75],
                          accuracy_race=[0.6, 0.6], real_accuracy_race=[np.nan, np.nan],
                          accuracy_age=[0.5, 0.5]))
    (v,) = verdicts(f, kind="band", column="real_accuracy{suffix}", other="accuracy{suffix}",
                    stat="mean_diff", lo=-0.02, hi=0.02)
    # main drop 0.01, sex drop 0.05; race (NaN) and age (no real column) are left out
    assert v.numbers == "mean_diff main 0.010, sex 0.050 vs [-0.02, 0.02]"
    assert v.status == "FAIL"
    (v,) = verdicts(f, kind="band", column="real_accuracy{suffix}", other="accuracy{suffix}",
                    stat="mean_diff", lo=-0.06, hi=0.06)
    assert v.status == "PASS"


def test_extreme_names_the_dataset_with_the_largest_drop():
    f = pd.DataFrame(rows("a", 1.0, acc=[0.80, 0.80], ref=[0.81, 0.81])
                     + rows("h", 1.0, acc=[0.70, 0.72], ref=[0.78, 0.78])
                     + rows("c", 1.0, acc=[0.60, 0.60], ref=[0.62, 0.62])
                     + rows("a", 2.0, acc=[0.80, 0.80], ref=[0.90, 0.90])
                     + rows("h", 2.0, acc=[0.75, 0.75], ref=[0.78, 0.78]))
    drop = {v.eps: v.status for v in verdicts(f, kind="extreme", dataset="h", column="ref",
                                              other="acc", which="max")}
    assert drop == {1.0: "PASS", 2.0: "FAIL"}       # drops 0.07 > 0.02 > 0.01; then 0.1 > 0.03
    low = {v.eps: v.status for v in verdicts(f, kind="extreme", dataset="h", column="acc",
                                             which="min")}
    assert low == {1.0: "FAIL", 2.0: "PASS"}         # c is lowest at eps 1
    (v,) = verdicts(f[f["dataset"] != "h"].query("epsilon == 1.0"), kind="extreme",
                    dataset="h", column="acc")
    assert v.status == "SKIP"
    with pytest.raises(ConfigError, match="which 'top'; valid: max, min"):
        verdicts(f, kind="extreme", dataset="h", column="acc", which="top")
