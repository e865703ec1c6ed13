"""AdaSSP (Wang 2018) exactly as the DD-SSP paper's Algorithm 5 states it."""

from __future__ import annotations

import math
from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.regression._ssp import (
    noisy_gram,
    noisy_moment,
    solve_ridge,
    sufficient_statistics,
)
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant, BudgetExceeded


class AdaSSP(LinearModel):
    """Adaptive ridge SSP.

    Three Gaussian releases, each with noise sd sqrt(log(6/delta)) * Delta / (eps/3)
    (Alg. 5, lines 2, 4, 5): lambda_min(X^T X) (Delta = ||X||^2), X^T X
    (Delta = ||X||^2) and X^T y (Delta = ||X|| ||Y||). The ridge is
    lambda = max(0, sqrt(d log(6/delta) log(2 d^2/rho)) ||X||^2 / (eps/3) - lambda_min~).
    The ledger composes the three releases exactly in mu-GDP and refuses the
    fit if Alg. 5's calibration would exceed the (eps, delta) target.
    """

    accounting = "gdp"

    def __init__(self, failure_prob: float = 0.05) -> None:
        if not 0 < failure_prob < 1:
            raise ValueError(f"failure_prob={failure_prob!r} must lie in (0, 1)")
        super().__init__(failure_prob=failure_prob)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        eps3 = accountant.epsilon / 3
        log6 = math.log(6 / accountant.delta)
        bx2 = data.x_bound**2
        bxy = data.x_bound * data.y_bound
        d = data.d
        xtx, xty = sufficient_statistics(data.X, data.y)

        s_eig = math.sqrt(log6) * bx2 / eps3
        accountant.charge_gaussian(bx2, s_eig, "lambda_min")
        lam_min = float(np.linalg.eigvalsh(xtx)[0]) if d else 0.0
        # one record moves lambda_min(X^T X) by at most ||x||^2 (Weyl)
        lam_min_hat = max(noise.gaussian(lam_min, s_eig, rng, sensitivity=bx2,
                                         relation="add_remove", label="lambda_min",
                                         form="standard") - log6 / eps3 * bx2, 0.0)
        rho = self.params["failure_prob"]
        lam = max(0.0, math.sqrt(d * log6 * math.log(2 * d**2 / rho)) * bx2 / eps3 - lam_min_hat)

        s_xtx = math.sqrt(log6) * bx2 / eps3
        accountant.charge_gaussian(bx2, s_xtx, "XtX")
        xtx_hat = noisy_gram(xtx, s_xtx, bx2, rng)

        s_xty = math.sqrt(log6) * bxy / eps3
        accountant.charge_gaussian(bxy, s_xty, "Xty")
        xty_hat = noisy_moment(xty, s_xty, bxy, rng)

        self.lambda_ = lam
        self.coef_ = solve_ridge(xtx_hat, xty_hat, lam)
        return self

    def check_budget(self, accountant: Accountant) -> None:
        """Alg. 5's calibration is the classical Gaussian mechanism's, which spends more than
        (eps, delta) beyond eps ~ 20-30 (by delta): such a cell is refused before any trial,
        naming the largest epsilon at this delta."""
        if _calibration_fits(accountant.epsilon, accountant.delta):
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
