"""Regression metrics on the held-out test set."""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split
from dpbench.methods.outputs import LinearFit


def mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean squared error."""
    return float(np.mean((np.asarray(y_true) - np.asarray(y_pred)) ** 2))


def evaluate(model: LinearFit, split: Split) -> dict[str, float]:
    """Test MSE (the primary metric) and train MSE of a linear model."""
    return {
        "mse": mse(split.test.y, model.predict(split.test.X)),
        "train_mse": mse(split.train.y, model.predict(split.train.X)),
    }
