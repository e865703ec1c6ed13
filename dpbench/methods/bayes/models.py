"""NumPyro models: the noise-aware GLM posterior and its non-private baseline.

Priors (Sec. 4.1 for logistic, Supplement Sec. 10 for Poisson):

- theta, ``theta_prior="norm_truncated"``: t ~ N(0, I), rho ~ chi2(d),
  theta = sqrt(min(rho, s)) t / ||t||: uniform direction, squared norm a
  chi-square truncated above at s. The paper prints max(rho, s) while calling s
  an upper bound; ``norm_rule="max"`` keeps that literal version (it forces
  ||theta||^2 >= s). ``theta_prior="normal"``: theta ~ N(0, I) (Poisson).
- Sigma, ``sigma_prior="lkj"``: Sigma = diag(tau) Omega diag(tau), Omega ~ LKJ(2),
  tau ~ HalfNormal(2.5) (the paper's N(0, 2.5) scales; Sigma only depends on
  |tau|, and the half-normal avoids a 2^d-modal posterior in tau).
  ``sigma_prior="inverse_wishart"``: Sigma ~ IW(d + 2, I) (Poisson; the paper
  names no parameters; d + 2 degrees of freedom give prior mean I).

Likelihood of the release: s | theta, Sigma ~ N(N mu_s, N Sigma_s) and
z | s ~ N(s, sigma^2 I); the Gaussian s is integrated out exactly (eq. 3),
so z ~ N(N mu_s, N Sigma_s + sigma^2 I).

The non-private baseline uses the exact GLM likelihood of (X, y) with the same
theta prior (Sigma does not enter it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dpbench.methods.bayes import _jax  # noqa: F401  (first: JAX in float64)

# isort: split
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.nn import log_sigmoid, softplus

from dpbench.methods.bayes.moments import MomentProgram

THETA_PRIORS = ("norm_truncated", "normal")
NORM_RULES = ("min", "max")
SIGMA_PRIORS = ("lkj", "inverse_wishart")


@dataclass(frozen=True)
class Prior:
    """The prior's form, shared by both posteriors (hashable, JSON-friendly).

    The norm bound s is a traced model argument, not part of the form, so one
    compiled sampler serves every value of s.
    """

    theta: str = "norm_truncated"
    norm_rule: str = "min"
    sigma: str = "lkj"
    lkj_eta: float = 2.0
    tau_scale: float = 2.5

    def __post_init__(self) -> None:
        for name, value, valid in (("theta_prior", self.theta, THETA_PRIORS),
                                   ("norm_rule", self.norm_rule, NORM_RULES),
                                   ("sigma_prior", self.sigma, SIGMA_PRIORS)):
            if value not in valid:
                raise ValueError(f"{name}={value!r} is invalid; valid: {', '.join(valid)}")

    def as_dict(self) -> dict:
        return asdict(self)


def sample_theta(prior: Prior, d: int, s: jnp.ndarray) -> jnp.ndarray:
    """Draw theta from its prior inside a model (site 'theta'); s = norm bound."""
    if prior.theta == "normal":
        return numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
    t = numpyro.sample("t", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
    rho = numpyro.sample("rho", dist.Chi2(d))
    bound = jnp.minimum if prior.norm_rule == "min" else jnp.maximum
    r2 = bound(rho, s)
    return numpyro.deterministic("theta", jnp.sqrt(r2) * t / jnp.linalg.norm(t))


def sample_sigma(prior: Prior, d: int) -> jnp.ndarray:
    """Draw the input covariance Sigma inside a model."""
    if prior.sigma == "inverse_wishart":
        return numpyro.sample("Sigma", dist.InverseWishart(d + 2.0, scale_matrix=jnp.eye(d)))
    L_omega = numpyro.sample("L_omega", dist.LKJCholesky(d, prior.lkj_eta))
    tau = numpyro.sample("tau", dist.HalfNormal(prior.tau_scale).expand([d]).to_event(1))
    L = tau[:, None] * L_omega
    return L @ L.T


def noise_aware(z: jnp.ndarray, n: jnp.ndarray, sigma: jnp.ndarray, s: jnp.ndarray, *,
                program: MomentProgram, prior: Prior) -> None:
    """z ~ N(N mu_s(theta, Sigma), N Sigma_s(theta, Sigma) + sigma^2 I)."""
    d = program.d
    theta = sample_theta(prior, d, s)
    Sigma = sample_sigma(prior, d)
    mu, cov = program(theta, Sigma)
    cov = n * cov + sigma**2 * jnp.eye(program.m)
    numpyro.sample("z", dist.MultivariateNormal(n * mu, covariance_matrix=cov, validate_args=False),
                   obs=z)


def nonprivate(X: jnp.ndarray, y: jnp.ndarray, s: jnp.ndarray, *, glm: str, prior: Prior) -> None:
    """Exact likelihood: logistic with y in {-1, +1}, or Poisson with softplus mean."""
    theta = sample_theta(prior, X.shape[1], s)
    eta = X @ theta
    if glm == "logistic":
        numpyro.factor("loglik", jnp.sum(log_sigmoid(y * eta)))
    else:
        numpyro.sample("y", dist.Poisson(softplus(eta)).to_event(1), obs=y)


def sigma_init(prior: Prior, d: int, R: float) -> dict[str, np.ndarray]:
    """Public starting point for Sigma: (R^2 / d) I, the scale of records in the R-ball.

    Random starts from the prior often put theta^T Sigma theta where the Taylor
    moments are not a valid covariance; theta (and rho) still start at random
    per chain, which is what R-hat needs.
    """
    if prior.sigma == "inverse_wishart":
        return {"Sigma": np.eye(d) * R**2 / d}
    return {"tau": np.full(d, R / np.sqrt(d)), "L_omega": np.eye(d)}
