"""mu-GDP facts BinAgg relies on, checked against brute-force numerics (not the code's formulas).

- eps-DP => mu-GDP with mu = pure_to_gdp(eps), and gdp_to_pure inverts it: checked on the
  trade-off curves (Dong, Roth & Su 2022): f_eps(a) = max(0, 1 - e^eps a, e^-eps (1 - a))
  must dominate G_mu(a) = Phi(Phi^-1(1 - a) - mu), with equality at the kink.
- composition sqrt(mu1^2 + mu2^2): the hockey-stick divergence of the 2-D product Gaussian
  pair, integrated on a grid, equals gdp_delta(gdp_compose(mu1, mu2), eps).
- the (eps, delta) <-> mu conversion used for the competitors (delta = n^-1.1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpbench.privacy import gdp_compose, gdp_delta, gdp_eps, gdp_mu, gdp_to_pure, pure_to_gdp


def _hockey_1d(mu: float, eps: float) -> float:
    """delta(eps) of N(0,1) vs N(mu,1) by quadrature of max(0, p - e^eps q)."""
    f = lambda x: max(0.0, stats.norm.pdf(x) - math.exp(eps) * stats.norm.pdf(x - mu))  # noqa: E731
    return integrate.quad(f, -30, 30, points=[mu / 2 + eps / max(mu, 1e-12)], limit=500)[0]


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 2.5])
def test_pure_to_gdp_is_tight_on_tradeoff_curves(eps: float) -> None:
    mu = pure_to_gdp(eps)
    a = np.linspace(1e-6, 1 - 1e-6, 20001)
    f_eps = np.maximum.reduce([np.zeros_like(a), 1 - math.exp(eps) * a,
                               math.exp(-eps) * (1 - a)])
    g_mu = stats.norm.cdf(stats.norm.ppf(1 - a) - mu)
    assert np.all(g_mu <= f_eps + 1e-12)                 # eps-DP => mu-GDP
    kink = 1 / (1 + math.exp(eps))                       # tight at the kink
    assert stats.norm.cdf(stats.norm.ppf(1 - kink) - mu) == pytest.approx(
        math.exp(-eps) * (1 - kink), rel=1e-9)
    g_more = stats.norm.cdf(stats.norm.ppf(1 - a) - 0.999 * mu)
    assert np.any(g_more > f_eps)                        # any smaller mu would be false


@pytest.mark.parametrize("mu", [0.01, 0.1889822365046136, 0.5, 1.0, 3.0])
def test_gdp_to_pure_inverts_pure_to_gdp(mu: float) -> None:
    eps = gdp_to_pure(mu)
    assert pure_to_gdp(eps) == pytest.approx(mu, rel=1e-12)
    # closed form eps = logit(Phi(mu/2)), evaluated independently
    p = stats.norm.cdf(mu / 2)
    assert eps == pytest.approx(math.log(p / (1 - p)), rel=1e-10)


def test_gdp_to_pure_rejects_bad_mu() -> None:
    with pytest.raises(ValueError, match="mu"):
        gdp_to_pure(-1.0)


@pytest.mark.parametrize("mu,eps", [(1.0, 0.5), (1.0, 2.0), (0.3, 0.1)])
def test_gdp_delta_matches_quadrature(mu: float, eps: float) -> None:
    assert gdp_delta(mu, eps) == pytest.approx(_hockey_1d(mu, eps), rel=1e-7, abs=1e-12)


def test_composition_matches_2d_hockey_stick() -> None:
    # BinAgg's four releases compose as sqrt(sum mu_i^2); check the two-release case
    # by brute force: delta(eps) of N(0,I2) vs N((m1,m2),I2) on a 0.01-spaced grid.
    m1, m2, eps = 0.6, 0.8, 0.7
    g = np.arange(-8, 9, 0.01)
    x, y = np.meshgrid(g, g, indexing="ij")
    p = stats.norm.pdf(x) * stats.norm.pdf(y)
    q = stats.norm.pdf(x - m1) * stats.norm.pdf(y - m2)
    brute = np.maximum(p - math.exp(eps) * q, 0).sum() * 0.01**2
    assert gdp_compose(m1, m2) == pytest.approx(1.0, rel=1e-15)
    assert gdp_delta(gdp_compose(m1, m2), eps) == pytest.approx(brute, rel=1e-4)


@pytest.mark.parametrize("n", [182, 1000, 21263])
def test_mu_equivalent_eps_with_delta_n_pow(n: int) -> None:
    # (eps, delta) methods run at the eps that makes 1-GDP (eps, n^-1.1)-DP (paper Sec. 5.1)
    delta = n**-1.1
    eps = gdp_eps(1.0, delta)
    assert _hockey_1d(1.0, eps) == pytest.approx(delta, rel=1e-6)
    assert gdp_mu(eps, delta) == pytest.approx(1.0, rel=1e-9)
