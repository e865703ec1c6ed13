"""Inference metrics of a linear fit (per trial; the report aggregates over trials).

- ``est_error`` = ||b~ - b|| / ||b|| when the data carry the true beta;
- ``relmse`` = ||X b~ - y||^2 / ||y||^2 on the test split (in-sample when the
  loader's test split is the training data);
- per coefficient j (fits with ``intervals``): ``coef_j``, ``bias_j`` = b~_j - b_j,
  ``se_j``, ``covered_j`` (b_j inside the CI), ``width_j``; the same with ``naive_`` for
  the naive CI (``LinearFit.naive``). Over trials, the mean of bias_j, the SD of coef_j,
  the mean of se_j and of covered_j give average bias, empirical SD, average theoretical SD
  and coverage.
- fits with a ``grid`` (a method tuned over a grid of configurations) also get ``grid_relmse_i`` and
  ``grid_est_error_i`` per configuration i, so a report can pick the best average.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split
from dpbench.methods.outputs import Intervals, LinearFit


def relmse(X: NDArray, y: NDArray, coef: NDArray) -> float:
    """||X coef - y||^2 / ||y||^2 (the paper's RelMSE)."""
    return relmse_of(X @ coef, y)


def relmse_of(pred: NDArray, y: NDArray) -> float:
    """||pred - y||^2 / ||y||^2 for given predictions (a fit's ``decision_function``)."""
    return float(np.sum((pred - y) ** 2) / np.sum(y**2))


def est_error(coef: NDArray, beta: NDArray) -> float:
    """||coef - beta|| / ||beta||."""
    return float(np.linalg.norm(coef - beta) / np.linalg.norm(beta))


def _ci_metrics(prefix: str, iv: Intervals, beta: NDArray | None) -> dict[str, float]:
    coef, ci, se = iv.coef, iv.ci, iv.stderr
    out: dict[str, float] = {}
    for j in range(coef.size):
        out[f"{prefix}coef_{j}"] = float(coef[j])
        out[f"{prefix}se_{j}"] = float(se[j])
        out[f"{prefix}width_{j}"] = float(ci[j, 1] - ci[j, 0])
        if beta is not None:
            out[f"{prefix}bias_{j}"] = float(coef[j] - beta[j])
            out[f"{prefix}covered_{j}"] = float(ci[j, 0] <= beta[j] <= ci[j, 1])
    return out


def evaluate(model: LinearFit, split: Split) -> dict[str, float]:
    """Estimation error, RelMSE and CI metrics of a fitted linear model."""
    coef = np.asarray(model.coef)
    beta = split.train.truth.get("beta")
    out = {"relmse": relmse_of(model.decision_function(split.test.X), split.test.y)}
    if beta is not None:
        out["est_error"] = est_error(coef, np.asarray(beta))
    if model.intervals is not None:
        out.update(_ci_metrics("", model.intervals, beta))
    if model.naive is not None:
        out.update(_ci_metrics("naive_", model.naive, beta))
    grid = model.grid
    if grid is not None:
        for i, g in enumerate(grid):
            ok = bool(np.all(np.isfinite(g)))
            out[f"grid_relmse_{i}"] = relmse(split.test.X, split.test.y, g) if ok else np.nan
            if beta is not None:
                out[f"grid_est_error_{i}"] = est_error(g, np.asarray(beta)) if ok else np.nan
    return out
