"""Noise-aware Bayesian GLMs from noisy PASS-GLM statistics (Kulkarni et al.).

Importing the package sets JAX up first (float64, host devices, compile cache).
The method is :class:`dpbench.methods.bayes.method.NoiseAwareGLM`.
"""

from dpbench.methods.bayes import _jax  # noqa: F401
