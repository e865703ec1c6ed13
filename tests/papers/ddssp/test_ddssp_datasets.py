"""The vendored DD-SSP datasets load, verify and encode as their yamls say."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry, task_view


def _load(name: str, task: str | None = None, **over):
    e = load_entry("dataset", name)
    e = task_view(name, e, task) if task else e
    return import_object(e["_target_"])(rng=np.random.default_rng(0), **{**e["params"], **over})


@pytest.mark.parametrize("name,task,rows,target_levels", [
    ("acs_income_lin", None, 195_665, 20),    # train 194,665 + test 1,000 (two files stacked)
    ("acs_employment", None, 50_000, 2),      # train 49,000 + test 1,000
    ("acs_mobility", None, 29_358, 2),
    ("adult", "classification", 48_842, 2),
    ("adult", "regression", 48_842, 16),      # education-num: 16 levels
])
def test_rows_bounds_and_labels(name, task, rows, target_levels):
    s = _load(name, task, n_train_max=None)
    assert s.train.n + s.test.n == rows and s.test.n == 1000
    norms = np.sqrt((s.train.X ** 2).sum(axis=1))
    assert norms.max() <= s.train.x_bound + 1e-12
    assert len(np.unique(s.train.y)) == target_levels
    if target_levels == 2:
        assert set(np.unique(s.train.y)) == {-1.0, 1.0}


def test_one_hot_columns_follow_the_categorical_list():
    s = _load("acs_mobility")
    cats = {c.split("=")[0] for c in s.train.feature_names if "=" in c}
    assert cats == {"MAR", "CIT", "MIL", "ANC", "RELP", "RAC1P", "GCL", "COW", "ESR"}
