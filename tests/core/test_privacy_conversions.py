"""zCDP / mu-GDP / pure-DP conversions against independent computations.

Ground truth: grid search over the CKS'20 bound, scipy quadrature of the
Gaussian privacy-loss distribution, closed forms from the papers and published
numbers (cited). Nothing is compared with dpbench's own output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _privacy_reference import brute_cdp_log_delta, bw_delta, bw_delta_mp, classic_cdp_eps
from scipy import integrate, stats

from dpbench.privacy import (
    cdp_delta,
    cdp_eps,
    cdp_rho,
    gdp_compose,
    gdp_delta,
    gdp_eps,
    gdp_mu,
    pure_to_gdp,
)

RHOS = [1e-4, 0.01, 1 / 32, 0.1, 1.0, 5.0]
EPSILONS = [0.0, 0.1, 0.5, 1.0, 3.0, 10.0]
DELTAS = [1e-10, 1e-5, 1e-3, 0.1]

# ----------------------------------------------------------------------------- zCDP


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_cdp_delta_matches_grid_minimisation(rho, eps):
    """cdp_delta is the CKS'20 minimum: never above the grid minimum (it is an exact
    minimiser) and within 1e-4 (relative) below it (the grid spacing)."""
    ref = brute_cdp_log_delta(rho, eps)
    got = cdp_delta(rho, eps)
    if ref >= 0:  # the bound is vacuous: delta is capped at 1
        assert got == 1.0
        return
    if ref < -700:  # underflows to 0 in double precision
        assert got < 1e-300
        return
    assert math.log(got) <= ref + 1e-9
    assert math.log(got) >= ref + math.log1p(-1e-4)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_cdp_eps_is_tighter_than_classic_bound(rho, delta):
    """The exact conversion beats Bun & Steinke's rho + 2 sqrt(rho log 1/delta) and
    attains delta (checked with the grid bound, not with cdp_delta)."""
    eps = cdp_eps(rho, delta)
    classic = classic_cdp_eps(rho, delta)
    assert 0 <= eps < classic
    if eps > 0:
        assert brute_cdp_log_delta(rho, eps) == pytest.approx(math.log(delta), abs=1e-4)
        # a slightly smaller epsilon must not be valid
        assert brute_cdp_log_delta(rho, eps * (1 - 1e-3)) > math.log(delta)


# to 1e5: ten times the largest target a trial may have (runner.execute.MAX_EPSILON)
@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 1.0, 2.0, 10.0, 1e3, 1e4, 1e5])
@pytest.mark.parametrize("delta", DELTAS)
def test_cdp_rho_eps_round_trip(eps, delta):
    rho = cdp_rho(eps, delta)
    assert cdp_eps(rho, delta) == pytest.approx(eps, rel=1e-9)
    assert cdp_rho(cdp_eps(rho, delta), delta) == pytest.approx(rho, rel=1e-9)
    # The classic bound's rho solves rho + 2 sqrt(rho L) = eps: sqrt(rho) = sqrt(L + eps) - sqrt(L).
    ln = math.log(1 / delta)
    assert rho > (math.sqrt(ln + eps) - math.sqrt(ln)) ** 2


def test_cdp_published_values():
    """OpenDP's test of its CKS'20 conversion (opendp/opendp,
    rust/src/combinators/measure_cast/zCDP_to_approxDP/test.rs, test
    test_zCDP_to_approxDP_nontrivial): Gaussian with scale 4, sensitivity 1, so
    rho = (1/4)^2 / 2, has epsilon(delta=1e-3) = 0.6880024554878086 and
    delta(epsilon=0) = 0.1508457845622862."""
    rho = 0.25**2 / 2
    assert cdp_eps(rho, 1e-3) == pytest.approx(0.6880024554878086, rel=1e-9)
    assert cdp_delta(rho, 0.0) == pytest.approx(0.1508457845622862, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 3.0])
def test_cdp_delta_is_valid_for_the_gaussian_mechanism(sigma, eps):
    """N(0, s^2) with sensitivity 1 is exactly 1/(2 s^2)-zCDP, so the zCDP bound must be
    at least its exact delta (Balle & Wang's closed form)."""
    assert cdp_delta(1 / (2 * sigma**2), eps) >= bw_delta(1 / sigma, eps)


def test_cdp_monotone_and_edge_cases():
    eps = np.linspace(0, 5, 41)
    d = [cdp_delta(0.1, e) for e in eps]
    assert all(a >= b for a, b in zip(d, d[1:], strict=False))
    r = [cdp_delta(x, 1.0) for x in [0.01, 0.05, 0.1, 0.5]]
    assert all(a <= b for a, b in zip(r, r[1:], strict=False))
    assert cdp_delta(0.0, 1.0) == 0.0 and cdp_eps(0.0, 1e-5) == 0.0
    for bad in [-1.0, math.nan, math.inf, "1"]:
        with pytest.raises(ValueError, match="rho="):
            cdp_eps(bad, 1e-5)
    for bad in [0.0, 1.0, -1e-5, math.nan]:
        with pytest.raises(ValueError, match="delta="):
            cdp_rho(1.0, bad)
    with pytest.raises(ValueError, match="epsilon="):
        cdp_rho(0.0, 1e-5)


# ----------------------------------------------------------------------------- GDP


def _quad_gdp_delta(mu: float, eps: float) -> float:
    """delta(eps) = E_P[(1 - e^{eps - L})_+] for P = N(0,1), Q = N(mu,1), with privacy loss
    L(x) = log p(x)/q(x) = mu^2/2 - mu x; the integrand is 0 for x >= (mu^2/2 - eps)/mu."""
    x_star = (mu**2 / 2 - eps) / mu

    def integrand(x):
        loss = mu**2 / 2 - mu * x
        return stats.norm.pdf(x) * -math.expm1(eps - loss)

    val, err = integrate.quad(integrand, -np.inf, x_star, epsabs=0, epsrel=1e-11, limit=200)
    return val


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 2.0, 5.0])
def test_gdp_delta_matches_privacy_loss_quadrature(mu, eps):
    ref = _quad_gdp_delta(mu, eps)
    assert gdp_delta(mu, eps) == pytest.approx(ref, rel=1e-7, abs=1e-300)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
def test_gdp_delta_at_zero_is_total_variation(mu):
    """Dong-Roth-Su 2022: delta(0) of mu-GDP is TV(N(0,1), N(mu,1)) = 2 Phi(mu/2) - 1."""
    assert gdp_delta(mu, 0.0) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-12)


def test_gdp_published_value():
    """apple/pfl-research, tests/privacy/test_compute_parameters.py: the analytic Gaussian
    mechanism for (eps, delta) = (2.25, 0.00040834087), sensitivity 1 has sigma = sqrt(2)
    ("from an implementation entirely independent of the paper"), i.e. 1/sqrt(2)-GDP
    has delta(2.25) = 0.00040834087 (printed to 8 significant digits)."""
    assert gdp_delta(1 / math.sqrt(2), 2.25) == pytest.approx(0.00040834087, rel=1e-7)
    assert gdp_mu(2.25, 0.00040834087) == pytest.approx(1 / math.sqrt(2), rel=1e-6)


# to 1e5: ten times the largest target a trial may have (runner.execute.MAX_EPSILON)
@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 1.0, 2.0, 10.0, 1e3, 1e4, 1e5])
@pytest.mark.parametrize("delta", DELTAS)
def test_gdp_mu_eps_round_trip(eps, delta):
    mu = gdp_mu(eps, delta)
    assert bw_delta_mp(mu, eps) == pytest.approx(delta, rel=1e-6)
    assert bw_delta_mp(mu * (1 + 1e-4), eps) > delta  # mu is the largest valid one
    assert gdp_eps(mu, delta) == pytest.approx(eps, rel=1e-9)
    assert gdp_mu(gdp_eps(mu, delta), delta) == pytest.approx(mu, rel=1e-9)


def test_gdp_eps_zero_when_delta_exceeds_total_variation():
    mu = 0.5
    tv = 2 * stats.norm.cdf(mu / 2) - 1
    assert gdp_eps(mu, tv * 1.01) == 0.0
    assert gdp_eps(mu, tv * 0.99) > 0.0


def test_gdp_compose():
    assert gdp_compose(3.0, 4.0) == pytest.approx(5.0)
    assert gdp_compose(*[0.2] * 9) == pytest.approx(0.6)
    assert gdp_compose() == 0.0
    with pytest.raises(ValueError, match="mu="):
        gdp_compose(1.0, -0.5)


# ----------------------------------------------------------------------------- pure -> GDP


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 5.0])
def test_pure_to_gdp_against_trade_off_functions(eps):
    """Dong-Roth-Su 2022: eps-DP has trade-off f(a) = max(0, 1 - e^eps a, e^-eps (1 - a));
    mu-GDP has G_mu(a) = Phi(Phi^{-1}(1 - a) - mu). pure_to_gdp must give the smallest mu
    with G_mu <= f on all of [0, 1]: checked on a dense grid (which contains the kink
    1/(1+e^eps) only approximately)."""
    mu = pure_to_gdp(eps)
    alpha = np.linspace(0, 1, 200_001)

    def f(a):
        return np.maximum.reduce([np.zeros_like(a), 1 - math.exp(eps) * a,
                                  math.exp(-eps) * (1 - a)])

    def g(a, m):
        return stats.norm.cdf(stats.norm.ppf(1 - a) - m)

    gap = f(alpha) - g(alpha, mu)
    assert gap.min() >= -1e-12  # every eps-DP mechanism is mu-GDP
    assert gap.min() <= 1e-6  # and tight: the curves touch
    assert (f(alpha) - g(alpha, mu * 0.999)).min() < 0  # a smaller mu is not implied
    # closed form at the kink, evaluated directly with scipy.stats
    assert mu == pytest.approx(-2 * stats.norm.ppf(1 / (1 + math.exp(eps))), rel=1e-12)


def test_pure_to_gdp_edges():
    assert pure_to_gdp(0.0) == 0.0
    for bad in [-0.1, math.nan, math.inf]:
        with pytest.raises(ValueError, match="epsilon="):
            pure_to_gdp(bad)


# ------------------------------------------------------------------ rounding to the safe side


@pytest.mark.parametrize("eps", [0.001, 0.003, 0.01, 0.1, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9, 1 / 43944**2])
def test_budgets_round_to_the_safe_side(eps, delta):
    # The largest rho / mu for (eps, delta) never implies more than delta (an absolute root
    # tolerance overspent by 1.5e-9 relative at eps 0.001 before), and is tight: 1e-9 more
    # already implies more than delta.
    rho, mu = cdp_rho(eps, delta), gdp_mu(eps, delta)
    assert cdp_delta(rho, eps) <= delta < cdp_delta(rho * (1 + 1e-9), eps)
    assert gdp_delta(mu, eps) <= delta < gdp_delta(mu * (1 + 1e-9), eps)


@pytest.mark.parametrize("budget", [1e-6, 1e-4, 0.01, 0.1, 1.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9, 1 / 43944**2])
def test_epsilons_round_to_the_safe_side(budget, delta):
    # The smallest epsilon of a spend is never below the true one, and is tight.
    for eps, at in ((cdp_eps(budget, delta), lambda e: cdp_delta(budget, e)),
                    (gdp_eps(budget, delta), lambda e: gdp_delta(budget, e))):
        if eps == 0.0:
            assert at(0.0) <= delta
            continue
        assert at(eps) <= delta < at(eps * (1 - 1e-9))
