"""Synthetic data-generating processes with known truth."""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split, TabularData


def linear_regression(*, rng: np.random.Generator, n: int = 1000, d: int = 5,
                      noise_sd: float = 1.0, n_test: int = 1000,
                      beta_low: float = 1.0, beta_high: float = 2.0,
                      y_bound: float | None = None) -> Split:
    """BinAgg paper's simulation DGP (Sec. 6.1): X ~ U[0,1]^d, beta ~ U[beta_low, beta_high]^d,
    y = X beta + N(0, noise_sd^2), no intercept.

    Public bounds: ||x||_2 <= sqrt(d); |y| <= ``y_bound`` (default
    d * beta_high + 5 noise_sd), y is clipped to it so the bound holds.
    """
    if n < 1 or d < 1 or n_test < 1:
        raise ValueError(f"need n, d, n_test >= 1; got n={n}, d={d}, n_test={n_test}")
    beta = rng.uniform(beta_low, beta_high, size=d)
    yb = float(y_bound if y_bound is not None else d * beta_high + 5 * noise_sd)

    def draw(m: int) -> TabularData:
        X = rng.uniform(0.0, 1.0, size=(m, d))
        y = np.clip(X @ beta + rng.normal(0.0, noise_sd, size=m), -yb, yb)
        return TabularData(X=X, y=y, x_bound=float(np.sqrt(d)), y_bound=yb,
                           feature_names=tuple(f"x{j}" for j in range(d)), target="y",
                           truth={"beta": beta})

    return Split(train=draw(n), test=draw(n_test))
