"""JAX set-up shared by the Bayesian GLM code: float64, host devices, compile cache, keys.

Imported before anything touches JAX. ``XLA_FLAGS`` can only take effect if
JAX has not been imported yet; it only adds virtual CPU devices (so that
``chain_method='parallel'`` can run 4 chains), and changes no numerics.
Compiled programs are kept in JAX's persistent cache under
``results/cache/jax`` (``DPBENCH_CACHE_DIR`` overrides ``results/cache``):
a fresh process then skips most of the ~20 s compile of a sampler. The cache
stores the same executables, so results do not depend on it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

N_HOST_DEVICES = 4

if "jax" not in sys.modules and "xla_force_host_platform_device_count" not in os.environ.get(
    "XLA_FLAGS", ""
):
    _flag = f"--xla_force_host_platform_device_count={N_HOST_DEVICES}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_flag}".strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)


def cache_root() -> Path:
    """``$DPBENCH_CACHE_DIR`` or the repository's ``results/cache``."""
    env = os.environ.get("DPBENCH_CACHE_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "results" / "cache"


if jax.config.jax_compilation_cache_dir is None:
    jax.config.update("jax_compilation_cache_dir", str(cache_root() / "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def key_from(rng: np.random.Generator) -> jax.Array:
    """A JAX PRNG key drawn from the trial's numpy generator (no global state)."""
    return jax.random.PRNGKey(int(rng.integers(2**31)))
