"""Data-independent SSP (DD-SSP paper, Sec. 2.2): Gaussian noise on X^T X and X^T y."""

from __future__ import annotations

import math
from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import NEIGHBOUR_RELATIONS, LinearModel
from dpbench.methods.regression._ssp import (
    noisy_gram,
    noisy_moment,
    solve_ridge,
    ssp_sensitivities,
    sufficient_statistics,
)
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_classic


class SSP(LinearModel):
    """Perturb both sufficient statistics once and solve the normal equations.

    Sensitivities (add/remove one record): ||X||^2 for X^T X, ||X|| ||Y|| for X^T y.
    ``relation="replace_one"`` (its own analysis, as an arena runs it; ``ssp_sensitivities``):
    sqrt(2) ||X||^2 for X^T X and 2 ||X|| ||Y|| for X^T y, where group privacy would
    charge 2 ||X||^2 and 2 ||X|| ||Y||.

    ``calibration``:
      - ``analytic`` (default): the two Gaussian releases share the budget
        exactly: each is (mu/sqrt 2)-GDP with mu the GDP equivalent of (eps, delta).
      - ``classic``: the paper's Sec. 2.2 formula nu^2 = Delta^2 log(1.25/delta)/eps^2
        applied with (eps/2, delta/2) per release, so the two compose to
        (eps, delta); the ledger verifies the composition.
    """

    accounting = "gdp"
    relations = NEIGHBOUR_RELATIONS

    def __init__(self, calibration: str = "analytic", relation: str = "add_remove") -> None:
        if calibration not in ("analytic", "classic"):
            raise ValueError(f"calibration={calibration!r}; valid: analytic, classic")
        super().__init__(calibration=calibration)
        self.params.update(self.own_relation(relation))

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        xtx, xty = sufficient_statistics(data.X, data.y)
        _, d1, d2 = ssp_sensitivities(data.x_bound, data.y_bound, self.neighbours)
        if self.params["calibration"] == "analytic":
            mu_each = accountant.mu_total / math.sqrt(2)
            s1, s2 = d1 / mu_each, d2 / mu_each
        else:
            # Sec. 2.2 writes nu^2 = Delta^2 log(1.25/delta) / eps^2 (no factor 2).
            e, dl = accountant.epsilon / 2, accountant.delta / 2
            s1 = sigma_classic(e, dl, d1) / math.sqrt(2)
            s2 = sigma_classic(e, dl, d2) / math.sqrt(2)
        accountant.charge_gaussian(d1, s1, "XtX")
        accountant.charge_gaussian(d2, s2, "Xty")
        xtx_hat = noisy_gram(xtx, s1, d1, rng, relation=self.neighbours)
        xty_hat = noisy_moment(xty, s2, d2, rng, relation=self.neighbours)
        self.coef_ = solve_ridge(xtx_hat, xty_hat)
        return self
