"""Claim kinds that compare two methods (similar, better, competitive) on hand-made frames."""

from __future__ import annotations

import pandas as pd

from dpbench.report.claims.engine import check, parse_claim


def frame(cells: dict[tuple[str, float], list[float]], metric: str = "score",
          dataset: str = "toy") -> pd.DataFrame:
    """One row per value: {(method, eps): [values over trials]}."""
    return pd.DataFrame([{"dataset": dataset, "dataset_label": dataset, "method": m,
                          "method_label": m, "epsilon": e, "trial": t, metric: v}
                         for (m, e), vals in cells.items() for t, v in enumerate(vals)])


def run(frame_: pd.DataFrame, **spec) -> dict[float, str]:
    """{eps: status} of one claim (metric "score", higher is better unless said)."""
    raw = {"id": "c", "text": "t", "a": "x", "b": "y", "metric": "score", **spec}
    verdicts = check([parse_claim(raw)], frame_, better={"score": "higher"})
    return {v.eps: v.status for v in verdicts}


def test_similar_within_se_sum_or_ratio_band():
    f = frame({("x", 1.0): [1.0, 1.2], ("y", 1.0): [1.15, 1.25],     # diff .1 <= se sum .125
               ("x", 2.0): [1.0, 1.0], ("y", 2.0): [1.2, 1.2],       # diff .2, se 0
               ("y", 3.0): [1.0, 1.0]})                              # x missing
    assert run(f, kind="similar", require="none") == {1.0: "PASS", 2.0: "FAIL", 3.0: "SKIP"}
    assert run(f, kind="similar", require="both") == {1.0: "PASS", 2.0: "FAIL"}
    # ratio 1 / 1.2 = 0.83 inside [0.8, 1.25]
    assert run(f, kind="similar", ratio=[0.8, 1.25])[2.0] == "PASS"


def test_better_follows_the_metric_direction():
    f = frame({("x", 1.0): [2.0, 2.0], ("y", 1.0): [1.0, 1.0],
               ("x", 2.0): [1.0, 1.0], ("y", 2.0): [1.0, 1.0],       # tie: not better
               ("y", 3.0): [1.0, 1.0]})
    assert run(f, kind="better") == {1.0: "PASS", 2.0: "FAIL", 3.0: "SKIP"}
    assert run(f, kind="better", better="lower")[1.0] == "FAIL"


def test_competitive_with_tolerance_or_se_sum():
    f = frame({("x", 1.0): [0.985, 0.985], ("y", 1.0): [1.0, 1.0],     # 0.015 below
               ("x", 2.0): [0.995, 0.995], ("y", 2.0): [1.0, 1.0],     # 0.005 below
               ("x", 3.0): [0.9, 1.1], ("y", 3.0): [1.1, 1.1]})        # 0.1 below, se .1
    assert run(f, kind="competitive", tol=0.01) == {1.0: "FAIL", 2.0: "PASS", 3.0: "FAIL"}
    assert run(f, kind="competitive") == {1.0: "FAIL", 2.0: "FAIL", 3.0: "PASS"}
    # lower is better: x at most tol above y
    assert run(f, kind="competitive", tol=0.01, better="lower") == {
        1.0: "PASS", 2.0: "PASS", 3.0: "PASS"}


def test_where_filters_and_method_alternatives():
    f = frame({("x2", 0.05): [2.0, 2.0], ("y", 0.05): [1.0, 1.0],
               ("x2", 1.0): [0.0, 0.0], ("y", 1.0): [1.0, 1.0]})
    # "x" is absent, so the alternative "x2" is compared
    assert run(f, kind="better", a=["x", "x2"]) == {0.05: "PASS", 1.0: "FAIL"}
    assert run(f, kind="better", a=["x", "x2"], where={"eps": "<=0.1"}) == {0.05: "PASS"}
    assert run(f, kind="better", a=["x", "x2"], where={"eps": [">0.01", ">=1"]}) == {
        1.0: "FAIL"}
    assert run(f, kind="better", a="x2", where={"datasets": ["other"]}) == {}


def test_first_metric_present_and_file_direction():
    f = frame({("x", 1.0): [1.0, 1.0], ("y", 1.0): [2.0, 2.0]}, metric="err")
    verdicts = check([parse_claim({"id": "c", "text": "t", "kind": "better", "a": "x",
                                   "b": "y", "metric": ["score", "err"]})],
                     f, better={"score": "higher", "err": "lower"})
    assert [(v.status, v.numbers.split()[0]) for v in verdicts] == [("PASS", "ERR")]


def test_group_stands_for_its_best_sweep_point():
    # per cell the best of y's points (higher is better): 0.8 at eps 1, 0.9 at eps 2
    f = frame({("x", 1.0): [0.85, 0.85], ("y[k=1]", 1.0): [0.8, 0.8],
               ("y[k=2]", 1.0): [0.7, 0.7], ("x", 2.0): [0.85, 0.85],
               ("y[k=1]", 2.0): [0.6, 0.6], ("y[k=2]", 2.0): [0.9, 0.9]})
    assert run(f, kind="better", b="y[*]") == {1.0: "PASS", 2.0: "FAIL"}
    raw = {"id": "c", "text": "t", "kind": "better", "a": "x", "b": "y[*]", "metric": "score"}
    numbers = [v.numbers for v in check([parse_claim(raw)], f, better={"score": "higher"})]
    assert numbers[1].endswith("best point: y[k=2]")
    # lower is better: the best point is the smallest
    assert run(f, kind="better", b="y[*]", better="lower") == {1.0: "FAIL", 2.0: "FAIL"}
    assert run(f, kind="better", b="z[*]") == {}        # no point of z: no rows (require b)
