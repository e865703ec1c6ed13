"""Baseline "majority": the private majority class, predicted for every row.

The two label counts (rows of the smaller label value, rows of the larger: the positive
class, as the classification task and every classifier here code it,
``classification/_labels.py``) are released once with Laplace noise of scale 1 / eps, eps
the whole budget of a pure ledger. Neighbouring datasets are **add/remove**: one record
added or removed changes one of the two counts by 1 (L1 sensitivity 1), so the release is
eps-DP. Which two values the label takes is treated as public, as every classifier here
does. The model (post-processing) predicts the class with the larger noisy count: a
``LinearFit`` with coefficients 0 and intercept +1 (positive) or -1 (negative), so its AUC
is 0.5 and its accuracy the share of that class in the test rows.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import to_pm1
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant

RELATION = "add_remove"
LABEL = "label counts"


class Majority(LinearModel):
    """The private majority class (module docstring); no hyperparameters."""

    accounting = "pure"
    neighbours = RELATION
    serves = frozenset({"classification"})
    requires = frozenset({"binary_label"})

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        positive = to_pm1(data.y) > 0
        counts = np.array([float(np.sum(~positive)), float(np.sum(positive))])
        eps = accountant.remaining()
        accountant.charge_pure(eps, LABEL)
        self.noisy_counts_ = noise.laplace(counts, 1.0 / eps, rng, sensitivity=1.0,
                                           relation=RELATION, label=LABEL)
        self.coef_ = np.zeros(data.d)
        self.intercept_ = 1.0 if self.noisy_counts_[1] > self.noisy_counts_[0] else -1.0
        return self

    def info(self) -> dict[str, Any]:
        return {"predicts": "positive" if self.intercept_ > 0 else "negative",
                "neighbours": RELATION}
