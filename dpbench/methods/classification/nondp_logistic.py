"""Non-private reference: scikit-learn's default logistic regression on the real training rows.

The "Non-DP" bar of the excess-risk paper's Fig. 4 (App. D.2): L2 penalty C = 1, an
intercept, L-BFGS (``dpbench/estimators.py``), on the data's encoding
as given (the paper's raw integer codes). It spends nothing.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.estimators import logistic_coef
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import to_pm1
from dpbench.privacy.accountant import Accountant


class NonDPLogistic(LinearModel):
    """Default logistic regression with intercept, no privacy (labels: larger value = 1)."""

    private = False
    serves = frozenset({"classification"})

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        y01 = (to_pm1(data.y) > 0).astype(int)
        self.coef_, self.intercept_ = logistic_coef(np.asarray(data.X, dtype=float), y01)
        return self
