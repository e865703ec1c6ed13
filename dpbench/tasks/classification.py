"""Binary-classification metrics on the held-out test set (primary: AUC).

A generator's synthetic rows are scored through the task's own model (the same for every
generator): scikit-learn's default logistic regression with an intercept
(``default_logistic``) of the labels' positive class, trained on synthetic rows, tested
on real ones.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split
from dpbench.estimators import logistic_coef
from dpbench.methods.outputs import LinearFit, SyntheticTable


def positive(y: NDArray) -> NDArray:
    """Boolean 'positive class' of binary labels: the larger of the two values."""
    y = np.asarray(y)
    values = np.unique(y)
    if values.size > 2:
        raise ValueError(f"binary labels needed, got {values.size} distinct values; "
                         "valid: two values such as {0, 1} or {-1, +1}")
    return y == values[-1] if values.size == 2 else np.zeros(y.shape, dtype=bool)


def auc(y_true: NDArray, scores: NDArray) -> float:
    """ROC AUC of real-valued scores (nan if the labels hold a single class)."""
    pos = positive(y_true)
    if pos.all() or not pos.any():
        return float("nan")
    from sklearn.metrics import roc_auc_score  # here: the CLI imports tasks to plan

    return float(roc_auc_score(pos, np.asarray(scores, dtype=float)))


def accuracy(y_true: NDArray, scores: NDArray) -> float:
    """Share of rows whose predicted class (score > 0 -> positive) is right."""
    return float(np.mean((np.asarray(scores) > 0) == positive(y_true)))


def logistic(table: SyntheticTable) -> LinearFit:
    """scikit-learn's default logistic regression of the synthetic labels' positive class
    on ``X`` (a constant score when the rows hold one class; no rows: zero)."""
    X, y = np.asarray(table.X, dtype=float), np.asarray(table.y)
    if y.size == 0:
        return LinearFit(coef=np.zeros(X.shape[1]))
    coef, intercept = logistic_coef(X, positive(y).astype(int))
    return LinearFit(coef=coef, intercept=intercept)


def evaluate(model: LinearFit | SyntheticTable, split: Split) -> dict[str, float]:
    """Test AUC and accuracy of a linear decision function X theta + intercept (the fit's
    ``decision_function``: 0 intercept for the models without one), or of the task's
    logistic model trained on a generator's synthetic rows."""
    if isinstance(model, SyntheticTable):
        model = logistic(model)
    scores = model.decision_function(split.test.X)
    return {"auc": auc(split.test.y, scores), "accuracy": accuracy(split.test.y, scores)}
