"""The private release: one Gaussian on the summed degree-2 PASS-GLM statistics.

sigma comes from the analytic Gaussian mechanism (Balle & Wang 2018) at the
trial's (epsilon, delta) and the lemma's sensitivity. The ledger is charged
in GDP: a Gaussian with sensitivity Delta and sd sigma is (Delta/sigma)-GDP,
and Balle & Wang's condition is exactly "(Delta/sigma)-GDP is (eps, delta)-DP",
so the ledger re-derives the spent (epsilon, delta) from (Delta, sigma)
instead of taking the method's word for it.

Records outside the public bounds (``||x|| > R``, or for Poisson ``y > R_y``):
the paper filters them out. ``outside="drop"`` does that by leaving them out
of the sums while the public N stays the dataset size (dropping is the same
as replacing the record by x = 0, so the sensitivity is unchanged and the
kept count, which is data-dependent, is never used). ``outside="clip"``
rescales x to norm R and clips y to R_y instead. Our loaders emit records
inside the bounds, so in the experiments nothing is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.methods.bayes import stats
from dpbench.methods.bayes.sensitivity import sensitivity
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_analytic

OUTSIDE = ("drop", "clip")
#: the lemmas' neighbouring relation: one record replaced, N public
NEIGHBOURS = "replace_one"


@dataclass(frozen=True)
class NoisyStatistics:
    """What the aggregator publishes: z = sum_i t(x_i, y_i) + N(0, sigma^2 I), and N."""

    glm: str
    z: NDArray
    sigma: float
    n: int
    d: int
    sensitivity: float
    n_outside: int  # diagnostic only (not used by inference)


def labels_pm1(y: NDArray) -> NDArray:
    """Logistic labels as -1/+1 (accepts {0, 1} or {-1, +1})."""
    y = np.asarray(y, dtype=float)
    values = set(np.unique(y).tolist())
    if values <= {-1.0, 1.0}:
        return y
    if values <= {0.0, 1.0}:
        return 2 * y - 1
    raise ValueError(f"logistic labels must be in {{0, 1}} or {{-1, +1}}, got {sorted(values)[:5]}")


def counts(y: NDArray) -> NDArray:
    """Poisson targets as non-negative integer counts (as floats)."""
    y = np.asarray(y, dtype=float)
    if np.any(y < 0) or np.any(y != np.round(y)):
        raise ValueError("poisson targets must be non-negative integers")
    return y


def bound_records(glm: str, X: NDArray, y: NDArray, R: float, R_y: float,
                  outside: str) -> tuple[NDArray, NDArray, int]:
    """Apply the public bounds; returns (X, y, number of records outside them)."""
    if outside not in OUTSIDE:
        raise ValueError(f"outside={outside!r} is invalid; valid: {', '.join(OUTSIDE)}")
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    bad = norms > R
    if glm == "poisson":
        bad = bad | (y > R_y)
    if outside == "drop":
        return X[~bad], y[~bad], int(bad.sum())
    scale = np.minimum(1.0, R / np.maximum(norms, 1e-300))
    y = np.minimum(y, R_y) if glm == "poisson" else y
    return X * scale[:, None], y, int(bad.sum())


def release(glm: str, X: NDArray, y: NDArray, accountant: Accountant, rng: np.random.Generator,
            *, R: float = 1.0, R_y: float = 5.0, outside: str = "drop") -> NoisyStatistics:
    """Release the noisy statistics under the whole (epsilon, delta) of ``accountant``."""
    stats.check_glm(glm)
    y = labels_pm1(y) if glm == "logistic" else counts(y)
    n, d = np.asarray(X).shape
    Xb, yb, n_out = bound_records(glm, X, y, R, R_y, outside)
    delta_f = sensitivity(glm, R, R_y)
    sigma = sigma_analytic(accountant.epsilon, accountant.delta, delta_f)
    accountant.charge_gaussian(delta_f, sigma, f"bayesglm {glm} degree-2 statistics")
    s = stats.per_record(glm, Xb, yb).sum(axis=0) if len(yb) else np.zeros(
        len(stats.components(glm, d)))
    z = noise.gaussian(s, sigma, rng, sensitivity=delta_f, relation=NEIGHBOURS,
                       label=f"bayesglm {glm} degree-2 statistics")
    return NoisyStatistics(glm, z, float(sigma), int(n), int(d), float(delta_f), n_out)
