"""Posterior task: a private posterior of theta against the matching non-private one.

The method's :class:`~dpbench.methods.outputs.PosteriorDraws` carries the private draws
and a ``reference()`` giving the matching non-private posterior (exact likelihood, the
method's own prior and sampler, the same training records; the method caches it so every
trial and process that sees the same data gets the same draws).

Metrics: per-coordinate two-sample Kolmogorov-Smirnov distance between the private and
the non-private theta draws (``ks_theta<j>``), their mean and max, posterior means/sds of
both, and R-hat of both.
"""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split
from dpbench.methods.outputs import PosteriorDraws


def ks_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sup_t |F_a(t) - F_b(t)| per column of two sample matrices (n_a, d), (n_b, d)."""
    from scipy.stats import ks_2samp  # here: the CLI imports tasks to plan

    return np.array([ks_2samp(a[:, j], b[:, j]).statistic for j in range(a.shape[1])])


def evaluate(draws: PosteriorDraws, split: Split) -> dict[str, float]:
    """KS distances, means, sds and R-hat of the private vs the reference posterior."""
    del split  # the reference posterior is of the method's own (bounded) training records
    if draws.reference is None:
        raise ValueError("task 'posterior' needs draws with a non-private reference")
    base = draws.reference()
    priv, ref = draws.samples, base.samples
    ks = ks_distances(priv, ref)
    out: dict[str, float] = {"ks_mean": float(ks.mean()), "ks_max": float(ks.max()),
                             "rhat_max": float(np.nanmax(draws.rhat)),
                             "baseline_rhat_max": float(np.nanmax(base.rhat))}
    for j in range(priv.shape[1]):
        out[f"ks_theta{j}"] = float(ks[j])
        out[f"mean_theta{j}"] = float(priv[:, j].mean())
        out[f"baseline_mean_theta{j}"] = float(ref[:, j].mean())
        out[f"sd_theta{j}"] = float(priv[:, j].std())
        out[f"baseline_sd_theta{j}"] = float(ref[:, j].std())
    return out
