"""Exact conversions between zCDP, mu-GDP, pure DP and (epsilon, delta)-DP.

All functions are scalar and deterministic. Roots are found with Brent's
method on monotone functions, so results are accurate to ~1e-12 relative.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

# --------------------------------------------------------------------------- zCDP


def cdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP.

    Canonne, Kamath & Steinke 2020, Prop. 7 (the exact bound used by AIM/MST):
        delta = inf_{a > 1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a.
    """
    if rho < 0 or epsilon < 0:
        raise ValueError(f"need rho >= 0 and epsilon >= 0, got rho={rho}, epsilon={epsilon}")
    if rho == 0:
        return 0.0

    def log_delta(a: float) -> float:
        return (a - 1) * (a * rho - epsilon) + (a - 1) * math.log1p(-1 / a) - math.log(a)

    # The optimum lies at a >= (eps + rho) / (2 rho) + 1 roughly; search a wide bracket.
    a_lo, a_hi = 1.0 + 1e-9, max((epsilon + 1) / (2 * rho) + 2, 2.0) * 4
    res = optimize.minimize_scalar(log_delta, bounds=(a_lo, a_hi), method="bounded",
                                   options={"xatol": 1e-12, "maxiter": 1000})
    return float(min(math.exp(min(res.fun, 0.0)), 1.0))


def cdp_eps(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP."""
    _check_delta(delta)
    if rho == 0:
        return 0.0
    hi = rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1.0  # the classic bound is above
    return float(optimize.brentq(lambda e: cdp_delta(rho, e) - delta, 0.0, hi, xtol=1e-14,
                                 rtol=1e-13)) if cdp_delta(rho, 0.0) > delta else 0.0


def cdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP (inverse of cdp_eps)."""
    _check_eps_delta(epsilon, delta)
    hi = epsilon + 1.0
    while cdp_delta(hi, epsilon) <= delta:
        hi *= 2
    return float(optimize.brentq(lambda r: cdp_delta(r, epsilon) - delta, 0.0, hi, xtol=1e-15,
                                 rtol=1e-13))


# --------------------------------------------------------------------------- GDP


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(eps) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13).

    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), computed in log space.
    """
    if mu < 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    if mu == 0:
        return 0.0
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gdp_eps(mu: float, delta: float) -> float:
    """Smallest epsilon such that mu-GDP implies (epsilon, delta)-DP."""
    _check_delta(delta)
    if mu == 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2
    return float(optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-14,
                                 rtol=1e-13))


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    _check_eps_delta(epsilon, delta)
    hi = 1.0
    while gdp_delta(hi, epsilon) <= delta:
        hi *= 2
    return float(optimize.brentq(lambda m: gdp_delta(m, epsilon) - delta, 1e-12, hi, xtol=1e-15,
                                 rtol=1e-13))


def pure_to_gdp(epsilon: float) -> float:
    """Smallest mu such that every epsilon-DP mechanism is mu-GDP.

    The trade-off curve of epsilon-DP is piecewise linear with its kink at
    alpha* = 1/(1+e^eps); G_mu is convex, so G_mu <= f_eps iff it holds at the
    kink: mu = -2 Phi^{-1}(1/(1+e^eps)) = 2 Phi^{-1}(e^eps/(1+e^eps)).
    """
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    # -2 Phi^{-1}(1/(1+e^eps)) evaluated in log space: stable for large eps
    return float(-2 * special.ndtri_exp(-np.logaddexp(0.0, epsilon)))


def gdp_to_pure(mu: float) -> float:
    """Largest epsilon such that every epsilon-DP mechanism is mu-GDP (inverse of pure_to_gdp).

    mu = 2 Phi^{-1}(e^eps / (1 + e^eps))  <=>  eps = logit(Phi(mu / 2)).
    Used to run an epsilon-DP algorithm (e.g. PrivTree) inside a mu-GDP budget.
    """
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"mu must be finite and >= 0, got {mu}")
    return float(special.log_ndtr(mu / 2) - special.log_ndtr(-mu / 2))


def gdp_compose(*mus: float) -> float:
    """Composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2) (DRS 2022, Cor. 3.3)."""
    return float(np.sqrt(np.sum(np.square(np.asarray(mus, dtype=float)))))


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta!r} is invalid: it must lie in (0, 1)")


def _check_eps_delta(epsilon: float, delta: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon={epsilon!r} is invalid: it must be a finite number > 0")
    _check_delta(delta)
