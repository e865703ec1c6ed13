"""Statistical check of Table 1 (BinAgg paper): CI coverage at d=5, n=1000, mu=1.

CI-sized version: 1,000 replications (seed 2026, beta fixed from seed 0) instead of the
paper's 2,000; the full 2,000-rep run is the `binagg_ci` experiment (papers/binagg/README.md).
Tolerances: coverage of the bias-corrected 95% CI in [0.92, 0.98] for every coefficient
(+-4.3 binomial sd at 1,000 reps); naive CI (sigma^2 = 1 known, as in the paper's
simulation) below 0.85; empirical SD within 15% of the mean sandwich SE (the SD of a
1,000-sample SD is ~2.2%). A wrong variance (e.g. H without the D_k term, or the naive
plug-in) or a missing bias correction fails these.
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.binagg import BinAgg
from dpbench.privacy import Accountant, gdp_eps

D, N, REPS = 5, 1000, 1000


def _replicate(beta: np.ndarray, rng: np.random.Generator) -> BinAgg:
    X = rng.uniform(0, 1, (N, D))
    y = np.clip(X @ beta + rng.normal(size=N), 0, 7)      # paper: y bound (0, 7) for d = 5
    data = TabularData(X, y, math.sqrt(D), 7.0, tuple(f"x{j}" for j in range(D)), "y",
                       x_range=np.tile([0.0, 1.0], (D, 1)), y_range=(0.0, 7.0))
    delta = N**-1.1
    ledger = Accountant(gdp_eps(1.0, delta), delta, currency="gdp")
    return BinAgg(naive_sigma2=1.0).fit(data, ledger, rng)


def test_table1_coverage_statistically() -> None:
    beta = np.random.default_rng(0).uniform(1, 2, D)
    rng = np.random.default_rng(2026)
    fits = [_replicate(beta, rng) for _ in range(REPS)]
    err = np.array([m.coef_ - beta for m in fits])
    se = np.array([m.stderr_ for m in fits])
    nerr = np.array([m.naive_coef_ - beta for m in fits])
    nse = np.array([m.naive_stderr_ for m in fits])
    z = 1.959963984540054
    cover = (np.abs(err) <= z * se).mean(axis=0)
    naive_cover = (np.abs(nerr) <= z * nse).mean(axis=0)
    ratio = err.std(axis=0, ddof=1) / se.mean(axis=0)
    assert np.all((cover >= 0.92) & (cover <= 0.98)), cover
    assert np.all(naive_cover < 0.85), naive_cover
    assert np.all(np.abs(ratio - 1) < 0.15), ratio
