"""NoiseAwareGLM: DP release of PASS-GLM statistics + noise-aware posterior sampling.

JAX and NumPyro (the moment program, models and sampler) are imported when the method is
built or fitted, not with this module: commands that only plan import the class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.bayes.baseline import BaselineSpec, nonprivate_posterior
from dpbench.methods.bayes.mle import mle
from dpbench.methods.bayes.release import (
    NEIGHBOURS,
    NoisyStatistics,
    bound_records,
    counts,
    labels_pm1,
    release,
)
from dpbench.methods.outputs import LinearFit, PosteriorDraws
from dpbench.privacy.accountant import Accountant

if TYPE_CHECKING:
    from dpbench.methods.bayes.sampling import Draws

# JAX and NumPyro: imported when the method is built or fitted, not when planning reads it
_jax = lazy.module("dpbench.methods.bayes._jax")
models = lazy.module("dpbench.methods.bayes.models")
moments = lazy.module("dpbench.methods.bayes.moments")
sampling = lazy.module("dpbench.methods.bayes.sampling")

#: the paper's choices per GLM: (sampler, theta prior, Sigma prior)
PAPER_DEFAULTS = {"logistic": ("nuts", "norm_truncated", "lkj"),
                  "poisson": ("mh", "normal", "inverse_wishart")}
NORM_BOUND_RULES = ("nonprivate", "truth")
T = TypeVar("T")
QUANTILE_LEVELS = np.round(np.linspace(0.01, 0.99, 99), 2)


class NoiseAwareGLM(LinearModel):
    """Kulkarni et al.'s DP Bayesian logistic / Poisson regression.

    One analytic-Gaussian release of the degree-2 statistics (whole budget),
    then MCMC on the noise-aware model. ``coef_`` is the posterior mean,
    ``samples_`` the theta draws (all chains). Paper errors are fixed by
    default (``ey_sign``, ``cov_case_b``, ``norm_rule``, ``ey2``), the literal
    versions are options. ``norm_bound_sq`` (the prior's s): a number, "truth"
    (factor x ||true theta||^2, public for synthetic data) or "nonprivate"
    (factor x ||non-private MLE||^2, the paper's choice; NOT differentially
    private, flagged in ``info()``).
    """

    accounting = "gdp"
    neighbours = NEIGHBOURS
    serves = frozenset({"posterior"})
    produces = (PosteriorDraws, LinearFit)

    @classmethod
    def data_required(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """Binary labels (logistic) or counts (Poisson); ``norm_bound_sq: truth`` reads the
        true theta (simulated data only)."""
        label = "count_label" if params.get("glm") == "poisson" else "binary_label"
        return frozenset({label, *(["truth"] if params.get("norm_bound_sq") == "truth" else [])})

    def __init__(self, glm: str = "logistic", *, R: float = 1.0, R_y: float = 5.0,
                 outside: str = "drop", sampler: str | None = None, num_warmup: int = 1000,
                 num_samples: int = 4000, num_chains: int = 4,
                 chain_method: str = "vectorized", mh_step: float = 0.01,
                 target_accept: float = 0.8, ey_sign: str = "corrected",
                 cov_case_b: str = "corrected", ey2: str = "corrected",
                 norm_rule: str = "min", norm_bound_sq: float | str = "nonprivate",
                 norm_bound_factor: float = 3.0, theta_prior: str | None = None,
                 sigma_prior: str | None = None) -> None:
        if glm not in PAPER_DEFAULTS:
            raise ValueError(f"glm={glm!r} is invalid; valid: {', '.join(PAPER_DEFAULTS)}")
        if isinstance(norm_bound_sq, str) and norm_bound_sq not in NORM_BOUND_RULES:
            raise ValueError(f"norm_bound_sq={norm_bound_sq!r} is invalid; valid: a number > 0 "
                             f"or {', '.join(NORM_BOUND_RULES)}")
        paper_sampler, paper_theta, paper_sigma = PAPER_DEFAULTS[glm]
        super().__init__(
            glm=glm, R=R, R_y=R_y, outside=outside, sampler=sampler or paper_sampler,
            num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
            chain_method=chain_method, mh_step=mh_step, target_accept=target_accept,
            ey_sign=ey_sign, cov_case_b=cov_case_b, ey2=ey2, norm_rule=norm_rule,
            norm_bound_sq=norm_bound_sq, norm_bound_factor=norm_bound_factor,
            theta_prior=theta_prior or paper_theta, sigma_prior=sigma_prior or paper_sigma)
        p = self.params
        self.settings = sampling.Settings(p["sampler"], int(num_warmup), int(num_samples),
                                          int(num_chains), chain_method, float(mh_step),
                                          float(target_accept))
        self.options = {"ey_sign": ey_sign, "cov_case_b": cov_case_b, "ey2": ey2}
        moments.build_program(glm, 1, **self.options)  # validates the options before any work
        models.Prior(theta=p["theta_prior"], norm_rule=norm_rule, sigma=p["sigma_prior"])

    # -- fitting -------------------------------------------------------------------
    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        p = self.params
        X, y = self.bounded(data)
        self.bounded_ = (X, y)
        self.baseline_: Draws | None = None
        self.prior_ = models.Prior(theta=p["theta_prior"], norm_rule=p["norm_rule"],
                                   sigma=p["sigma_prior"])
        self.norm_bound_sq_ = self.norm_bound_for(data, X, y)
        self.release_: NoisyStatistics = release(p["glm"], data.X, data.y, accountant, rng,
                                                 R=p["R"], R_y=p["R_y"], outside=p["outside"])
        program = moments.build_program(p["glm"], data.d, **self.options)
        r = self.release_
        # not privacy noise: MCMC draws of the posterior given the released statistics
        self.draws_: Draws = sampling.sample(
            models.noise_aware, _jax.key_from(rng), self.settings,
            (r.z, r.n, r.sigma, self.norm_bound_sq_),
            init_values=models.sigma_init(self.prior_, data.d, p["R"]),
            program=program, prior=self.prior_)
        self.samples_ = self.draws_.flat
        self.coef_ = self.samples_.mean(axis=0)
        return self

    def bounded(self, data: TabularData) -> tuple[NDArray, NDArray]:
        """The training records as the release sees them (labels mapped, bounds applied)."""
        p = self.params
        y = labels_pm1(data.y) if p["glm"] == "logistic" else counts(data.y)
        X, y, _ = bound_records(p["glm"], data.X, y, p["R"], p["R_y"], p["outside"])
        return X, y

    def norm_bound_for(self, data: TabularData, X: NDArray, y: NDArray) -> float:
        """The prior's bound s on ||theta||^2 (only used by the norm-truncated prior)."""
        p = self.params
        s = 1.0
        if p["theta_prior"] == "norm_truncated":
            rule, factor = p["norm_bound_sq"], float(p["norm_bound_factor"])
            if rule == "truth":
                if "theta" not in data.truth:
                    raise ValueError("norm_bound_sq='truth' needs data.truth['theta'] "
                                     "(synthetic data); use a number or 'nonprivate'")
                s = factor * float(np.sum(np.square(data.truth["theta"])))
            elif rule == "nonprivate":
                s = factor * float(np.sum(np.square(mle(p["glm"], X, y))))
            else:
                s = float(rule)
        if not (np.isfinite(s) and s > 0):
            raise ValueError(f"norm bound s={s!r} must be a finite number > 0")
        return s

    def baseline_spec(self) -> BaselineSpec:
        """How to compute the matching non-private posterior (same prior and sampler)."""
        return BaselineSpec(self.params["glm"], self.prior_, self.norm_bound_sq_, self.settings)

    def output(self, kind: type[T]) -> T:
        if kind is PosteriorDraws:
            return PosteriorDraws(self.samples_, np.asarray(self.draws_.rhat),  # type: ignore
                                  reference=self.reference)
        return super().output(kind)

    def reference(self) -> PosteriorDraws:
        """The matching non-private posterior of the training records (computed once, cached
        through the trial's artifact store; kept for ``info()``'s quantiles)."""
        if self.baseline_ is None:
            self.baseline_ = nonprivate_posterior(*self.bounded_, self.baseline_spec())
        return PosteriorDraws(self.baseline_.flat, np.asarray(self.baseline_.rhat))

    # -- reporting -----------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        r, dr = self.release_, self.draws_
        th = self.samples_
        base = getattr(self, "baseline_", None)
        extra = {} if base is None else {
            "baseline_rhat_max": float(np.nanmax(base.rhat)),
            "baseline_theta_quantiles": _quantiles(base.flat),
        }
        return {
            "sigma": r.sigma, "sensitivity": r.sensitivity, "n": r.n, "n_outside": r.n_outside,
            "norm_bound_sq": self.norm_bound_sq_,
            "prior_uses_private_data": self.params["norm_bound_sq"] == "nonprivate"
            and self.prior_.theta == "norm_truncated",
            "rhat_max": float(np.nanmax(dr.rhat)), "rhat": dr.rhat.tolist(),
            **dr.diagnostics,
            "theta_mean": th.mean(axis=0).tolist(), "theta_sd": th.std(axis=0).tolist(),
            "theta_quantiles": _quantiles(th),
            "quantile_levels": json.dumps(QUANTILE_LEVELS.tolist()),
            **extra,
        }


def _quantiles(samples: NDArray) -> str:
    """Posterior quantiles per coordinate, (d, levels), as a JSON string (kept by the frame)."""
    return json.dumps(np.round(np.quantile(samples, QUANTILE_LEVELS, axis=0).T, 6).tolist())
