"""scikit-learn's default logistic regression as the excess-risk authors run it (one place).

A non-private estimator that methods and tasks share, so it sits below both layers (with the
data and the privacy primitives): a task depends on the methods only through their outputs.

L2 penalty, C = 1, intercept, L-BFGS, ``max_iter`` 10,000 (their code's only change to the
defaults); on unscaled integer codes L-BFGS may stop at ``max_iter``, so the convergence
warning is silenced. Used by PATE (teachers, student), the Non-DP reference, AIM-Synth's
``default_logistic`` model and the ``tstr`` task (the model trained on synthetic rows and
its real-data reference).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression

MAX_ITER = 10_000


def default_logistic(X: NDArray, y: NDArray) -> LogisticRegression:
    """The fitted default logistic regression of ``y`` (two or more classes) on ``X``."""
    from sklearn.exceptions import ConvergenceWarning  # here: the CLI imports this module
    from sklearn.linear_model import LogisticRegression  # to plan, and plans need no fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(max_iter=MAX_ITER).fit(X, y)


def logistic_coef(X: NDArray, y01: NDArray) -> tuple[NDArray, float]:
    """(coef, intercept) of :func:`default_logistic` on 0/1 labels; a single-class ``y01``
    gives coef 0 and intercept +-log(len(y) + 1) (a constant prediction, the log-odds of
    Laplace's rule of succession), where scikit-learn would refuse to fit."""
    classes = np.unique(y01)
    if classes.size == 1:
        sign = 1.0 if classes[0] == 1 else -1.0
        return np.zeros(X.shape[1]), sign * math.log(len(y01) + 1)
    clf = default_logistic(X, y01)
    return clf.coef_.ravel().astype(float), float(clf.intercept_[0])
