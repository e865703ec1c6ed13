"""Non-private baseline: ordinary least squares on the real training data."""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.privacy.accountant import Accountant


class PublicOLS(LinearModel):
    """OLS without intercept (the encodings drop a level, so none is needed)."""

    private = False

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        self.coef_ = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
        return self
