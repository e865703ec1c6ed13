"""Non-private baseline: logistic regression on the real training data."""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.privacy.accountant import Accountant


class PublicLogistic(LinearModel):
    """Unpenalised logistic regression without intercept, labels as the dataset gives them.

    The encodings drop one level per attribute, so no intercept is fitted (as in
    the DD-SSP authors' ``LogisticRegression(penalty=None, fit_intercept=False)``;
    C=inf is the same model without the deprecated ``penalty`` argument).
    """

    private = False
    serves = frozenset({"classification"})

    def __init__(self, max_iter: int = 1000) -> None:
        if max_iter < 1:
            raise ValueError(f"max_iter={max_iter!r} must be >= 1")
        super().__init__(max_iter=max_iter)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        from sklearn.linear_model import LogisticRegression  # here: planning imports the class

        clf = LogisticRegression(C=np.inf, fit_intercept=False,
                                 max_iter=self.params["max_iter"])
        clf.fit(data.X, data.y)
        self.coef_ = clf.coef_.ravel().astype(float)
        self.n_iter_ = int(np.max(clf.n_iter_))
        return self

    def info(self) -> dict[str, float]:
        return {"n_iter": float(self.n_iter_)}
