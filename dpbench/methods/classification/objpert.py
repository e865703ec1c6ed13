"""Objective perturbation (Kifer, Smith & Thakurta 2012) as the DD-SSP paper's
Algorithm 6 states it, for logistic regression.

theta = argmin_theta  L(theta; D) + Delta/(2n) ||theta||^2 + b^T theta / n,
L = mean logistic loss, with (Alg. 6 lines 1-2)
    Delta = ||X||^2 / (2 eps)                      (the smallest value allowed)
    b ~ N(0, ||X||^2 (8 log(2/delta) + 4 eps) / eps^2  I_d).
The conditions of Kifer et al.'s theorem hold for the logistic loss with
||grad l|| <= ||X|| and Hessian eigenvalues <= ||X||^2/4 (App. E), so the release
is (eps, delta)-DP; it is charged as one (eps, delta) release.
"""

from __future__ import annotations

import json
import math
from typing import Self

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import logistic_loss, to_pm1
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant

# scipy (~0.4 s): imported when the method fits, not when `dpbench list` / `plan` reads it
optimize = lazy.module("scipy.optimize")
special = lazy.module("scipy.special")

#: Fig. 4 histogram of the margins <y_i x_i, theta>: fixed public bin edges
MARGIN_EDGES = np.linspace(-30.0, 30.0, 121)


def objpert_constants(x_bound: float, epsilon: float, delta: float) -> tuple[float, float]:
    """(Delta, sigma) of Alg. 6: ridge Delta = ||X||^2/(2 eps) and noise sd of each b_j."""
    if not (epsilon > 0 and 0 < delta < 1 and x_bound > 0):
        raise ValueError(f"need epsilon > 0, delta in (0, 1), x_bound > 0; got "
                         f"{epsilon}, {delta}, {x_bound}")
    ridge = x_bound**2 / (2 * epsilon)
    sigma = x_bound * math.sqrt(8 * math.log(2 / delta) + 4 * epsilon) / epsilon
    return ridge, sigma


def check_row_norms(X: NDArray, x_bound: float) -> None:
    """The sensitivity analysis needs ||x_i|| <= ||X|| for every row."""
    worst = float(np.sqrt(np.max(np.einsum("ij,ij->i", X, X)))) if len(X) else 0.0
    if worst > x_bound * (1 + 1e-9):
        raise ValueError(f"a row has L2 norm {worst:.4g} > x_bound={x_bound:.4g}; the privacy "
                         "guarantee needs every row inside the bound")


def perturbed_logistic(X: NDArray, ypm: NDArray, ridge: float, b: NDArray) -> NDArray:
    """Minimiser of mean log(1+exp(-y x.theta)) + ridge/(2n)||theta||^2 + b.theta/n.

    The objective is strongly convex (ridge > 0), so the minimiser is unique;
    L-BFGS is run to a gradient tolerance of 1e-8 (theta changes by < 1e-4 beyond it).
    """
    n, d = X.shape
    Z = X * ypm[:, None]

    def fun(theta: NDArray) -> tuple[float, NDArray]:
        m = Z @ theta
        value = logistic_loss(m).mean() + ridge / (2 * n) * theta @ theta + b @ theta / n
        grad = -(Z.T @ special.expit(-m)) / n + ridge / n * theta + b / n
        return float(value), grad

    res = optimize.minimize(fun, np.zeros(d), jac=True, method="L-BFGS-B",
                            options={"maxiter": 10_000, "gtol": 1e-8, "ftol": 1e-13})
    return res.x


class ObjPert(LinearModel):
    """Generalised objective perturbation for logistic regression (Alg. 6, r = 0, F = R^d)."""

    accounting = "approx"
    serves = frozenset({"classification"})
    #: the margin histogram is computed without noise from the training rows (the DD-SSP
    #: paper's diagnostic figure): marked as such wherever it is shown
    noiseless_info = frozenset({"margin_hist", "margin_frac_within_6"})

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        check_row_norms(data.X, data.x_bound)
        ypm = to_pm1(data.y)
        eps, delta = accountant.epsilon, accountant.delta
        ridge, sigma = objpert_constants(data.x_bound, eps, delta)
        accountant.charge_eps_delta(eps, delta, "objpert (Kifer et al. 2012, Alg. 6)")
        b = noise.theorem_noise(data.d, sigma, rng, epsilon=eps, delta=delta,
                                sensitivity=data.x_bound, relation=self.neighbours,
                                label="objpert: perturbed objective (Kifer et al. 2012, Thm. 2)")
        self.coef_ = perturbed_logistic(data.X, ypm, ridge, b)
        self.ridge_, self.sigma_ = ridge, sigma
        margins = ypm * (data.X @ self.coef_)
        self.margin_counts_ = margin_histogram(margins)
        self.margin_in_6_ = float(np.mean(np.abs(margins) <= 6.0))
        return self

    def info(self) -> dict[str, object]:
        # the histogram travels as a JSON string: the results frame keeps scalar info only
        return {"ridge": self.ridge_, "noise_sd": self.sigma_,
                "margin_frac_within_6": self.margin_in_6_,
                "margin_hist": json.dumps(self.margin_counts_),
                "margin_edges": json.dumps(MARGIN_EDGES.tolist())}


def margin_histogram(margins: NDArray) -> list[int]:
    """Counts over MARGIN_EDGES with the margins outside clipped into the end bins.

    Diagnostic only (Fig. 4 of the paper): computed from the training data, not
    a private release.
    """
    clipped = np.clip(margins, MARGIN_EDGES[0], MARGIN_EDGES[-1])
    return np.histogram(clipped, bins=MARGIN_EDGES)[0].astype(int).tolist()
