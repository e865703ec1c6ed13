"""Reference privacy computations written from the papers, independent of dpbench.

Used by the privacy tests as ground truth. Nothing here imports dpbench: each
function re-derives its quantity from the published formula with plain
numpy/scipy, in a different form from the library code where possible.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

# Dense log grid of (alpha - 1) for the zCDP -> (eps, delta) bound.
_ALPHA_M1 = np.logspace(-6, 7, 400_001)


def brute_cdp_log_delta(rho: float, eps: float) -> float:
    """log delta of Canonne-Kamath-Steinke 2020 (arXiv:2004.00010, Cor. 13) by grid search.

    delta(alpha) = exp((alpha-1)(alpha rho - eps)) / (alpha-1) * (1 - 1/alpha)^alpha,
    minimised over a dense grid of alpha in (1 + 1e-6, 1 + 1e7) (not clipped at 1).
    """
    am1 = _ALPHA_M1
    a = 1.0 + am1
    log_d = am1 * (a * rho - eps) - np.log(am1) + a * np.log(am1 / a)
    return float(log_d.min())


def classic_cdp_eps(rho: float, delta: float) -> float:
    """Bun & Steinke 2016, Prop. 1.3: rho-zCDP => (rho + 2 sqrt(rho log(1/delta)), delta)-DP."""
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def bw_delta(mu: float, eps: float) -> float:
    """Balle & Wang 2018, Thm 8 / Dong-Roth-Su 2022, Cor. 2.13 with plain scipy.stats:
    the exact delta(eps) of a Gaussian mechanism with sensitivity/sigma = mu."""
    phi = stats.norm.cdf
    return float(phi(mu / 2 - eps / mu) - math.exp(eps) * phi(-mu / 2 - eps / mu))


def bw_delta_mp(mu: float, eps: float) -> float:
    """:func:`bw_delta` in 60-digit arithmetic (mpmath): e^eps does not overflow, so it
    holds for the largest budgets too."""
    import mpmath

    with mpmath.workdps(60):
        mu_, eps_ = mpmath.mpf(mu), mpmath.mpf(eps)
        return float(mpmath.ncdf(mu_ / 2 - eps_ / mu_)
                     - mpmath.exp(eps_) * mpmath.ncdf(-mu_ / 2 - eps_ / mu_))


def bisect_sigma(eps: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma meeting Balle & Wang's Thm 8 condition, by plain bisection on log sigma.

    delta_BW(sigma) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) is
    decreasing in sigma; 200 halvings of [1e-6, 1e6] D reach machine precision.
    """
    lo, hi = math.log(1e-6 * sensitivity), math.log(1e6 * sensitivity)
    for _ in range(200):
        mid = (lo + hi) / 2
        if bw_delta(sensitivity / math.exp(mid), eps) > delta:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)
