"""Non-private maximum-likelihood GLM fit (used only for the paper's prior bound)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy

# scipy (~0.4 s): imported when the method fits, not when `dpbench list` / `plan` reads it
optimize = lazy.module("scipy.optimize")
special = lazy.module("scipy.special")


def mle(glm: str, X: NDArray, y: NDArray) -> NDArray:
    """theta maximising the exact log-likelihood (no intercept); deterministic."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if glm == "logistic":
        def f(th: NDArray) -> tuple[float, NDArray]:
            m = y * (X @ th)
            return -special.log_expit(m).sum(), -(X.T @ (y * special.expit(-m)))
    else:
        def f(th: NDArray) -> tuple[float, NDArray]:
            eta = X @ th
            mu = np.logaddexp(0.0, eta)
            return (mu - y * np.log(mu)).sum(), X.T @ ((1 - y / mu) * special.expit(eta))
    res = optimize.minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B")
    return np.asarray(res.x)
