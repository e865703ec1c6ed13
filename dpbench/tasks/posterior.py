"""Posterior task (Kulkarni et al., Figs. 3-6): private vs non-private posterior of theta.

The non-private posterior (exact likelihood, the method's own prior and
sampler settings) is computed here for the same training records, cached
under ``results/cache/posterior/`` by a fingerprint of the data and settings,
and sampled with a key derived from that fingerprint, so every trial and
process that sees the same data gets the same baseline draws.

Metrics: per-coordinate two-sample Kolmogorov-Smirnov distance between the
private and the non-private theta draws (``ks_theta<j>``), their mean and max,
posterior means/sds of both, and R-hat of both. Quantiles of both posteriors
go to the method's ``info()`` (JSON strings) for the ECDF / density figures.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import ks_2samp

from dpbench.data.base import Split
from dpbench.methods.base import Method


def ks_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sup_t |F_a(t) - F_b(t)| per column of two sample matrices (n_a, d), (n_b, d)."""
    return np.array([ks_2samp(a[:, j], b[:, j]).statistic for j in range(a.shape[1])])


def evaluate(model: Method, split: Split) -> dict[str, float]:
    if not hasattr(model, "baseline_spec") or not hasattr(model, "samples_"):
        raise ValueError(f"task 'posterior' needs a posterior method (NoiseAwareGLM), "
                         f"got {type(model).__name__}")
    from dpbench.methods.bayes.baseline import nonprivate_posterior  # imports JAX: lazily

    X, y = model.bounded(split.train)
    base = nonprivate_posterior(X, y, model.baseline_spec())
    model.attach_baseline(base)
    priv, ref = model.samples_, base.flat
    ks = ks_distances(priv, ref)
    out: dict[str, float] = {"ks_mean": float(ks.mean()), "ks_max": float(ks.max()),
                             "rhat_max": float(np.nanmax(model.draws_.rhat)),
                             "baseline_rhat_max": float(np.nanmax(base.rhat))}
    for j in range(priv.shape[1]):
        out[f"ks_theta{j}"] = float(ks[j])
        out[f"mean_theta{j}"] = float(priv[:, j].mean())
        out[f"baseline_mean_theta{j}"] = float(ref[:, j].mean())
        out[f"sd_theta{j}"] = float(priv[:, j].std())
        out[f"baseline_sd_theta{j}"] = float(ref[:, j].std())
    return out
