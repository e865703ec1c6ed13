"""Non-private baseline for synthetic-data tasks: the real training data (Table 3 "Original")."""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.outputs import LinearFit, SyntheticTable
from dpbench.privacy.accountant import Accountant


class RealData(LinearModel):
    """``synthetic_`` is the training data itself; ``coef_`` its OLS fit."""

    private = False
    serves = frozenset({"regression", "inference", "synthetic_utility"})
    produces = (LinearFit, SyntheticTable)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        self.synthetic_ = (data.X, data.y)
        self.synthetic_records_ = data.discrete
        self.coef_ = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
        return self
