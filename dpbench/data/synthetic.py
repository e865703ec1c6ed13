"""Synthetic data-generating processes with known truth."""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split, TabularData
from dpbench.data.files import check_fits_memory


def linear_regression(*, rng: np.random.Generator, n: int = 1000, d: int = 5,
                      noise_sd: float = 1.0, n_test: int = 1000,
                      beta_low: float = 1.0, beta_high: float = 2.0,
                      y_bound: float | None = None,
                      y_range: tuple[float, float] | list[float] | None = None,
                      x_upper: float = 1.0, beta_seed: int | None = None) -> Split:
    """BinAgg paper's simulation DGP (Sec. 5.1): X ~ U[0,1]^d, beta ~ U[beta_low, beta_high]^d,
    y = X beta + N(0, noise_sd^2), no intercept.

    Public bounds: every feature lies in [0, ``x_upper``] (``x_upper`` > 1 loosens the bound
    as in the paper's Fig. 2; the data stay in [0, 1]), so ||x||_2 <= sqrt(d) x_upper.
    Label: clipped to ``y_range`` if given (the paper's App. A: (0, 2), (0, 7), (0, 15) for
    d = 1, 5, 10), else to [-y_bound, y_bound] (default d * beta_high + 5 noise_sd).
    ``beta_seed`` fixes beta across trials (drawn from its own generator); by default each
    trial draws its own beta from ``rng``.
    """
    if n < 1 or d < 1 or n_test < 1:
        raise ValueError(f"need n, d, n_test >= 1; got n={n}, d={d}, n_test={n_test}")
    if not x_upper >= 1.0:
        raise ValueError(f"x_upper={x_upper!r} must be >= 1 (the data lie in [0, 1])")
    check_fits_memory(n + n_test, d + 1, f"n={n:,}, n_test={n_test:,}, d={d}")
    beta_rng = rng if beta_seed is None else np.random.default_rng(beta_seed)
    beta = beta_rng.uniform(beta_low, beta_high, size=d)
    if y_range is not None:
        y_lo, y_hi = float(y_range[0]), float(y_range[1])
        if not y_lo < y_hi:
            raise ValueError(f"y_range={list(y_range)!r} must be [low, high] with low < high")
    else:
        yb = float(y_bound if y_bound is not None else d * beta_high + 5 * noise_sd)
        y_lo, y_hi = -yb, yb
    x_range = np.tile([0.0, float(x_upper)], (d, 1))

    def draw(m: int) -> TabularData:
        X = rng.uniform(0.0, 1.0, size=(m, d))
        y = np.clip(X @ beta + rng.normal(0.0, noise_sd, size=m), y_lo, y_hi)
        return TabularData(X=X, y=y, x_bound=float(np.sqrt(d) * x_upper),
                           y_bound=max(abs(y_lo), abs(y_hi)),
                           feature_names=tuple(f"x{j}" for j in range(d)), target="y",
                           truth={"beta": beta}, x_range=x_range, y_range=(y_lo, y_hi))

    return Split(train=draw(n), test=draw(n_test))
