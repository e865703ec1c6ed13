"""Gaussian random-walk Metropolis-Hastings as a NumPyro MCMC kernel.

The paper's Poisson sampler (Supplement Sec. 10): proposal sd 0.01, no
adaptation. Steps are taken in NumPyro's unconstrained space, so constrained
parameters (e.g. the covariance) stay valid. Works with all chain methods
(a batch of states is stepped with vmap).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from numpyro.infer.mcmc import MCMCKernel
from numpyro.infer.util import init_to_uniform, initialize_model


class MHState(NamedTuple):
    i: jnp.ndarray
    z: Any
    potential_energy: jnp.ndarray
    accept_prob: jnp.ndarray
    mean_accept_prob: jnp.ndarray
    rng_key: jnp.ndarray


class RandomWalkMH(MCMCKernel):
    """x' = x + step * N(0, I), accepted with probability min(1, p(x') / p(x))."""

    sample_field = "z"

    def __init__(self, model: Any, step_size: float = 0.01,
                 init_strategy: Any = init_to_uniform) -> None:
        self._model = model
        self._step = float(step_size)
        self._init_strategy = init_strategy
        self._potential_gen = None
        self._postprocess_gen = None

    @property
    def model(self) -> Any:
        return self._model

    def init(self, rng_key: jnp.ndarray, num_warmup: int, init_params: Any, model_args: tuple,
             model_kwargs: dict) -> MHState:
        key_init, rng_key = _split(rng_key)
        info = initialize_model(key_init, self._model, init_strategy=self._init_strategy,
                                dynamic_args=True, model_args=model_args,
                                model_kwargs=model_kwargs)
        self._potential_gen = info.potential_fn
        self._postprocess_gen = info.postprocess_fn
        pe = info.param_info.potential_energy
        zero = jnp.zeros_like(pe)
        return MHState(jnp.zeros(jnp.shape(pe), dtype=int), info.param_info.z, pe, zero, zero,
                       rng_key)

    def postprocess_fn(self, args: tuple, kwargs: dict) -> Any:
        return self._postprocess_gen(*args, **kwargs)

    def sample(self, state: MHState, model_args: tuple, model_kwargs: dict) -> MHState:
        potential = self._potential_gen(*model_args, **model_kwargs)

        def one(s: MHState) -> MHState:
            flat, unravel = ravel_pytree(s.z)
            key, k_prop, k_acc = jax.random.split(s.rng_key, 3)
            prop = flat + self._step * jax.random.normal(k_prop, flat.shape)
            pe = potential(unravel(prop))
            pe = jnp.where(jnp.isfinite(pe), pe, jnp.inf)
            log_ratio = s.potential_energy - pe
            accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
            prob = jnp.exp(jnp.minimum(log_ratio, 0.0))
            i = s.i + 1
            return MHState(i, unravel(jnp.where(accept, prop, flat)),
                           jnp.where(accept, pe, s.potential_energy), prob,
                           s.mean_accept_prob + (prob - s.mean_accept_prob) / i, key)

        return jax.vmap(one)(state) if jnp.ndim(state.i) else one(state)


def _split(key: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    if key.ndim > 1:
        pairs = jax.vmap(jax.random.split)(key)
        return pairs[:, 0], pairs[:, 1]
    a, b = jax.random.split(key)
    return a, b
