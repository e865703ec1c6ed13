"""Regression metrics on the held-out test set.

A generator's synthetic rows are scored through the task's own model (the model lives in
the task, so every generator is scored with the same one): ordinary least squares without
intercept on the rows' encoded ``X, y``, trained on synthetic rows, tested on real ones.
"""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split
from dpbench.methods.outputs import LinearFit, SyntheticTable


def mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean squared error."""
    return float(np.mean((np.asarray(y_true) - np.asarray(y_pred)) ** 2))


def least_squares(table: SyntheticTable) -> LinearFit:
    """OLS (minimum-norm least squares) of the synthetic ``y`` on ``X``; no rows: zero."""
    X, y = np.asarray(table.X, dtype=float), np.asarray(table.y, dtype=float)
    if y.size == 0:
        return LinearFit(coef=np.zeros(X.shape[1]))
    return LinearFit(coef=np.linalg.lstsq(X, y, rcond=None)[0])


def evaluate(model: LinearFit | SyntheticTable, split: Split) -> dict[str, float]:
    """Test MSE (the primary metric) and train MSE of a linear model, or of the task's
    least-squares model trained on a generator's synthetic rows."""
    if isinstance(model, SyntheticTable):
        model = least_squares(model)
    return {
        "mse": mse(split.test.y, model.predict(split.test.X)),
        "train_mse": mse(split.train.y, model.predict(split.train.X)),
    }
