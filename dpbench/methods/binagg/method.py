"""BinAgg as dpbench methods: DP regression with CIs (Alg. 1-2) and synthetic data (Alg. 3).

Budget (mu-GDP, Thm 4.1): mu = sqrt(mu_bin^2 + mu_c^2 + mu_s^2 + mu_t^2), split in
the ratio ``ratios`` = (bin, count, feature sums, label sums), 1:3:3:3 by default.
PrivTree is epsilon-DP with epsilon = gdp_to_pure(mu_bin), which is mu_bin-GDP
(Liu et al. 2022, Thm 5.1). Each release is charged to the trial's accountant.

With ``noise_scaling='paper'`` the feature sums are charged at the paper's claimed
mu_s although the release is sqrt(d) mu_s-GDP; ``info()`` reports the actual
total (``mu_actual``). ``noise_scaling='sqrt_d'`` makes the claim true.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.binagg import estimator
from dpbench.methods.binagg.aggregate import (
    NOISE_SCALINGS,
    BinSums,
    feature_noise_sd,
    noisy_sums,
    prepare,
    sums_release,
)
from dpbench.methods.binagg.privtree import NEIGHBOURS, WIDTH_RULES, privtree
from dpbench.methods.binagg.synthetic import SyntheticData, aggregate
from dpbench.methods.outputs import LinearFit, SyntheticTable
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.conversions import gdp_to_pure


def split_budget(mu: float, ratios: tuple[float, ...]) -> tuple[float, float, float, float]:
    """(mu_bin, mu_c, mu_s, mu_t) = mu * r / ||r||_2."""
    r = np.asarray(ratios, dtype=float)
    if r.shape != (4,) or np.any(r <= 0):
        raise ValueError(f"ratios={tuple(ratios)!r} must be 4 positive numbers (bin, count, x, y)")
    b, c, s, t = (mu * r / np.linalg.norm(r)).tolist()
    return b, c, s, t


def public_box(data: TabularData) -> tuple[NDArray, NDArray, float, float]:
    """Per-feature [lower, upper] and label range from the data's public bounds."""
    if data.x_range is None:
        raise ValueError("BinAgg needs per-feature bounds: set TabularData.x_range")
    xr = np.asarray(data.x_range, dtype=float)
    if xr.shape != (data.d, 2):
        raise ValueError(f"x_range has shape {xr.shape}, expected ({data.d}, 2)")
    y_lo, y_hi = data.y_range if data.y_range is not None else (-data.y_bound, data.y_bound)
    return xr[:, 0], xr[:, 1], float(y_lo), float(y_hi)


class BinAgg(LinearModel):
    """Bias-corrected DP weighted least squares over PrivTree bins (Alg. 1-2, Thm 4.2).

    Fitted: ``coef_``, ``stderr_``, ``ci_`` (d, 2); the naive estimator's
    ``naive_coef_``, ``naive_stderr_``, ``naive_ci_``; ``n_bins_``.
    """

    accounting = "gdp"
    neighbours = NEIGHBOURS
    requires = frozenset({"x_range"})

    def __init__(self, ratios: tuple[float, ...] = (1, 3, 3, 3), theta: float = 0.0,
                 fanout: int = 2, min_count: float = 2, correction: str = "average",
                 noise_scaling: str = "paper", quantile: str = "z", alpha: float = 0.05,
                 naive_sigma2: float | None = None, width: str = "absolute",
                 max_depth: int | None = None) -> None:
        split_budget(1.0, ratios)
        _choice("correction", correction, estimator.CORRECTIONS)
        _choice("noise_scaling", noise_scaling, NOISE_SCALINGS)
        _choice("quantile", quantile, estimator.QUANTILES)
        _choice("width", width, WIDTH_RULES)
        estimator.critical_value(alpha, quantile, 1)
        super().__init__(ratios=tuple(ratios), theta=theta, fanout=fanout, min_count=min_count,
                         correction=correction, noise_scaling=noise_scaling, quantile=quantile,
                         alpha=alpha, naive_sigma2=naive_sigma2, width=width,
                         max_depth=max_depth)

    # -- Alg. 1 + the charges ---------------------------------------------------------
    def _prepare(self, data: TabularData, accountant: Accountant,
                 rng: np.random.Generator) -> BinSums:
        p = self.params
        lo, hi, y_lo, y_hi = public_box(data)
        X = np.clip(data.X, lo, hi)
        y = np.clip(data.y, y_lo, y_hi)
        self.y_bound_ = max(abs(y_lo), abs(y_hi))
        mu_bin, mu_c, self.mu_s_, self.mu_t_ = split_budget(accountant.mu_total, p["ratios"])
        eps_bin = gdp_to_pure(mu_bin)
        accountant.charge_pure(eps_bin, "privtree")
        part, leaf_of = privtree(X, lo, hi, eps_bin, rng, theta=p["theta"],
                                 fanout=p["fanout"], width=p["width"], max_depth=p["max_depth"])
        accountant.charge_gaussian(1.0, 1.0 / mu_c, "bin counts")
        self.bins_key_ = part.key
        sums = prepare(X, y, leaf_of, part.sensitivity(), mu_c, rng, min_count=p["min_count"],
                       bins=self.bins_key_)
        paper = p["noise_scaling"] == "paper"
        mu_s_actual = self.mu_s_ * (math.sqrt(data.d) if paper else 1.0)
        # the paper's accounting claims mu_s; the ledger also records the true sqrt(d) mu_s
        accountant.charge_mu(self.mu_s_, "feature sums" + (
            " (paper's per-coordinate accounting; actual sqrt(d)*mu_s)" if paper else ""),
            actual=mu_s_actual)
        accountant.charge_gaussian(self.y_bound_, self.y_bound_ / self.mu_t_, "label sums")
        self.mu_actual_ = math.sqrt(mu_bin**2 + mu_c**2 + mu_s_actual**2 + self.mu_t_**2)
        self.n_leaves_ = part.n_bins
        self.n_bins_ = int(sums.kept.size)
        self.sums_ = sums
        return sums

    def _noise_var(self, sums: BinSums) -> NDArray:
        """D_k diagonals: the feature-sum noise variances (public)."""
        return feature_noise_sd(sums.sens, self.mu_s_, self.params["noise_scaling"]) ** 2

    def _estimate(self, S: NDArray, t: NDArray, c: NDArray, D: NDArray) -> None:
        p = self.params
        d = S.shape[1]
        if S.shape[0] == 0:
            nan = np.full(d, np.nan)
            self.coef_, self.stderr_, self.ci_ = np.zeros(d), nan, np.full((d, 2), np.nan)
            self.naive_coef_, self.naive_stderr_, self.naive_ci_ = np.zeros(d), nan, self.ci_
            self.crit_ = float("nan")
            return
        est = estimator.bias_corrected(S, t, c, D, correction=p["correction"], alpha=p["alpha"],
                                       quantile=p["quantile"])
        nv = estimator.naive(S, t, c, sigma2=p["naive_sigma2"], alpha=p["alpha"],
                             quantile=p["quantile"])
        self.coef_, self.stderr_, self.ci_, self.crit_ = est.coef, est.stderr, est.ci, est.crit
        self.naive_coef_, self.naive_stderr_, self.naive_ci_ = nv.coef, nv.stderr, nv.ci

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        sums = self._prepare(data, accountant, rng)
        S, t = noisy_sums(sums, self.mu_s_, self.mu_t_, self.y_bound_, rng,
                          noise_scaling=self.params["noise_scaling"], bins=self.bins_key_)
        self._estimate(S, t, sums.noisy_count, self._noise_var(sums))
        return self


    def info(self) -> dict[str, Any]:
        return {"n_bins": self.n_bins_, "n_leaves": self.n_leaves_,
                "mu_actual": self.mu_actual_, "crit": self.crit_}


class BinAggSynth(BinAgg):
    """Alg. 3: DP synthetic data from the same bins; ``synthetic_`` = (X, y).

    ``coef_`` etc. are Alg. 2's estimator computed on the synthetic data's bin
    sums (Corollary 3.1), so the model also serves the regression tasks.
    ``clip_output`` clips synthetic records to the public box (an option; the
    paper does not clip).
    """

    # its synthetic rows serve every task that scores records (Method.tasks_scored)
    produces = (LinearFit, SyntheticTable)

    def __init__(self, clip_output: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.params["clip_output"] = bool(clip_output)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        sums = self._prepare(data, accountant, rng)
        # Alg. 3's records are drawn around the exact sums: each bin's synthetic sum is
        # Alg. 2's release (Corollary 3.1), which is what the primitive records
        releases = sums_release(sums, self.mu_s_, self.mu_t_, self.y_bound_,
                                noise_scaling=self.params["noise_scaling"],
                                bins=self.bins_key_, how="; as synthetic records")
        X, y = (noise.gaussian_spread(v, sd, sums.noisy_count, rng, sensitivity=sens,
                                      relation=NEIGHBOURS, label=label)
                for v, sd, sens, label in releases)
        syn = SyntheticData(X, y, np.repeat(np.arange(sums.noisy_count.size),
                                            sums.noisy_count.astype(np.int64)))
        S, t, c = aggregate(syn, sums.sum_x.shape[0])
        self._estimate(S, t, c, self._noise_var(sums))
        if self.params["clip_output"]:
            lo, hi, y_lo, y_hi = public_box(data)
            syn = SyntheticData(np.clip(syn.X, lo, hi), np.clip(syn.y, y_lo, y_hi), syn.bin_of)
        self.synthetic_ = (syn.X, syn.y)
        self.synthetic_bins_ = syn.bin_of
        return self

    def info(self) -> dict[str, Any]:
        return {**super().info(), "n_synthetic": int(self.synthetic_[1].size)}


def _choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"{name}={value!r}; valid: {', '.join(valid)}")
