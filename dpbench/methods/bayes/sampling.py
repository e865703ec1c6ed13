"""Posterior sampling: NUTS (NumPyro) or random-walk Metropolis-Hastings.

Both return theta draws grouped by chain, (chains, draws, d), plus
diagnostics: split R-hat per coordinate (Gelman-Rubin, as the paper reports),
NUTS divergences or the MH acceptance rate. ``num_samples`` is the total kept
over all chains, as in the paper ("30,000 samples from 4 chains").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import NDArray
from numpyro.diagnostics import split_gelman_rubin
from numpyro.infer import MCMC, NUTS, init_to_uniform, init_to_value

from dpbench.methods.bayes.mh import RandomWalkMH

SAMPLERS = ("nuts", "mh")
CHAIN_METHODS = ("vectorized", "parallel", "sequential")


@dataclass(frozen=True)
class Settings:
    """Sampler settings (per chain warm-up, total kept draws)."""

    sampler: str = "nuts"
    num_warmup: int = 1000
    num_samples: int = 4000
    num_chains: int = 4
    chain_method: str = "vectorized"
    mh_step: float = 0.01
    target_accept: float = 0.8
    dense_mass: bool = False

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler={self.sampler!r} is invalid; valid: {', '.join(SAMPLERS)}")
        if self.chain_method not in CHAIN_METHODS:
            raise ValueError(f"chain_method={self.chain_method!r} is invalid; valid: "
                             f"{', '.join(CHAIN_METHODS)}")
        for name in ("num_warmup", "num_samples", "num_chains"):
            if int(getattr(self, name)) < (0 if name == "num_warmup" else 1):
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: must be >= 1")
        if self.num_samples < self.num_chains:
            raise ValueError(f"num_samples={self.num_samples} < num_chains={self.num_chains}")
        if not self.mh_step > 0:
            raise ValueError(f"mh_step={self.mh_step!r} must be > 0")

    @property
    def per_chain(self) -> int:
        return self.num_samples // self.num_chains


@dataclass(frozen=True)
class Draws:
    """theta draws (chains, draws, d) and sampler diagnostics."""

    theta: NDArray
    rhat: NDArray
    diagnostics: dict[str, float]

    @property
    def flat(self) -> NDArray:
        return self.theta.reshape(-1, self.theta.shape[-1])


def sample(model: Callable[..., None], key: jax.Array, settings: Settings, args: tuple,
           *, init_values: dict[str, NDArray] | None = None, **static: Any) -> Draws:
    """Run the configured sampler on ``model(*args, **static)`` and collect theta.

    ``args`` are traced (data, noise scale, ...); ``static`` configures the
    model (hashable). The compiled sampler is cached per (model, static,
    settings, init), so repeated fits in one process compile once.
    """
    mcmc = _mcmc(model, settings, _freeze(init_values), tuple(sorted(static.items())))
    mcmc.run(key, *(jnp.asarray(a, dtype=float) for a in args),
             extra_fields=("diverging",) if settings.sampler == "nuts" else ())
    theta = np.asarray(mcmc.get_samples(group_by_chain=True)["theta"], dtype=float)
    if settings.sampler == "nuts":
        diag = {"divergences": float(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())}
    else:
        diag = {"accept_rate": float(np.mean(mcmc.last_state.mean_accept_prob))}
    rhat = np.asarray(split_gelman_rubin(theta), dtype=float) if theta.shape[0] > 1 else \
        np.full(theta.shape[-1], np.nan)
    return Draws(theta, rhat, diag)


@cache
def _mcmc(model: Callable[..., None], s: Settings, init: tuple, static: tuple) -> MCMC:
    fn = partial(model, **dict(static))
    values = {k: jnp.asarray(np.reshape(v, shape)) for k, shape, v in init}
    strategy = init_to_value(values=values) if values else init_to_uniform
    if s.sampler == "nuts":
        kernel = NUTS(fn, target_accept_prob=s.target_accept, init_strategy=strategy,
                      dense_mass=s.dense_mass)
    else:
        kernel = RandomWalkMH(fn, s.mh_step, init_strategy=strategy)
    return MCMC(kernel, num_warmup=s.num_warmup, num_samples=s.per_chain,
                num_chains=s.num_chains, chain_method=s.chain_method, progress_bar=False,
                jit_model_args=True)


def _freeze(values: dict[str, NDArray] | None) -> tuple:
    if not values:
        return ()
    return tuple((k, np.shape(v), tuple(np.ravel(v).tolist())) for k, v in sorted(values.items()))
