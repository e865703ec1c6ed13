"""Noise-aware Bayesian GLMs from noisy PASS-GLM statistics (Kulkarni et al.).

The method is :class:`dpbench.methods.bayes.method.NoiseAwareGLM`. Importing the package
imports no JAX (commands that only plan import the class): it only asks XLA for
``N_HOST_DEVICES`` virtual CPU devices, so that ``chain_method='parallel'`` can run 4
chains, which ``XLA_FLAGS`` can do only before JAX is imported. The modules that use JAX
import :mod:`dpbench.methods.bayes._jax` first (float64, compile cache, keys); method.py
and baseline.py import them where they sample. The flag adds devices only and changes no
numerics.
"""

import os
import sys

N_HOST_DEVICES = 4

if "jax" not in sys.modules and "xla_force_host_platform_device_count" not in os.environ.get(
    "XLA_FLAGS", ""
):
    _flag = f"--xla_force_host_platform_device_count={N_HOST_DEVICES}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_flag}".strip()
