"""Posterior sampling: NUTS (NumPyro's kernel) or random-walk Metropolis-Hastings.

Both return theta draws grouped by chain, (chains, draws, d), plus
diagnostics: split R-hat per coordinate (Gelman-Rubin, as the paper reports),
NUTS divergences or the MH acceptance rate. ``num_samples`` is the total kept
over all chains, as in the paper ("30,000 samples from 4 chains").

One whole run (start points, warm-up, sampling, all chains) is a single
jitted function of the traced model arguments, compiled once per model form
and settings and cached for the process: a sweep of trials compiles once.
Chains: ``vectorized`` (vmap), ``sequential`` (lax.map) or ``parallel``
(pmap over host devices, see ``_jax``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from dpbench.methods.bayes import _jax  # noqa: F401  (first: JAX in float64)

# isort: split
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpy.typing import NDArray
from numpyro.diagnostics import split_gelman_rubin
from numpyro.distributions.transforms import biject_to
from numpyro.infer.hmc import hmc
from numpyro.infer.util import init_to_value, initialize_model, transform_fn

SAMPLERS = ("nuts", "mh")
CHAIN_METHODS = ("vectorized", "parallel", "sequential")
INIT_RADIUS = 2.0          # NumPyro's init_to_uniform: U(-2, 2) in unconstrained space
INIT_TRIES = 100


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

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler={self.sampler!r} is invalid; valid: {', '.join(SAMPLERS)}")
        if self.chain_method not in CHAIN_METHODS:
            raise ValueError(f"chain_method={self.chain_method!r} is invalid; valid: "
                             f"{', '.join(CHAIN_METHODS)}")
        for name, low in (("num_warmup", 0), ("num_samples", 1), ("num_chains", 1)):
            if int(getattr(self, name)) < low:
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: must be >= {low}")
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

    ``args`` are traced (data, noise scale, ...); ``static`` configures the model
    (hashable). Sites named in ``init_values`` start there (in every chain), all
    other sites start uniformly in (-2, 2) on NumPyro's unconstrained scale.
    """
    args = tuple(jnp.asarray(a, dtype=float) for a in args)
    key_ = (model, settings, _freeze(init_values), tuple(sorted(static.items())),
            tuple(a.shape for a in args))
    if key_ not in _PROGRAMS:
        _PROGRAMS[key_] = _program(model, settings, key_[2], key_[3], args)
    run = _PROGRAMS[key_]
    theta, extra = run(key, *args)
    theta = np.asarray(theta, dtype=float)
    extra = np.asarray(extra)
    diag = ({"divergences": float(extra.sum())} if settings.sampler == "nuts"
            else {"accept_rate": float(extra.mean())})
    rhat = np.asarray(split_gelman_rubin(theta), dtype=float) if theta.shape[0] > 1 else \
        np.full(theta.shape[-1], np.nan)
    return Draws(theta, rhat, diag)


_PROGRAMS: dict[tuple, Callable[..., tuple[jax.Array, jax.Array]]] = {}


def _program(model: Callable[..., None], s: Settings, init: tuple, static: tuple,
             example: tuple) -> Callable[..., tuple[jax.Array, jax.Array]]:
    """One full run for this model form and settings, jitted over the model arguments
    (``example`` only fixes their shapes and the parameter layout)."""
    fn = partial(model, **dict(static))
    fixed = {k: jnp.asarray(np.reshape(v, shape)) for k, shape, v in init}
    template, potential_gen, postprocess_gen = _layout(fn, fixed, example)
    flat0, unravel = ravel_pytree(template)
    free = ravel_pytree({k: jnp.full(jnp.shape(v), k not in fixed)
                         for k, v in template.items()})[0]

    def start(key: jax.Array, potential: Callable) -> jax.Array:
        """A finite-density start: fixed sites at their values, the rest U(-2, 2)."""
        def draw(k: jax.Array) -> jax.Array:
            # not privacy noise: MCMC start
            u = jax.random.uniform(k, flat0.shape, minval=-INIT_RADIUS, maxval=INIT_RADIUS)
            return jnp.where(free, u, flat0)

        def bad(c: tuple) -> jax.Array:
            return (~jnp.isfinite(potential(unravel(c[1])))) & (c[2] < INIT_TRIES)

        def again(c: tuple) -> tuple:
            k, sub = jax.random.split(c[0])
            return k, draw(sub), c[2] + 1

        k, sub = jax.random.split(key)
        return jax.lax.while_loop(bad, again, (k, draw(sub), 0))[1]

    def theta_of(args: tuple, flat: jax.Array) -> jax.Array:
        return postprocess_gen(*args)(unravel(flat))["theta"]

    def nuts_chain(key: jax.Array, *args: jax.Array) -> tuple[jax.Array, jax.Array]:
        init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")
        k_start, k_run = jax.random.split(key)
        z0 = unravel(start(k_start, potential_gen(*args)))
        state = init_kernel(z0, s.num_warmup, target_accept_prob=s.target_accept,
                            model_args=args, rng_key=k_run)
        step = partial(sample_kernel, model_args=args)
        state = jax.lax.fori_loop(0, s.num_warmup, lambda _, st: step(st), state)

        def keep(st: Any, _: None) -> tuple[Any, tuple[jax.Array, jax.Array]]:
            st = step(st)
            return st, (theta_of(args, ravel_pytree(st.z)[0]), st.diverging)

        return jax.lax.scan(keep, state, None, length=s.per_chain)[1]

    def mh_chain(key: jax.Array, *args: jax.Array) -> tuple[jax.Array, jax.Array]:
        potential = potential_gen(*args)

        def logp(x: jax.Array) -> jax.Array:
            lp = -potential(unravel(x))
            return jnp.where(jnp.isfinite(lp), lp, -jnp.inf)

        def step(c: tuple, k: jax.Array) -> tuple[tuple, jax.Array]:
            x, lp = c
            k1, k2 = jax.random.split(k)
            prop = x + s.mh_step * jax.random.normal(k1, x.shape)  # not privacy noise: MH proposal
            lp_prop = logp(prop)
            log_ratio = lp_prop - lp
            accept = jnp.log(jax.random.uniform(k2)) < log_ratio  # not privacy noise: MH accept
            prob = jnp.exp(jnp.minimum(jnp.nan_to_num(log_ratio, nan=-jnp.inf), 0.0))
            return (jnp.where(accept, prop, x), jnp.where(accept, lp_prop, lp)), prob

        k_start, k_warm, k_run = jax.random.split(key, 3)
        x0 = start(k_start, potential)
        carry = jax.lax.scan(lambda c, k: (step(c, k)[0], None), (x0, logp(x0)),
                             jax.random.split(k_warm, s.num_warmup))[0]

        def keep(c: tuple, k: jax.Array) -> tuple[tuple, tuple[jax.Array, jax.Array]]:
            c, prob = step(c, k)
            return c, (theta_of(args, c[0]), prob)

        return jax.lax.scan(keep, carry, jax.random.split(k_run, s.per_chain))[1]

    chain = nuts_chain if s.sampler == "nuts" else mh_chain
    n_args = len(example)

    def run(key: jax.Array, *args: jax.Array) -> tuple[jax.Array, jax.Array]:
        keys = jax.random.split(key, s.num_chains)
        if s.chain_method == "vectorized":
            return jax.vmap(chain, in_axes=(0,) + (None,) * n_args)(keys, *args)
        return jax.lax.map(lambda k: chain(k, *args), keys)

    if s.chain_method == "parallel" and jax.local_device_count() >= s.num_chains:
        par = jax.pmap(chain, in_axes=(0,) + (None,) * n_args)
        return lambda key, *a: par(jax.random.split(key, s.num_chains), *a)
    return jax.jit(run)


def _layout(fn: Callable[..., None], fixed: dict[str, jax.Array], example: tuple
            ) -> tuple[dict[str, jax.Array], Callable, Callable]:
    """The unconstrained parameters of model ``fn`` (the sites in ``fixed`` at their
    starting values, the others zero: ``start`` draws them) and its potential and
    post-processing generators, as NumPyro's ``initialize_model`` makes them.

    ``initialize_model`` is traced abstractly (``jax.eval_shape``), not run: run, it
    evaluates the model and its gradient operation by operation to find a valid start,
    compiling one small XLA program per operation (~20 s for the noise-aware model, in
    every process), and that start is not used here. The generators depend only on the
    model's form (its supports are constants), not on the traced values. The fixed sites'
    values are NumPyro's own transform of them (``transform_fn`` with each site's
    ``biject_to(support)``, as ``initialize_model`` computes them for ``init_to_value``)."""
    found: dict[str, Any] = {}

    def probe(*args: jax.Array) -> dict[str, jax.Array]:
        found["info"] = initialize_model(jax.random.PRNGKey(0), fn, model_args=args,
                                         dynamic_args=True,
                                         init_strategy=init_to_value(values=fixed))
        return found["info"].param_info.z

    shapes = jax.eval_shape(probe, *example)
    info = found["info"]
    to_free = {k: biject_to(site["fn"].support) for k, site in info.model_trace.items()
               if k in fixed}
    starts = transform_fn(to_free, fixed, invert=True)
    template = {k: starts[k] if k in fixed else jnp.zeros(v.shape, v.dtype)
                for k, v in shapes.items()}
    return template, info.potential_fn, info.postprocess_fn


def _freeze(values: dict[str, NDArray] | None) -> tuple:
    if not values:
        return ()
    return tuple((k, np.shape(v), tuple(np.ravel(v).tolist())) for k, v in sorted(values.items()))
