"""JAX set-up shared by the Bayesian GLM code: float64, host devices, compile cache, keys.

Imported before anything touches JAX. ``XLA_FLAGS`` can only take effect if
JAX has not been imported yet; it only adds virtual CPU devices (so that
``chain_method='parallel'`` can run 4 chains), and changes no numerics.
Compiled programs are kept in JAX's persistent cache (dpbench/compile_cache.py:
``<results_dir>/cache/jax`` under the runner): a fresh process then skips most
of the ~20 s compile of a sampler. The cache stores the same executables, so
results do not depend on it.
"""

from __future__ import annotations

import os
import sys

N_HOST_DEVICES = 4

if "jax" not in sys.modules and "xla_force_host_platform_device_count" not in os.environ.get(
    "XLA_FLAGS", ""
):
    _flag = f"--xla_force_host_platform_device_count={N_HOST_DEVICES}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_flag}".strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

from dpbench import compile_cache  # noqa: E402

jax.config.update("jax_enable_x64", True)
compile_cache.configure()


def key_from(rng: np.random.Generator) -> jax.Array:
    """A JAX PRNG key drawn from the trial's numpy generator (no global state)."""
    return jax.random.PRNGKey(int(rng.integers(2**31)))
