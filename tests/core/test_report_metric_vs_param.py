"""``metric_vs_param`` kind and the parameter columns of the results frame."""

from __future__ import annotations

import pandas as pd

from dpbench.report.frame import results_frame, select
from dpbench.report.kinds.metric_vs_param import metric_vs_param
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import OK


def _frame() -> pd.DataFrame:
    rows = []
    points = [("a", 1, 100, None), ("b", 1, 200, None), ("c", 2, 100, None), ("d", 2, 100, 3.0)]
    for d, dim, n, bound in points:
        for t, err in enumerate((1.0, 3.0)):
            rows.append({"dataset": d, "dataset_label": d, "method": "m", "method_label": "M",
                         "trial": t, "dataset.d": dim, "dataset.n": n, "dataset.bound": bound,
                         "err": err * dim / n * 100})
    return pd.DataFrame(rows)


def _table(path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.startswith("| ")]


def test_x_and_panel_from_columns_with_fill_and_where(tmp_path):
    fig = {"name": "f1", "metric": "err", "x": "dataset.n", "panel": "dataset.d",
           "fill": {"dataset.bound": 1.0}, "where": {"dataset.bound": 1.0},
           "xlabel": "n", "panel_label": "d", "caption": "error", "value_header": "error"}
    paths = metric_vs_param(_frame(), fig, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".md", ".tex"]
    assert (tmp_path / "f1.md").read_text().startswith("## f1: error\n")
    # d = 1 at n = 100, 200; d = 2 at n = 100 (dataset d, bound 3, is filtered out);
    # mean of (1, 3) * d / n * 100 with s.e. 1 * d / n * 100
    assert _table(tmp_path / "f1.md") == [
        "| panel | method | n | error |", "| d=1 | M | 100 | 2.000 ± 1.000 |",
        "| d=1 | M | 200 | 1.000 ± 0.500 |", "| d=2 | M | 100 | 4.000 ± 2.000 |"]


def test_filled_parameter_on_the_x_axis(tmp_path):
    fig = {"name": "f2", "metric": "err", "x": "dataset.bound", "panel": "dataset.d",
           "fill": {"dataset.bound": 1.0}, "where": {"dataset.d": 2}, "logy": False}
    metric_vs_param(_frame(), fig, tmp_path)
    assert _table(tmp_path / "f2.md")[1:] == ["| dataset.d=2 | M | 1 | 4.000 ± 2.000 |",
                                              "| dataset.d=2 | M | 3 | 4.000 ± 2.000 |"]
    assert metric_vs_param(_frame(), {**fig, "where": {"dataset.d": 7}}, tmp_path) == []


def test_select_where_list_and_missing_column():
    f = _frame()
    assert set(select(f, {"dataset": ["a", "c"]})["dataset"]) == {"a", "c"}
    assert select(f, {"nope": 1}).empty


def test_results_frame_has_every_scalar_parameter(tmp_path):
    spec = TrialSpec(dataset="ds", dataset_target="x.y", dataset_params={"n": 5, "r": [0, 1]},
                     method="m", method_target="x.z", method_params={"theta": -7.0, "s": None},
                     task="t", epsilon=1.0, delta=1e-5, budget_unit="epsilon", trial=0,
                     meta={"dataset_sweep": {}, "method_sweep": {}})

    class Store:
        def get(self, key):
            return {"status": OK, "privacy": {"target_delta": 1e-5}, "timing": {"fit_s": 0.1},
                    "metrics": {"err": 1.0}}

    row = results_frame([spec], Store()).iloc[0]
    assert row["dataset.n"] == 5 and row["method.theta"] == -7.0 and "dataset.r" not in row
    assert "method.s" in row.index
