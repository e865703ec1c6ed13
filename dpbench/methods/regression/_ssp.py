"""Shared pieces of sufficient-statistic perturbation (SSP) estimators."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


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
