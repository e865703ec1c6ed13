"""The non-private posterior (exact likelihood, same prior), cached per training set.

Deterministic: the sampler key is derived from the fingerprint of the data
and the specification, so every process computes the same draws, and the
result is cached under ``results/cache/posterior/<fingerprint>.npz``
(``DPBENCH_CACHE_DIR`` overrides the cache root). Writes are atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.methods.bayes import _jax, models
from dpbench.methods.bayes.sampling import Draws, Settings, sample

CACHE_VERSION = 1


@dataclass(frozen=True)
class BaselineSpec:
    """What defines the non-private posterior the private one is compared with."""

    glm: str
    prior: models.Prior
    norm_bound_sq: float
    settings: Settings

    def as_dict(self) -> dict:
        return {"glm": self.glm, "prior": self.prior.as_dict(), "settings": asdict(self.settings),
                "norm_bound_sq": float(self.norm_bound_sq), "version": CACHE_VERSION}


def fingerprint(X: NDArray, y: NDArray, spec: BaselineSpec) -> str:
    h = hashlib.sha256()
    for a in (X, y):
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    h.update(json.dumps(spec.as_dict(), sort_keys=True).encode())
    return h.hexdigest()


def nonprivate_posterior(X: NDArray, y: NDArray, spec: BaselineSpec, *,
                         use_cache: bool = True) -> Draws:
    """theta draws of the exact-likelihood posterior of (X, y) under ``spec``."""
    fp = fingerprint(X, y, spec)
    path = _jax.cache_root() / "posterior" / f"{fp}.npz"
    if use_cache and path.exists():
        with np.load(path) as f:
            return Draws(f["theta"], f["rhat"], json.loads(str(f["diagnostics"])))
    key = _jax.jax.random.PRNGKey(int(fp[:8], 16) % 2**31)
    draws = sample(models.nonprivate, key, spec.settings, (X, y, spec.norm_bound_sq),
                   glm=spec.glm, prior=spec.prior)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, theta=draws.theta, rhat=draws.rhat,
                     diagnostics=json.dumps(draws.diagnostics))
        os.replace(tmp, path)
    return draws
