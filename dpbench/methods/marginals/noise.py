"""The two randomised steps of marginal mechanisms, with a test-only switch to turn noise off.

``noise_disabled()`` makes every Gaussian measurement exact and every
exponential-mechanism selection an argmax, while the mechanisms still charge
their ledgers the same amounts. It exists for acceptance tests that check the
post-processing is exact (e.g. DD-SSP with exact marginals equals OLS); a fit
made under it is never written to the artifact cache and records
``noise_disabled: true`` in its info. Only noise actually drawn is recorded in a
:func:`dpbench.privacy.draws.recording` trace, so a fit under ``noise_disabled`` has none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbench.privacy import noise

_NOISE_OFF: ContextVar[bool] = ContextVar("dpbench_marginals_noise_off", default=False)


@contextmanager
def noise_disabled() -> Iterator[None]:
    """Tests only: within this block marginal mechanisms add no noise (NOT private)."""
    token = _NOISE_OFF.set(True)
    try:
        yield
    finally:
        _NOISE_OFF.reset(token)


def noise_is_off() -> bool:
    return _NOISE_OFF.get()


def measure(value: ArrayLike, sigma: float, rng: np.random.Generator, *, sensitivity: float,
            relation: str, label: str) -> NDArray:
    """Gaussian mechanism value + N(0, sigma^2 I) (exact value when noise is disabled).

    ``sensitivity`` is the L2 sensitivity of ``value`` under ``relation`` that the caller's
    privacy analysis uses; the draw records it (:func:`dpbench.privacy.noise.gaussian`).
    """
    v = np.asarray(value, dtype=float)
    if noise_is_off():
        return v.copy()
    return noise.gaussian(v, sigma, rng, sensitivity=sensitivity, relation=relation,
                          label=label)


def select(scores: ArrayLike, epsilon: float, sensitivity: float,
           rng: np.random.Generator, *, relation: str, label: str) -> int:
    """Exponential mechanism, P(i) ~ exp(eps q_i / (2 Delta)) (argmax when noise is disabled).

    ``sensitivity`` (Delta) is the largest change of any score under ``relation``; the draw
    records it (:func:`dpbench.privacy.noise.exponential`).
    """
    s = np.asarray(scores, dtype=float)
    if noise_is_off():
        return int(np.argmax(s))
    return noise.exponential(s, epsilon, sensitivity, rng, relation=relation, label=label)
