"""Prices of mechanisms that the ledger charges before their noise is drawn.

The noise itself is drawn (and recorded for the privacy audit) by
:mod:`dpbench.privacy.noise`; nothing here draws.
"""

from __future__ import annotations

from dpbench.privacy._checks import check_nonneg


def exponential_mechanism_rho(epsilon: float) -> float:
    """zCDP cost of the exponential mechanism with parameter epsilon: eps^2 / 8
    (Cesar & Rogers 2021, bounded-range analysis, as used by AIM)."""
    return check_nonneg(epsilon, "epsilon") ** 2 / 8
