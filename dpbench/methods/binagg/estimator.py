"""Algorithm 2 / Theorem 4.2: the bias-corrected weighted least squares estimator
from noisy bin aggregates, its sandwich variance, and the naive estimator.

Inputs are the released quantities only (post-processing): noisy sums S~ (K, d),
t~ (K,), noisy counts c~ (K,), and the per-bin noise variances D_k (K, d) (the
diagonal of Cov(xi_s) for bin k, public because it depends only on the boxes).

Options where the paper is ambiguous (papers/binagg/README.md):
  - ``correction``: ``average`` (paper's printed estimator, subtracts
    D~ = (1/K) sum_k w_k D_k), ``sum`` (what the estimating equation implies,
    subtracts sum_k w_k D_k = K D~) or ``none`` (= naive point estimate).
  - ``quantile``: ``z`` (paper, normal) or ``t`` (Student t with K - d df).
The sandwich Sigma~ = M~^{-1} H~ M~^{-1} is Theorem 4.2 verbatim for every
option (its M~ is the Jacobian of the averaged estimating equation). The paper
says se is "the jth diagonal entry of Sigma~"; we take its square root (the only
reading under which the CI has the right units).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

CORRECTIONS: tuple[str, ...] = ("average", "sum", "none")
QUANTILES: tuple[str, ...] = ("z", "t")


@dataclass(frozen=True)
class Estimate:
    """Point estimate, covariance, standard errors and (1 - alpha) CIs."""

    coef: NDArray
    cov: NDArray
    stderr: NDArray
    ci: NDArray        # (d, 2)
    crit: float        # the quantile used


def critical_value(alpha: float, quantile: str, df: int) -> float:
    """(1 - alpha/2) quantile of N(0,1) ('z') or of t_df ('t')."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    if quantile not in QUANTILES:
        raise ValueError(f"quantile={quantile!r}; valid: {', '.join(QUANTILES)}")
    from scipy import stats  # here: ~0.4 s, and `dpbench list` / `plan` import the method

    if quantile == "z":
        return float(stats.norm.ppf(1 - alpha / 2))
    return float(stats.t.ppf(1 - alpha / 2, df)) if df > 0 else float("inf")


def _solve(A: NDArray, b: NDArray) -> NDArray:
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def _inv(A: NDArray) -> NDArray:
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(A)


def _package(coef: NDArray, cov: NDArray, crit: float) -> Estimate:
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return Estimate(coef, cov, se, np.column_stack([coef - crit * se, coef + crit * se]), crit)


def bias_corrected(S: NDArray, t: NDArray, c: NDArray, D: NDArray, *,
                   correction: str = "average", alpha: float = 0.05,
                   quantile: str = "z") -> Estimate:
    """beta~ = (S~' W~ S~ - corr)^{-1} S~' W~ t~ with the Theorem 4.2 sandwich covariance."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction={correction!r}; valid: {', '.join(CORRECTIONS)}")
    K, d = S.shape
    w = 1.0 / c
    A = S.T @ (w[:, None] * S)
    b = S.T @ (w * t)
    wD = w[:, None] * D                    # rows: w_k diag(D_k)
    d_sum = wD.sum(axis=0)
    shift = {"average": d_sum / K, "sum": d_sum, "none": np.zeros(d)}[correction]
    coef = _solve(A - np.diag(shift), b)
    crit = critical_value(alpha, quantile, K - d)
    if K <= d:
        return _package(coef, np.full((d, d), np.nan), crit)
    M = A / K - np.diag(d_sum / K)
    Q = S * (w * (t - S @ coef))[:, None] + wD * coef[None, :]
    H = Q.T @ Q / (K * (K - d))
    Minv = _inv(M)
    cov = Minv @ H @ Minv
    return _package(coef, (cov + cov.T) / 2, crit)


def naive(S: NDArray, t: NDArray, c: NDArray, *, sigma2: float | None = None,
          alpha: float = 0.05, quantile: str = "z") -> Estimate:
    """Naive WLS on noisy aggregates, Sigma = sigma^2 (S~' W~ S~)^{-1} (Sec. 4.2).

    ``sigma2=None`` estimates sigma^2 by sum_k w_k (t~_k - s~_k' b)^2 / (K - d),
    the residual variance of the aggregated model Var(eta_k) = sigma^2 c_k.
    """
    K, d = S.shape
    w = 1.0 / c
    A = S.T @ (w[:, None] * S)
    coef = _solve(A, S.T @ (w * t))
    crit = critical_value(alpha, quantile, K - d)
    if sigma2 is None:
        sigma2 = float(np.sum(w * (t - S @ coef) ** 2) / (K - d)) if K > d else float("nan")
    return _package(coef, sigma2 * _inv(A), crit)
