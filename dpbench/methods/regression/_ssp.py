"""Shared pieces of sufficient-statistic perturbation (SSP) estimators."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dpbench.privacy import noise


def sufficient_statistics(X: NDArray, y: NDArray) -> tuple[NDArray, NDArray]:
    """(X^T X, X^T y) of the training data."""
    return X.T @ X, X.T @ y


def solve_ridge(xtx: NDArray, xty: NDArray, lam: float = 0.0) -> NDArray:
    """theta = (xtx + lam I)^{-1} xty; least-squares solution if singular."""
    A = xtx + lam * np.eye(xtx.shape[0])
    try:
        return np.linalg.solve(A, xty)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, xty, rcond=None)[0]


def ssp_sensitivities(x_bound: float, y_bound: float, relation: str
                      ) -> tuple[float, float, float]:
    """L2 sensitivities of (lambda_min(X^T X), the upper triangle of X^T X, X^T y) to one
    record under ``relation``, rows with ||x|| <= B_x, |y| <= B_y.

    add/remove: x x^T moves lambda_min by at most ||x||^2 (Weyl) and the triangle by at
    most ||x x^T||_F = ||x||^2; x y moves X^T y by ||x|| |y|. replace-one: x x^T - x' x'^T
    has eigenvalues in [-||x||^2, ||x'||^2] (lambda_min moves by B_x^2) and Frobenius norm
    sqrt(||x||^4 + ||x'||^4 - 2 (x.x')^2) <= sqrt(2) B_x^2; x y - x' y' has norm up to
    2 B_x B_y (x' = -x, y' = y). All are attained."""
    b2, bxy = x_bound**2, x_bound * y_bound
    if relation == "replace_one":
        return b2, math.sqrt(2.0) * b2, 2.0 * bxy
    return b2, b2, bxy


def noisy_gram(xtx: NDArray, sigma: float, sensitivity: float, rng: np.random.Generator,
               label: str = "XtX", relation: str = "add_remove") -> NDArray:
    """X^T X + symmetric N(0, sigma^2) noise (one draw per upper-triangle entry, mirrored).

    Recorded as a Gaussian on the d (d + 1) / 2 upper-triangle entries, whose L2 change
    under ``relation`` is at most ``sensitivity`` (:func:`ssp_sensitivities`).
    """
    return noise.gaussian_symmetric(xtx, sigma, rng, sensitivity=sensitivity,
                                    relation=relation, label=label)


def noisy_moment(xty: NDArray, sigma: float, sensitivity: float, rng: np.random.Generator,
                 label: str = "Xty", relation: str = "add_remove") -> NDArray:
    """X^T y + N(0, sigma^2 I); one record moves X^T y by at most ``sensitivity`` under
    ``relation``."""
    return noise.gaussian(xty, sigma, rng, sensitivity=sensitivity, relation=relation,
                          label=label)
