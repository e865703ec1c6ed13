"""Algorithm 1 (bin aggregation) and the Gaussian releases of Algorithms 1-2.

Given a partition and each row's bin, compute the per-bin count, feature sum
and label sum; release the counts with N(0, 1/mu_c^2) noise, round them, drop
bins whose noisy count is below ``min_count`` (2 in the paper); then release the
kept bins' sums. Noise is drawn as standard normals and scaled here, so tests
can pass their own draws (Corollary 3.1 check).

Feature-sum noise ("noise_scaling"):
  - ``paper``:  coordinate i of s_k gets N(0, Delta_ki^2 / mu_s^2) (Alg. 2 line 3).
    A record can move every coordinate at once, so this release is really
    sqrt(d) * mu_s-GDP (papers/binagg/README.md).
  - ``sqrt_d``: coordinate i gets N(0, d Delta_ki^2 / mu_s^2), which is mu_s-GDP:
    ||diag(sd)^{-1} x||_2 <= mu_s for every x in the bin.

Privacy trace (``dpbench.privacy.draws``): the counts and label sums as Gaussians of their
own sd; the feature sums, whose sd differs per bin and coordinate, as the standardised
statistic s_ki / sd_ki with unit noise, whose L2 sensitivity is what the guarantee rests
on: max_k ||Delta_k / sd_k||_2 = sqrt(d) mu_s (``paper``) or mu_s (``sqrt_d``). Labels
name the bins (partition and kept bins), so two runs are compared only on the same bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.methods.binagg.privtree import NEIGHBOURS, digest
from dpbench.privacy import draws

NOISE_SCALINGS: tuple[str, ...] = ("paper", "sqrt_d")


@dataclass(frozen=True)
class BinSums:
    """Exact (private) per-bin aggregates of the bins kept after the count release."""

    sum_x: NDArray         # (K, d) s_k
    sum_y: NDArray         # (K,)   t_k
    noisy_count: NDArray   # (K,)   c~_k (released)
    sens: NDArray          # (K, d) Delta_k (public: from the boxes)
    kept: NDArray          # indices of the kept bins in the partition


def bin_sums(X: NDArray, y: NDArray, leaf_of: NDArray, n_bins: int) -> tuple[NDArray, NDArray,
                                                                             NDArray]:
    """(c_k, s_k, t_k) for every bin k of a partition."""
    counts = np.bincount(leaf_of, minlength=n_bins).astype(float)
    sx = np.zeros((n_bins, X.shape[1]))
    np.add.at(sx, leaf_of, X)
    sy = np.bincount(leaf_of, weights=y, minlength=n_bins).astype(float)
    return counts, sx, sy


def release_counts(counts: NDArray, mu_c: float, z: NDArray) -> NDArray:
    """c~_k = round(c_k + z_k / mu_c) (Alg. 1 line 5; sensitivity 1)."""
    return np.rint(counts + z / mu_c)


def feature_noise_sd(sens: NDArray, mu_s: float, noise_scaling: str) -> NDArray:
    """Per-bin, per-coordinate sd of the feature-sum noise (see module docstring)."""
    if noise_scaling not in NOISE_SCALINGS:
        raise ValueError(f"noise_scaling={noise_scaling!r}; valid: {', '.join(NOISE_SCALINGS)}")
    factor = np.sqrt(sens.shape[1]) if noise_scaling == "sqrt_d" else 1.0
    return factor * sens / mu_s


def prepare(X: NDArray, y: NDArray, leaf_of: NDArray, sens_all: NDArray, mu_c: float,
            rng: np.random.Generator, *, min_count: float = 2, bins: str = "") -> BinSums:
    """Alg. 1 after binning: noisy counts, discard small bins, exact sums of the rest.

    ``bins`` names the partition in the trace's label (e.g. a digest of its boxes)."""
    counts, sx, sy = bin_sums(X, y, leaf_of, sens_all.shape[0])
    draws.record("gaussian", f"bin counts ({bins})", scale=1.0 / mu_c, sensitivity=1.0,
                 relation=NEIGHBOURS, size=counts.size, value=counts)
    noisy = release_counts(counts, mu_c, rng.standard_normal(counts.shape[0]))
    kept = np.flatnonzero(noisy >= min_count)
    return BinSums(sx[kept], sy[kept], noisy[kept], sens_all[kept], kept)


def record_sums(sums: BinSums, mu_s: float, mu_t: float, y_bound: float, *,
                noise_scaling: str, bins: str, how: str = "") -> None:
    """Trace the sums' release (feature sums standardised, see the module docstring)."""
    sd = feature_noise_sd(sums.sens, mu_s, noise_scaling)
    standard = np.divide(sums.sum_x, sd, out=np.zeros_like(sums.sum_x), where=sd > 0)
    d = sums.sens.shape[1]
    bound = mu_s * (1.0 if noise_scaling == "sqrt_d" else np.sqrt(d))
    kept = f"{bins}, kept {digest(sums.kept)}{how}"
    draws.record("gaussian", f"feature sums / sd ({kept})", scale=1.0, sensitivity=bound,
                 relation=NEIGHBOURS, size=standard.size, value=standard)
    draws.record("gaussian", f"label sums ({kept})", scale=y_bound / mu_t,
                 sensitivity=y_bound, relation=NEIGHBOURS, size=sums.sum_y.size,
                 value=sums.sum_y)


def release_sums(sums: BinSums, mu_s: float, mu_t: float, y_bound: float,
                 z_x: NDArray, z_y: NDArray, *, noise_scaling: str = "paper"
                 ) -> tuple[NDArray, NDArray]:
    """Alg. 2 line 3: s~_k = s_k + sd_k * z_x, t~_k = t_k + (B_y / mu_t) * z_y."""
    sd = feature_noise_sd(sums.sens, mu_s, noise_scaling)
    return sums.sum_x + sd * z_x, sums.sum_y + (y_bound / mu_t) * z_y
