"""Shared pieces of sufficient-statistic perturbation (SSP) estimators."""

from __future__ import annotations

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


def noisy_gram(xtx: NDArray, sigma: float, sensitivity: float, rng: np.random.Generator,
               label: str = "XtX") -> NDArray:
    """X^T X + symmetric N(0, sigma^2) noise (one draw per upper-triangle entry, mirrored).

    Recorded as a Gaussian on the d (d + 1) / 2 upper-triangle entries: one record's x x^T
    moves them by at most ||x x^T||_F = ||x||^2 in L2, the ``sensitivity`` (add/remove).
    """
    return noise.gaussian_symmetric(xtx, sigma, rng, sensitivity=sensitivity,
                                    relation="add_remove", label=label)


def noisy_moment(xty: NDArray, sigma: float, sensitivity: float, rng: np.random.Generator,
                 label: str = "Xty") -> NDArray:
    """X^T y + N(0, sigma^2 I); one record moves X^T y by ||x|| |y| <= ``sensitivity``."""
    return noise.gaussian(xty, sigma, rng, sensitivity=sensitivity, relation="add_remove",
                          label=label)
