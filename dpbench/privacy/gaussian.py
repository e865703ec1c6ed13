"""Calibrating the Gaussian mechanism's noise scale."""

from __future__ import annotations

import math

from dpbench.privacy._checks import check_delta, check_nonneg, check_positive
from dpbench.privacy.conversions import gdp_mu


def sigma_classic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth 2014, Thm A.1: sigma = sqrt(2 ln(1.25/delta)) Delta / eps.

    The theorem is stated for eps < 1; above that it is not a guarantee.
    """
    check_positive(epsilon, "epsilon")
    check_delta(delta)
    check_nonneg(sensitivity, "sensitivity")
    return math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / epsilon


def sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Balle & Wang 2018 analytic Gaussian mechanism: the smallest sigma with
    Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta.

    That condition is exactly (D/sigma)-GDP being (eps, delta)-DP, so
    sigma = Delta / mu*(eps, delta).
    """
    check_nonneg(sensitivity, "sensitivity")
    return sensitivity / gdp_mu(epsilon, delta)


def sigma_zcdp(rho: float, sensitivity: float) -> float:
    """Gaussian noise giving rho-zCDP: sigma = Delta / sqrt(2 rho) (Bun & Steinke 2016)."""
    check_positive(rho, "rho")
    check_nonneg(sensitivity, "sensitivity")
    return sensitivity / math.sqrt(2 * rho)
