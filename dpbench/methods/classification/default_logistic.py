"""scikit-learn's default logistic regression as the excess-risk authors run it (one place).

L2 penalty, C = 1, intercept, L-BFGS, ``max_iter`` 10,000 (their code's only change to the
defaults); on unscaled integer codes L-BFGS may stop at ``max_iter``, so the convergence
warning is silenced. Used by PATE (teachers, student) and the ``tstr`` task (the model
trained on synthetic rows and its real-data reference).
"""

from __future__ import annotations

import warnings

from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

MAX_ITER = 10_000


def default_logistic(X: NDArray, y: NDArray) -> LogisticRegression:
    """The fitted default logistic regression of ``y`` (two or more classes) on ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(max_iter=MAX_ITER).fit(X, y)
