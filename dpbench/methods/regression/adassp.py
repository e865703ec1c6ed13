"""AdaSSP (Wang 2018) exactly as the DD-SSP paper's Algorithm 5 states it."""

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
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant, BudgetExceeded

CALIBRATIONS = ("paper", "exact")


class AdaSSP(LinearModel):
    """Adaptive ridge SSP.

    Three Gaussian releases: lambda_min(X^T X), X^T X and X^T y (sensitivities
    :func:`ssp_sensitivities` under the instance's relation). ``calibration``:

    - ``paper`` (default; Alg. 5, lines 2, 4, 5): each with noise sd sqrt(log(6/delta))
      Delta / (eps/3). The ledger composes the three exactly in mu-GDP and refuses the fit
      if the calibration would exceed the (eps, delta) target; below that it spends less
      (about half of eps at the arenas' budgets, and group privacy halves it again).
    - ``exact``: the three share the trial's mu-GDP equally, sd_i = Delta_i sqrt(3) / mu,
      so the trial spends its whole (eps, delta) (an arena's setting: every member at its
      full budget).

    The ridge is lambda = max(0, sqrt(d log(2 d^2/rho)) sd_XtX - lambda_min~), with
    lambda_min~ = max(lambda_min + sd_min Z - sqrt(log(6/delta)) sd_min, 0): Alg. 5's
    expressions written in the noise sds (equal to them under ``paper``), so under
    ``exact`` the ridge follows the noise actually added.

    ``relation="replace_one"`` (its own analysis, as an arena runs it): lambda_min moves by
    at most ||X||^2, the upper triangle of X^T X by sqrt(2) ||X||^2 and X^T y by
    2 ||X|| ||Y|| (:func:`ssp_sensitivities`), where group privacy would charge 2x each.
    """

    accounting = "gdp"
    relations = NEIGHBOUR_RELATIONS

    def __init__(self, failure_prob: float = 0.05, calibration: str = "paper",
                 relation: str = "add_remove") -> None:
        if not 0 < failure_prob < 1:
            raise ValueError(f"failure_prob={failure_prob!r} must lie in (0, 1)")
        if calibration not in CALIBRATIONS:
            raise ValueError(f"calibration={calibration!r} unknown; valid: "
                             f"{', '.join(CALIBRATIONS)}")
        super().__init__(failure_prob=failure_prob,
                         **({} if calibration == "paper" else {"calibration": calibration}))
        self.params.update(self.own_relation(relation))

    def sds(self, accountant: Accountant, x_bound: float, y_bound: float
            ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """((sd_min, sd_XtX, sd_Xty), their sensitivities) for this calibration."""
        sens = ssp_sensitivities(x_bound, y_bound, self.neighbours)
        if self.params.get("calibration", "paper") == "exact":
            mu_each = accountant.mu_total / math.sqrt(3)
            return tuple(d / mu_each for d in sens), sens
        eps3 = accountant.epsilon / 3
        root = math.sqrt(math.log(6 / accountant.delta))
        return tuple(root * d / eps3 for d in sens), sens

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        log6 = math.log(6 / accountant.delta)
        d = data.d
        xtx, xty = sufficient_statistics(data.X, data.y)
        (s_eig, s_xtx, s_xty), (d_eig, d_xtx, d_xty) = self.sds(accountant, data.x_bound,
                                                                data.y_bound)

        accountant.charge_gaussian(d_eig, s_eig, "lambda_min")
        lam_min = float(np.linalg.eigvalsh(xtx)[0]) if d else 0.0
        # one record moves lambda_min(X^T X) by at most ||x||^2 (Weyl), either relation
        rho = self.params["failure_prob"]
        if self.params.get("calibration", "paper") == "paper":   # Alg. 5's expressions
            eps3 = accountant.epsilon / 3
            shift = log6 / eps3 * d_eig
            spread = math.sqrt(d * log6 * math.log(2 * d**2 / rho)) * d_xtx / eps3
        else:                                                     # the same, in the sds
            shift = math.sqrt(log6) * s_eig
            spread = math.sqrt(d * math.log(2 * d**2 / rho)) * s_xtx
        lam_min_hat = max(noise.gaussian(lam_min, s_eig, rng, sensitivity=d_eig,
                                         relation=self.neighbours, label="lambda_min",
                                         form="standard") - shift, 0.0)
        lam = max(0.0, spread - lam_min_hat)

        accountant.charge_gaussian(d_xtx, s_xtx, "XtX")
        xtx_hat = noisy_gram(xtx, s_xtx, d_xtx, rng, relation=self.neighbours)

        accountant.charge_gaussian(d_xty, s_xty, "Xty")
        xty_hat = noisy_moment(xty, s_xty, d_xty, rng, relation=self.neighbours)

        self.lambda_ = lam
        self.coef_ = solve_ridge(xtx_hat, xty_hat, lam)
        return self

    def check_budget(self, accountant: Accountant) -> None:
        """Alg. 5's calibration is the classical Gaussian mechanism's, which spends more than
        (eps, delta) beyond eps ~ 20-30 (by delta): such a cell is refused before any trial,
        naming the largest epsilon at this delta. The ``exact`` calibration always fits."""
        if self.params.get("calibration", "paper") == "exact" or \
                _calibration_fits(accountant.epsilon, accountant.delta):
            return
        lo, hi = 1e-3, accountant.epsilon     # fits at lo (eps << 1), not at hi
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if _calibration_fits(mid, accountant.delta) else (lo, mid)
        raise ValueError(f"AdaSSP (Alg. 5) cannot run at epsilon={accountant.epsilon:g}, "
                         f"delta={accountant.delta:.3g}: its noise calibration would spend "
                         f"more than the target; valid: epsilon <= {lo:.4g} at this delta")

    def info(self) -> dict[str, float]:
        return {"ridge_lambda": float(self.lambda_)}


def _calibration_fits(epsilon: float, delta: float) -> bool:
    """Do Alg. 5's three releases (noise sd sqrt(log(6/delta)) Delta / (eps/3), as in
    :meth:`AdaSSP.fit`) fit in an (epsilon, delta) gdp ledger? Scale-free: Delta = 1."""
    scratch = Accountant(epsilon, delta, currency="gdp")
    sd = math.sqrt(math.log(6 / delta)) * 1.0 / (epsilon / 3)
    try:
        for label in ("lambda_min", "XtX", "Xty"):
            scratch.charge_gaussian(1.0, sd, label)
    except BudgetExceeded:
        return False
    return True
