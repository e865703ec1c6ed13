"""Algorithm 1 (bin aggregation) and the Gaussian releases of Algorithms 1-2.

Given a partition and each row's bin, compute the per-bin count, feature sum
and label sum; release the counts with N(0, 1/mu_c^2) noise, round them, drop
bins whose noisy count is below ``min_count`` (2 in the paper); then release the
kept bins' sums. The noise is drawn and recorded by the privacy primitives
(:mod:`dpbench.privacy.noise`); :func:`release_sums` is the same formula with given
standard-normal draws, for tests (Corollary 3.1 check).

Feature-sum noise ("noise_scaling"):
  - ``paper``:  coordinate i of s_k gets N(0, Delta_ki^2 / mu_s^2) (Alg. 2 line 3).
    A record can move every coordinate at once, so this release is really
    sqrt(d) * mu_s-GDP (papers/binagg/README.md).
  - ``sqrt_d``: coordinate i gets N(0, d Delta_ki^2 / mu_s^2), which is mu_s-GDP:
    ||diag(sd)^{-1} x||_2 <= mu_s for every x in the bin.

Privacy trace (``dpbench.privacy.noise`` records it): the counts and label sums as
Gaussians of their own sd; the feature sums, whose sd differs per bin and coordinate, as
the standardised statistic s_ki / sd_ki with unit noise, whose L2 sensitivity is what the
guarantee rests on: max_k ||Delta_k / sd_k||_2 = sqrt(d) mu_s (``paper``) or mu_s
(``sqrt_d``). Labels name the bins (partition and kept bins), so two runs are compared
only on the same bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.methods.binagg.privtree import NEIGHBOURS, digest
from dpbench.privacy import noise

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
    noisy = np.rint(noise.gaussian(counts, 1.0 / mu_c, rng, sensitivity=1.0,
                                   relation=NEIGHBOURS, label=f"bin counts ({bins})",
                                   form="standard"))
    kept = np.flatnonzero(noisy >= min_count)
    return BinSums(sx[kept], sy[kept], noisy[kept], sens_all[kept], kept)


def sums_release(sums: BinSums, mu_s: float, mu_t: float, y_bound: float, *,
                 noise_scaling: str, bins: str, how: str = ""
                 ) -> tuple[tuple[NDArray, NDArray, float, str], tuple[NDArray, float, float,
                                                                       str]]:
    """The sums' two Gaussian releases as (value, sd, L2 sensitivity, trace label): the
    feature sums with their per-bin, per-coordinate sd (sensitivity of the standardised
    sums, see the module docstring), then the label sums."""
    sd = feature_noise_sd(sums.sens, mu_s, noise_scaling)
    d = sums.sens.shape[1]
    bound = float(mu_s * (1.0 if noise_scaling == "sqrt_d" else np.sqrt(d)))
    kept = f"{bins}, kept {digest(sums.kept)}{how}"
    return ((sums.sum_x, sd, bound, f"feature sums / sd ({kept})"),
            (sums.sum_y, y_bound / mu_t, y_bound, f"label sums ({kept})"))


def noisy_sums(sums: BinSums, mu_s: float, mu_t: float, y_bound: float,
               rng: np.random.Generator, *, noise_scaling: str, bins: str
               ) -> tuple[NDArray, NDArray]:
    """Alg. 2 line 3 with fresh noise: (s~_k, t~_k), drawn and recorded by
    :func:`dpbench.privacy.noise.gaussian` (:func:`release_sums` with given draws)."""
    return tuple(noise.gaussian(v, sd, rng, sensitivity=sens, relation=NEIGHBOURS,
                                label=label, form="standard")
                 for v, sd, sens, label in sums_release(sums, mu_s, mu_t, y_bound,
                                                        noise_scaling=noise_scaling,
                                                        bins=bins))


def release_sums(sums: BinSums, mu_s: float, mu_t: float, y_bound: float,
                 z_x: NDArray, z_y: NDArray, *, noise_scaling: str = "paper"
                 ) -> tuple[NDArray, NDArray]:
    """Alg. 2 line 3: s~_k = s_k + sd_k * z_x, t~_k = t_k + (B_y / mu_t) * z_y."""
    sd = feature_noise_sd(sums.sens, mu_s, noise_scaling)
    return sums.sum_x + sd * z_x, sums.sum_y + (y_bound / mu_t) * z_y
