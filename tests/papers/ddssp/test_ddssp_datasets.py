"""The vendored DD-SSP datasets load, verify and encode as their yamls say."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry


def _load(name: str, **over):
    e = load_entry("dataset", name)
    return import_object(e["_target_"])(rng=np.random.default_rng(0), **{**e["params"], **over})


@pytest.mark.parametrize("name,rows,target_levels", [
    ("acs_income_lin", 195_665, 20),    # train 194,665 + test 1,000 (two files stacked)
    ("acs_employment", 50_000, 2),      # train 49,000 + test 1,000
    ("acs_mobility", 29_358, 2),
    ("adult_logreg", 48_842, 2),
])
def test_rows_bounds_and_labels(name, rows, target_levels):
    s = _load(name, n_train_max=None)
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
