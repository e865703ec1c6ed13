"""Noise primitives. Each takes an explicit numpy Generator: no global state."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbench.privacy._checks import check_nonneg, check_positive


def gaussian_mechanism(value: ArrayLike, sigma: float, rng: np.random.Generator) -> NDArray:
    """value + N(0, sigma^2) noise, elementwise."""
    sigma = check_nonneg(sigma, "sigma")
    v = np.asarray(value, dtype=float)
    return v + rng.normal(0.0, sigma, size=v.shape)


def laplace_mechanism(value: ArrayLike, scale: float, rng: np.random.Generator) -> NDArray:
    """value + Laplace(0, scale) noise, elementwise (scale = sensitivity / eps for eps-DP)."""
    scale = check_nonneg(scale, "scale")
    v = np.asarray(value, dtype=float)
    return v + rng.laplace(0.0, scale, size=v.shape)


def symmetric_gaussian_matrix(d: int, sigma: float, rng: np.random.Generator) -> NDArray:
    """Symmetric d x d noise: upper triangle (with diagonal) iid N(0, sigma^2), mirrored."""
    sigma = check_nonneg(sigma, "sigma")
    z = rng.normal(0.0, sigma, size=(d, d))
    upper = np.triu(z)
    return upper + np.triu(z, 1).T


def exponential_mechanism(scores: ArrayLike, epsilon: float, sensitivity: float,
                          rng: np.random.Generator, *, monotonic: bool = False) -> int:
    """Sample index i with probability proportional to exp(eps * score_i / (2 Delta)).

    With ``monotonic=True`` the factor 2 is dropped (McSherry & Talwar 2007,
    valid for scores monotone in the data). Sampling uses the Gumbel-max trick
    on the log-weights, which is exact and numerically stable. A score of
    -inf excludes a candidate; nan and +inf scores are refused.
    """
    epsilon = check_nonneg(epsilon, "epsilon")
    sensitivity = check_positive(sensitivity, "sensitivity")
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-d array, got shape {s.shape}")
    if np.isnan(s).any() or np.isposinf(s).any() or not np.isfinite(s).any():
        raise ValueError(f"scores must be finite or -inf with at least one finite, got {s}")
    factor = 1.0 if monotonic else 2.0
    if epsilon == 0:  # uniform over the candidates that are not excluded (avoids 0 * -inf)
        logits = np.where(np.isfinite(s), 0.0, -np.inf)
    else:
        logits = epsilon * (s - s.max()) / (factor * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=s.shape)))


def exponential_mechanism_rho(epsilon: float) -> float:
    """zCDP cost of the exponential mechanism with parameter epsilon: eps^2 / 8
    (Cesar & Rogers 2021, bounded-range analysis, as used by AIM)."""
    return check_nonneg(epsilon, "epsilon") ** 2 / 8
