"""Exact conversions between zCDP, mu-GDP, pure DP and (epsilon, delta)-DP.

All functions are scalar and deterministic. Roots are found with Brent's
method on monotone functions to ~1e-13 relative (no absolute tolerance, which would
dominate at small budgets), then rounded towards the safe side: a budget returned
(rho, mu) never implies more than the delta asked for, and an epsilon returned is never
below the true one, however the root search landed.

scipy (~0.5 s to import) is imported by the functions that use it: every command imports
this module through the accountant, and planning calls none of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpbench.privacy._checks import check_delta, check_nonneg, check_positive

# --------------------------------------------------------------------------- zCDP


def _safe_side(x: float, ok: Callable[[float], bool], direction: float) -> float:
    """``x`` moved in ``direction`` (+1 / -1) by growing relative steps until ``ok(x)``."""
    step = max(abs(x), 1e-300) * 2.0**-50
    while not ok(x):
        x += direction * step
        step *= 2
    return x


def _root(f: Callable[[float], float], lo: float, hi: float) -> float:
    """Brent's root of monotone ``f`` on [lo, hi], to 1e-13 relative."""
    from scipy import optimize

    return float(optimize.brentq(f, lo, hi, xtol=1e-300, rtol=1e-13, maxiter=500))


def cdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP.

    Canonne, Kamath & Steinke 2020 (arXiv:2004.00010, Sec. 2.3, Cor. 13; the
    bound used by AIM/MST):
        delta = inf_{a > 1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a.
    Every a > 1 gives a valid delta, so an inexact minimiser only errs on the
    safe side.
    """
    check_nonneg(rho, "rho")
    check_nonneg(epsilon, "epsilon")
    if rho == 0:
        return 0.0

    def log_delta(a: float) -> float:
        return (a - 1) * (a * rho - epsilon) + (a - 1) * math.log1p(-1 / a) - math.log(a)

    # The optimum lies at a >= (eps + rho) / (2 rho) + 1 roughly; search a wide bracket.
    a_lo, a_hi = 1.0 + 1e-9, max((epsilon + 1) / (2 * rho) + 2, 2.0) * 4
    from scipy import optimize

    res = optimize.minimize_scalar(log_delta, bounds=(a_lo, a_hi), method="bounded",
                                   options={"xatol": 1e-12, "maxiter": 1000})
    return float(min(math.exp(min(res.fun, 0.0)), 1.0))


def cdp_eps(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP."""
    check_nonneg(rho, "rho")
    check_delta(delta)
    if rho == 0:
        return 0.0
    hi = rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1.0  # the classic bound is above
    if cdp_delta(rho, 0.0) <= delta:
        return 0.0
    eps = _root(lambda e: cdp_delta(rho, e) - delta, 0.0, hi)
    return _safe_side(eps, lambda e: cdp_delta(rho, e) <= delta, +1.0)


def cdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP (inverse of cdp_eps)."""
    check_positive(epsilon, "epsilon")
    check_delta(delta)
    hi = epsilon + 1.0
    while cdp_delta(hi, epsilon) <= delta:
        hi *= 2
    rho = _root(lambda r: cdp_delta(r, epsilon) - delta, 0.0, hi)
    return _safe_side(rho, lambda r: cdp_delta(r, epsilon) <= delta, -1.0)


# --------------------------------------------------------------------------- GDP


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(eps) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13).

    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), computed in log space.
    """
    check_nonneg(mu, "mu")
    check_nonneg(epsilon, "epsilon")
    if mu == 0:
        return 0.0
    from scipy import special

    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gdp_eps(mu: float, delta: float) -> float:
    """Smallest epsilon such that mu-GDP implies (epsilon, delta)-DP."""
    check_nonneg(mu, "mu")
    check_delta(delta)
    if mu == 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2
    eps = _root(lambda e: gdp_delta(mu, e) - delta, 0.0, hi)
    return _safe_side(eps, lambda e: gdp_delta(mu, e) <= delta, +1.0)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    check_positive(epsilon, "epsilon")
    check_delta(delta)
    hi = 1.0
    while gdp_delta(hi, epsilon) <= delta:
        hi *= 2
    mu = _root(lambda m: gdp_delta(m, epsilon) - delta, 1e-12, hi)
    return _safe_side(mu, lambda m: gdp_delta(m, epsilon) <= delta, -1.0)


def pure_to_gdp(epsilon: float) -> float:
    """Smallest mu such that every epsilon-DP mechanism is mu-GDP.

    The trade-off curve of epsilon-DP is piecewise linear with its kink at
    alpha* = 1/(1+e^eps); G_mu is convex, so G_mu <= f_eps iff it holds at the
    kink: mu = -2 Phi^{-1}(1/(1+e^eps)) = 2 Phi^{-1}(e^eps/(1+e^eps)).
    """
    check_nonneg(epsilon, "epsilon")
    from scipy import special

    # -2 Phi^{-1}(1/(1+e^eps)) evaluated in log space: stable for large eps
    return float(-2 * special.ndtri_exp(-np.logaddexp(0.0, epsilon)))


def gdp_to_pure(mu: float) -> float:
    """Largest epsilon such that every epsilon-DP mechanism is mu-GDP (inverse of pure_to_gdp).

    mu = 2 Phi^{-1}(e^eps / (1 + e^eps))  <=>  eps = logit(Phi(mu / 2)).
    Used to run an epsilon-DP algorithm (e.g. PrivTree) inside a mu-GDP budget.
    """
    check_nonneg(mu, "mu")
    from scipy import special

    return float(special.log_ndtr(mu / 2) - special.log_ndtr(-mu / 2))


def gdp_compose(*mus: float) -> float:
    """Composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2) (DRS 2022, Cor. 3.3)."""
    for m in mus:
        check_nonneg(m, "mu")
    return float(np.sqrt(np.sum(np.square(np.asarray(mus, dtype=float)))))
