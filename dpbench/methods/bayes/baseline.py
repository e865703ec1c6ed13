"""The non-private posterior (exact likelihood, same prior), cached per training set.

Deterministic: the sampler key is derived from the fingerprint of the data
and the specification, so every process computes the same draws. Inside the
runner the draws go through the trial's artifact store (``<results_dir>/cache``,
built once under a lock, published atomically), as the marginal releases do;
outside it (tests, scripts) they are computed afresh. JAX and NumPyro are imported when
draws are made, not with this module (method.py's class is imported by planning commands).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.artifacts import current_context

if TYPE_CHECKING:
    from dpbench.methods.bayes.sampling import Draws, Settings

# JAX and NumPyro: imported when a baseline posterior is drawn
_jax = lazy.module("dpbench.methods.bayes._jax")
models = lazy.module("dpbench.methods.bayes.models")
sampling = lazy.module("dpbench.methods.bayes.sampling")

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

    def build() -> tuple[dict[str, np.ndarray], dict]:
        key = _jax.jax.random.PRNGKey(int(fp[:8], 16) % 2**31)
        # not privacy noise: MCMC draws of the non-private reference posterior
        d = sampling.sample(models.nonprivate, key, spec.settings, (X, y, spec.norm_bound_sq),
                   glm=spec.glm, prior=spec.prior)
        return {"theta": d.theta, "rhat": np.asarray(d.rhat)}, {"diagnostics": d.diagnostics}

    ctx = current_context()
    if not use_cache or ctx is None or ctx.store is None:
        arrays, meta = build()
    else:
        arrays, meta, _ = ctx.store.get_or_create({"kind": "bayesglm_posterior", "fp": fp},
                                                  build)
    return sampling.Draws(arrays["theta"], arrays["rhat"], dict(meta["diagnostics"]))
