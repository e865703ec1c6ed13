"""Baseline "mean": the private mean of the label, predicted for every row.

Each label is clipped to [-y_bound, y_bound] (``TabularData.y_bound``, public; rows within
the bound are unchanged), and two statistics are released with the Gaussian mechanism under
zCDP, the budget rho (the ledger's) split equally: the sum of the clipped labels (L2
sensitivity y_bound) and the row count (sensitivity 1), each at rho / 2. Neighbouring
datasets are **add/remove** (one record added or removed moves the sum by at most y_bound
and the count by 1; n is private, hence its noisy count). The estimate (post-processing) is
noisy sum / max(noisy count, 1), clipped to [-y_bound, y_bound]; the model is a
``LinearFit`` with coefficients 0 and that intercept.

``relation="replace_one"`` (its own analysis, as an arena runs it): n is public, so only
the sum is released, with the whole rho; a replaced label moves the clipped sum by at most
2 y_bound (one label from -y_bound to y_bound); the estimate is noisy sum / n. Group
privacy would charge the two releases 4 rho between them; this spends rho.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import NEIGHBOUR_RELATIONS, LinearModel
from dpbench.methods.marginals.noise import measure
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_zcdp

RELATION = "add_remove"


class Mean(LinearModel):
    """The private mean of y (module docstring); no hyperparameters."""

    accounting = "zcdp"
    neighbours = RELATION
    relations = NEIGHBOUR_RELATIONS
    serves = frozenset({"regression"})

    def __init__(self, relation: str = RELATION) -> None:
        super().__init__()
        self.params.update(self.own_relation(relation))   # the release is private under it

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        if accountant.currency != "zcdp":
            raise TypeError(f"the mean baseline composes in zCDP; this ledger is "
                            f"{accountant.currency!r}")
        bound = float(data.y_bound)
        y = np.clip(np.asarray(data.y, dtype=float), -bound, bound)
        replace = self.neighbours == "replace_one"
        # replace-one: n is public, the sum alone takes the budget (sensitivity 2 y_bound)
        releases = [("sum of y", float(y.sum()), 2 * bound)] if replace else [
            ("sum of y", float(y.sum()), bound), ("row count", float(data.n), 1.0)]
        rho_each = accountant.remaining() / len(releases)
        released = []
        for label, value, sens in releases:
            sigma = sigma_zcdp(rho_each, sens)
            accountant.charge_rho(rho_each, label)
            released.append(float(measure(value, sigma, rng, sensitivity=sens,
                                          relation=self.neighbours, label=label)))
        self.noisy_sum_, self.noisy_count_ = (released[0], float(data.n)) if replace \
            else released
        self.coef_ = np.zeros(data.d)
        self.intercept_ = float(np.clip(self.noisy_sum_ / max(self.noisy_count_, 1.0),
                                        -bound, bound))
        return self

    def info(self) -> dict[str, Any]:
        return {"noisy_count": self.noisy_count_, "neighbours": self.neighbours}
