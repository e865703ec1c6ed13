"""Downstream utility of synthetic data: train on synthetic, test on real.

The method's output is a ``SyntheticTable`` (X, y) in the data's encoding. Four regressors:
XGBoost, random forest, SVR, MLP (MLP skipped when the real training set has fewer than 500
rows). Library defaults, ``random_state=0``; SVR and MLP standardise the features (fit on
the synthetic data) and train on at most 5,000 synthetic rows (fixed subsample). Which
paper's protocol this follows, and the choices it leaves open, is in that paper's README.

Metrics: ``relmse_<model>`` = MSE / Var(y_test) (= 1 - R^2), ``relmse_y2_<model>`` =
||y^ - y||^2 / ||y||^2 (the relative MSE of the inference task), and ``relmse`` /
``relmse_y2`` = their mean over the models.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split
from dpbench.methods.outputs import SyntheticTable

FIT_CAP = 5000
MLP_MIN_ROWS = 500


def _models(with_mlp: bool) -> dict:
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR
    from xgboost import XGBRegressor

    models = {
        "xgboost": XGBRegressor(random_state=0, n_jobs=1),
        "rf": RandomForestRegressor(random_state=0, n_jobs=1),
        "svr": make_pipeline(StandardScaler(), SVR()),
    }
    if with_mlp:
        models["mlp"] = make_pipeline(StandardScaler(), MLPRegressor(random_state=0,
                                                                     max_iter=500))
    return models


def _capped(X: NDArray, y: NDArray) -> tuple[NDArray, NDArray]:
    if y.size <= FIT_CAP:
        return X, y
    idx = np.sort(np.random.default_rng(0).choice(y.size, FIT_CAP, replace=False))
    return X[idx], y[idx]


def evaluate(model: SyntheticTable, split: Split) -> dict[str, float]:
    """Relative test MSE of four regressors trained on the model's synthetic data."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    Xs, ys = (np.asarray(a, dtype=float) for a in (model.X, model.y))
    Xt, yt = split.test.X, split.test.y
    out: dict[str, float] = {"n_synthetic": float(ys.size)}
    if ys.size < 2:
        return out
    for name, reg in _models(split.train.n >= MLP_MIN_ROWS).items():
        Xf, yf = _capped(Xs, ys) if name in ("svr", "mlp") else (Xs, ys)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            pred = reg.fit(Xf, yf).predict(Xt)
        out[f"relmse_{name}"] = float(np.mean((pred - yt) ** 2) / np.var(yt))
        out[f"relmse_y2_{name}"] = float(np.sum((pred - yt) ** 2) / np.sum(yt**2))
    names = [k for k in out if k.startswith("relmse_") and not k.startswith("relmse_y2_")]
    out["relmse"] = float(np.mean([out[k] for k in names]))
    out["relmse_y2"] = float(np.mean([out[k.replace("relmse_", "relmse_y2_")] for k in names]))
    return out
