"""Noise primitives (dpbench/privacy/noise.py): distributions checked statistically with
fixed seeds.

Each statistical check states its seed and tolerance; tolerances are several
standard errors wide, and the exponential-mechanism checks also show power by
rejecting the wrong (factor-2-off) distribution.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbench.privacy import noise
from dpbench.privacy.mechanisms import exponential_mechanism_rho

#: what the primitives record with each draw (nothing records here: no trace is active)
REC = {"relation": "add_remove", "label": "test"}


def gaussian_mechanism(value, sigma, rng):
    return noise.gaussian(value, sigma, rng, sensitivity=1.0, **REC)


def laplace_mechanism(value, scale, rng):
    return noise.laplace(value, scale, rng, sensitivity=1.0, **REC)


def symmetric_gaussian_matrix(d, sigma, rng):
    return noise.gaussian_symmetric(np.zeros((d, d)), sigma, rng, sensitivity=1.0, **REC)


def exponential_mechanism(scores, epsilon, sensitivity, rng, *, monotonic=False):
    return noise.exponential(scores, epsilon, sensitivity, rng, monotonic=monotonic, **REC)


def test_laplace_noise_scale():
    """Seed 1, n = 4e5, scale b = 2.5: mean |noise| = b and sd = sqrt(2) b within 1%
    (standard errors ~0.16% and ~0.25%); KS test against Laplace(0, b) at level 1e-3."""
    rng = np.random.default_rng(1)
    b, n, center = 2.5, 400_000, 7.0
    noise = laplace_mechanism(np.full(n, center), b, rng) - center
    assert np.mean(np.abs(noise)) == pytest.approx(b, rel=0.01)
    assert np.std(noise) == pytest.approx(math.sqrt(2) * b, rel=0.01)
    assert stats.kstest(noise, stats.laplace(0, b).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(0, 1.05 * b).cdf).pvalue < 1e-6  # power


def test_gaussian_noise_scale_and_shape():
    """Seed 2, n = 4e5, sigma = 0.7: sample sd within 1% (SE ~0.11%), KS at level 1e-3."""
    rng = np.random.default_rng(2)
    sigma = 0.7
    value = np.arange(400_000, dtype=float).reshape(800, 500)
    out = gaussian_mechanism(value, sigma, rng)
    assert out.shape == value.shape
    noise = (out - value).ravel()
    assert np.std(noise) == pytest.approx(sigma, rel=0.01)
    assert abs(noise.mean()) < 4 * sigma / math.sqrt(noise.size)
    assert stats.kstest(noise, stats.norm(0, sigma).cdf).pvalue > 1e-3


def test_noise_is_reproducible_from_the_generator():
    a = gaussian_mechanism(np.zeros(5), 1.0, np.random.default_rng(9))
    b = gaussian_mechanism(np.zeros(5), 1.0, np.random.default_rng(9))
    assert np.array_equal(a, b)


def test_symmetric_gaussian_matrix():
    """Seed 3, 20,000 draws of a 4x4 matrix with sigma = 1.5: exactly symmetric; every
    diagonal and upper entry has variance sigma^2 within 5% (SE of a variance estimate
    ~1%); distinct upper entries are uncorrelated (|corr| < 0.04, SE ~0.007)."""
    rng = np.random.default_rng(3)
    d, sigma, reps = 4, 1.5, 20_000
    draws = np.stack([symmetric_gaussian_matrix(d, sigma, rng) for _ in range(reps)])
    assert np.array_equal(draws, np.transpose(draws, (0, 2, 1)))
    iu = np.triu_indices(d)
    upper = draws[:, iu[0], iu[1]]  # (reps, d(d+1)/2): diagonal and above
    np.testing.assert_allclose(upper.var(axis=0), sigma**2, rtol=0.05)
    np.testing.assert_allclose(upper.mean(axis=0), 0.0, atol=4 * sigma / math.sqrt(reps))
    corr = np.corrcoef(upper.T)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    assert np.abs(off).max() < 0.04


def _em_frequencies(scores, eps, sens, monotonic, n, seed):
    rng = np.random.default_rng(seed)
    picks = [exponential_mechanism(scores, eps, sens, rng, monotonic=monotonic) for _ in range(n)]
    return np.bincount(picks, minlength=len(scores))


def _em_probs(scores, eps, sens, factor):
    w = np.exp(eps * np.asarray(scores) / (factor * sens))
    return w / w.sum()


@pytest.mark.parametrize("monotonic,factor,wrong", [(False, 2.0, 1.0), (True, 1.0, 2.0)])
def test_exponential_mechanism_frequencies(monotonic, factor, wrong):
    """Seed 4, 20,000 draws, scores (0, 1, 2, 3, 4.5), eps = 1.2, Delta = 1.5: frequencies
    match exp(eps * score / (factor * Delta)) (chi-square p > 1e-3; factor 2, or 1 for the
    monotone variant) and reject the other factor (p < 1e-6)."""
    scores, eps, sens, n = [0.0, 1.0, 2.0, 3.0, 4.5], 1.2, 1.5, 20_000
    counts = _em_frequencies(scores, eps, sens, monotonic, n, seed=4)
    good = stats.chisquare(counts, n * _em_probs(scores, eps, sens, factor))
    bad = stats.chisquare(counts, n * _em_probs(scores, eps, sens, wrong))
    assert good.pvalue > 1e-3
    assert bad.pvalue < 1e-6


def test_exponential_mechanism_edge_cases():
    rng = np.random.default_rng(5)
    scores = [0.0, -np.inf, 3.0, -np.inf]
    picks = {exponential_mechanism(scores, 2.0, 1.0, rng) for _ in range(500)}
    assert picks == {0, 2}  # -inf excludes a candidate
    # eps = 0: uniform over the allowed candidates (seed 5, 6000 draws, chi-square p > 1e-3)
    counts = np.bincount([exponential_mechanism(scores, 0.0, 1.0, rng) for _ in range(6000)],
                         minlength=4)
    assert counts[1] == counts[3] == 0
    assert stats.chisquare(counts[[0, 2]]).pvalue > 1e-3
    # huge scores do not overflow
    assert exponential_mechanism([1e6, 1e6 + 100.0], 1.0, 1.0, rng) == 1


@pytest.mark.parametrize("args,name", [
    (([1.0, 2.0], 1.0, 0.0), "sensitivity="),
    (([1.0, 2.0], -1.0, 1.0), "epsilon="),
    (([1.0, 2.0], math.nan, 1.0), "epsilon="),
    (([1.0, math.nan], 1.0, 1.0), "scores"),
    (([1.0, math.inf], 1.0, 1.0), "scores"),
    (([-math.inf, -math.inf], 1.0, 1.0), "scores"),
    (([], 1.0, 1.0), "scores"),
])
def test_exponential_mechanism_refuses_bad_input(args, name):
    with pytest.raises(ValueError, match=name) as exc:
        exponential_mechanism(*args, np.random.default_rng(0))
    assert "\n" not in str(exc.value)


def test_noise_scales_refuse_nan_and_negative():
    rng = np.random.default_rng(0)
    for fn in (gaussian_mechanism, laplace_mechanism):
        for bad in (math.nan, -1.0, math.inf):
            with pytest.raises(ValueError):
                fn(np.zeros(3), bad, rng)
    with pytest.raises(ValueError, match="sd="):
        symmetric_gaussian_matrix(3, math.nan, rng)


def test_exponential_mechanism_rho():
    """Cesar & Rogers 2021: the eps-DP exponential mechanism is eps^2/8-zCDP."""
    assert exponential_mechanism_rho(2.0) == pytest.approx(0.5)
