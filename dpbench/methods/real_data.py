"""Non-private reference: the real training data (Table 3 "Original"), or a random share of it.

``fraction`` < 1 keeps a uniformly drawn ``fraction`` of the training rows (at least 2):
the arenas' calibration points, from which a board says that a private method is "as good
as the non-private reference on x% of the rows" (the reading SDNist gives its scores).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.outputs import LinearFit, SyntheticTable
from dpbench.privacy.accountant import Accountant


class RealData(LinearModel):
    """``synthetic_`` is the training data itself (or a ``fraction`` of its rows); ``coef_``
    its OLS fit."""

    private = False
    serves = frozenset({"regression", "inference", "synthetic_utility"})
    produces = (LinearFit, SyntheticTable)

    def __init__(self, fraction: float = 1.0) -> None:
        if isinstance(fraction, bool) or not 0 < float(fraction) <= 1:
            raise ValueError(f"fraction={fraction!r} must lie in (0, 1]")
        super().__init__(**({} if fraction == 1 else {"fraction": float(fraction)}))

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        X, y, records = data.X, data.y, data.discrete
        frac = self.params.get("fraction", 1.0)
        if frac < 1:
            # not privacy noise: non-private
            keep = np.sort(rng.choice(data.n, max(2, round(frac * data.n)), replace=False))
            X, y = X[keep], y[keep]
            records = None if records is None else records.iloc[keep].reset_index(drop=True)
        self.synthetic_ = (X, y)
        self.synthetic_records_ = records
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        return self
