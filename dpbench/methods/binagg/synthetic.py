"""Algorithm 3: synthetic records from the bin aggregates, and the aggregated
regression on them (Corollary 3.1).

Bin k gets c~_k records x~(k,i) = (s_k + xi_i) / c~_k with xi_i ~ N(0, c~_k sd_k^2)
(sd_k the feature-sum noise sd of Alg. 2) and likewise for the labels. Summing a
bin's records gives s_k + sum_i xi_i / c~_k ~ N(s_k, sd_k^2): exactly Alg. 2's
release, so the regression of Alg. 2 run on the synthetic bin sums *is* a draw
of Alg. 2 (same privacy cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.methods.binagg.aggregate import BinSums, feature_noise_sd


@dataclass(frozen=True)
class SyntheticData:
    """Synthetic records with the (public) bin each one was drawn in."""

    X: NDArray
    y: NDArray
    bin_of: NDArray     # index into the kept bins (0..K-1)


def synthesize(sums: BinSums, mu_s: float, mu_t: float, y_bound: float,
               z_x: NDArray, z_y: NDArray, *, noise_scaling: str = "paper") -> SyntheticData:
    """Alg. 3 with given standard-normal draws z_x (N, d), z_y (N,), N = sum_k c~_k."""
    reps = sums.noisy_count.astype(np.int64)
    bin_of = np.repeat(np.arange(reps.size), reps)
    c = sums.noisy_count[bin_of]
    sd_x = feature_noise_sd(sums.sens, mu_s, noise_scaling)[bin_of]
    X = (sums.sum_x[bin_of] + np.sqrt(c)[:, None] * sd_x * z_x) / c[:, None]
    y = (sums.sum_y[bin_of] + np.sqrt(c) * (y_bound / mu_t) * z_y) / c
    return SyntheticData(X, y, bin_of)


def aggregate(syn: SyntheticData, n_bins: int) -> tuple[NDArray, NDArray, NDArray]:
    """Per-bin (sum of x~, sum of y~, count) of synthetic records (Corollary 3.1)."""
    S = np.zeros((n_bins, syn.X.shape[1]))
    np.add.at(S, syn.bin_of, syn.X)
    t = np.bincount(syn.bin_of, weights=syn.y, minlength=n_bins)
    c = np.bincount(syn.bin_of, minlength=n_bins).astype(float)
    return S, t, c
