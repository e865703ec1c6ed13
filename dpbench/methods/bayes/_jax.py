"""JAX set-up shared by the Bayesian GLM code: float64, compile cache, keys.

Imported first by every module of this package that uses JAX or NumPyro (isserlis,
moments, models, sampling), so that float64 is on before NumPyro is imported and before
any array is made. The package's ``__init__`` has already set ``XLA_FLAGS`` (host
devices) by then, if JAX was not imported yet.
Compiled programs are kept in JAX's persistent cache (dpbench/compile_cache.py:
``<results_dir>/cache/jax`` under the runner): a fresh process then skips most
of the ~20 s compile of a sampler. The cache stores the same executables, so
results do not depend on it.
"""

from __future__ import annotations

import jax
import numpy as np

from dpbench import compile_cache

jax.config.update("jax_enable_x64", True)
compile_cache.configure()


def key_from(rng: np.random.Generator) -> jax.Array:
    """A JAX PRNG key drawn from the trial's numpy generator (no global state)."""
    return jax.random.PRNGKey(int(rng.integers(2**31)))  # not privacy noise: a seed
