"""Baseline "mean": the private mean of the label, predicted for every row.

Each label is clipped to [-y_bound, y_bound] (``TabularData.y_bound``, public; rows within
the bound are unchanged), and two statistics are released with the Gaussian mechanism under
zCDP, the budget rho (the ledger's) split equally: the sum of the clipped labels (L2
sensitivity y_bound) and the row count (sensitivity 1), each at rho / 2. Neighbouring
datasets are **add/remove** (one record added or removed moves the sum by at most y_bound
and the count by 1; n is private, hence its noisy count). The estimate (post-processing) is
noisy sum / max(noisy count, 1), clipped to [-y_bound, y_bound]; the model is a
``LinearFit`` with coefficients 0 and that intercept.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.marginals.noise import measure
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_zcdp

RELATION = "add_remove"


class Mean(LinearModel):
    """The private mean of y (module docstring); no hyperparameters."""

    accounting = "zcdp"
    neighbours = RELATION
    serves = frozenset({"regression"})

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        if accountant.currency != "zcdp":
            raise TypeError(f"the mean baseline composes in zCDP; this ledger is "
                            f"{accountant.currency!r}")
        bound = float(data.y_bound)
        y = np.clip(np.asarray(data.y, dtype=float), -bound, bound)
        rho_each = accountant.remaining() / 2
        released = []
        for label, value, sens in (("sum of y", float(y.sum()), bound),
                                   ("row count", float(data.n), 1.0)):
            sigma = sigma_zcdp(rho_each, sens)
            accountant.charge_rho(rho_each, label)
            released.append(float(measure(value, sigma, rng, sensitivity=sens,
                                          relation=RELATION, label=label)))
        self.noisy_sum_, self.noisy_count_ = released
        self.coef_ = np.zeros(data.d)
        self.intercept_ = float(np.clip(self.noisy_sum_ / max(self.noisy_count_, 1.0),
                                        -bound, bound))
        return self

    def info(self) -> dict[str, Any]:
        return {"noisy_count": self.noisy_count_, "neighbours": RELATION}
