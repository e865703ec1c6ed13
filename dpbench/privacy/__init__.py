"""Privacy accounting (one accountant for all methods); the noise primitives that record
themselves are in :mod:`dpbench.privacy.noise`."""

from dpbench.privacy.accountant import Accountant, BudgetExceeded, validate_budget
from dpbench.privacy.conversions import (
    cdp_delta,
    cdp_eps,
    cdp_rho,
    gdp_compose,
    gdp_delta,
    gdp_eps,
    gdp_mu,
    gdp_to_pure,
    pure_to_gdp,
)
from dpbench.privacy.gaussian import sigma_analytic, sigma_classic, sigma_zcdp

__all__ = [
    "Accountant", "BudgetExceeded", "validate_budget", "cdp_delta", "cdp_eps", "cdp_rho",
    "gdp_compose", "gdp_delta", "gdp_eps", "gdp_mu", "gdp_to_pure", "pure_to_gdp", "sigma_analytic",
    "sigma_classic", "sigma_zcdp",
]
