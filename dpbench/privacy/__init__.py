"""Privacy accounting and noise primitives (one accountant for all methods)."""

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
from dpbench.privacy.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    symmetric_gaussian_matrix,
)

__all__ = [
    "Accountant", "BudgetExceeded", "validate_budget", "cdp_delta", "cdp_eps", "cdp_rho",
    "gdp_compose", "gdp_delta", "gdp_eps", "gdp_mu", "gdp_to_pure", "pure_to_gdp", "sigma_analytic",
    "sigma_classic", "sigma_zcdp", "exponential_mechanism", "gaussian_mechanism",
    "laplace_mechanism", "symmetric_gaussian_matrix",
]
