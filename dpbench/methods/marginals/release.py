"""One private marginal release per trial cell, shared by every method that uses it.

``release_marginals`` runs AIM or MST on a training split's discrete records
(the encoding's feature attributes plus the target) against a fresh zCDP ledger
with the trial's (eps, delta), then charges the recorded releases to the
caller's ledger. Inside the runner's artifact context the fitted model is
cached by content (cell, attributes, domain, workload, mechanism settings,
eps, delta, a fingerprint of the records, code version), so DD-SSP and
AIM-Synth of the same cell use one fit and are charged the same amount; the
mechanism's randomness is then seeded from the cell and the settings (never
from the records, nor from the consumer's name). Outside a context, or with
noise disabled, nothing is cached and the mechanism draws from the caller's rng.

The mechanisms (aim.py, mst.py, hence mbi and JAX) are imported when a release is made,
not with this module: the method classes built on it are imported (and constructed) by
commands that only plan.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbench import lazy
from dpbench.artifacts import current_context
from dpbench.data.base import TabularData
from dpbench.data.workloads import WORKLOADS, build_workload, is_workload
from dpbench.methods.marginals.model import MarginalModel
from dpbench.methods.marginals.noise import noise_is_off
from dpbench.methods.marginals.settings import EXACT_ORACLES, AIMSettings, MSTSettings
from dpbench.privacy.accountant import Accountant

# the mechanisms (mbi, JAX): imported when a release is made
aim = lazy.module("dpbench.methods.marginals.aim")
mst = lazy.module("dpbench.methods.marginals.mst")

MECHANISMS = ("aim", "mst")
ARTIFACT_VERSION = 1

#: method parameter -> settings field, per mechanism (None-valued params keep defaults)
AIM_PARAMS = ("max_model_size", "max_iters", "final_iters", "rounds", "rounds_per_attribute",
              "alpha", "estimator",
              "mixture_components", "mixture_lr", "oracle", "shared_max_cells")
MST_PARAMS = ("max_iters", "select_iters", "compress", "threshold")


def build_settings(mechanism: str, params: Mapping[str, Any]) -> AIMSettings | MSTSettings:
    """Mechanism settings from flat method parameters; a set parameter the mechanism does
    not use is an error (it would silently do nothing)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism={mechanism!r}; valid: {', '.join(MECHANISMS)}")
    used = AIM_PARAMS if mechanism == "aim" else MST_PARAMS
    known = set(AIM_PARAMS) | set(MST_PARAMS)
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        raise ValueError(f"unknown mechanism parameters {unknown}; valid: {sorted(known)}")
    stray = sorted(k for k, v in params.items() if v is not None and k not in used)
    if stray:
        raise ValueError(f"parameters {stray} do not apply to mechanism={mechanism!r}; "
                         f"it takes {list(used)}")
    given = {k: v for k, v in params.items() if v is not None}
    return AIMSettings(**given) if mechanism == "aim" else MSTSettings(**given)


def data_fingerprint(frame: Any, attributes: tuple[str, ...], sizes: Mapping[str, int]) -> str:
    """sha256 of the attribute names, domain sizes and int64 codes (row-major)."""
    h = hashlib.sha256()
    h.update(repr([(a, int(sizes[a])) for a in attributes]).encode())
    h.update(np.ascontiguousarray(frame[list(attributes)].to_numpy(dtype=np.int64)).tobytes())
    return h.hexdigest()


def release_marginals(data: TabularData, accountant: Accountant, rng: np.random.Generator, *,
                      mechanism: str, workload: str, settings: AIMSettings | MSTSettings,
                      max_cells: int | None = None, relation: str = "add_remove"
                      ) -> tuple[MarginalModel, dict[str, Any]]:
    """(model, info): the marginal model of ``data``'s features + target, paid for, private
    under ``relation`` (the mechanisms' add/remove or replace-one sensitivities).

    ``max_cells`` drops workload marginals with more cells (AIM only)."""
    if data.discrete is None or data.domain is None or data.encoding is None:
        raise ValueError("marginal-based methods need discrete records with a domain and an "
                         "encoding (datasets loaded by dpbench.data.discrete.load_discrete)")
    if not is_workload(workload):
        raise ValueError(f"workload={workload!r}; valid: {', '.join(WORKLOADS)}")
    enc = data.encoding
    attrs = (*enc.attributes, enc.target)
    sizes = {a: int(data.domain[a]) for a in attrs}
    frame = data.discrete[list(attrs)]
    chosen = settings.as_dict()
    # The oracle only changes the arithmetic of the estimation (post-processing): not part of
    # the seed, so fits with either oracle draw the same noise; an mrf fit with any oracle
    # but hugin gets its own artifact (absent for hugin, the default until 2026-11-25, so
    # earlier artifacts keep their keys and seeds, and answer hugin requests only).
    oracle = chosen.pop("oracle", "hugin")
    keyed_oracle = oracle if oracle != "hugin" and chosen.get("estimator") == "mrf" else None
    # Likewise the estimation program (flat.py's shared one for small models, or mbi's per
    # structure): same noise, its own artifact, since the fits differ in summation order.
    shared = chosen.pop("shared_max_cells", 0) * (oracle in EXACT_ORACLES)
    fields = {
        "artifact": "marginal-release", "version": ARTIFACT_VERSION, "mechanism": mechanism,
        "workload": workload if mechanism == "aim" else None, "settings": chosen,
        "epsilon": float(accountant.epsilon), "delta": float(accountant.delta),
        "attributes": list(attrs), "sizes": sizes,
    }
    if max_cells is not None:           # absent when unset: earlier artifacts keep their keys
        fields["max_cells"] = int(max_cells)
    if relation != "add_remove":        # likewise: the papers' relation keeps its keys
        fields["relation"] = relation

    def fit(seed_rng: np.random.Generator) -> MarginalModel:
        ledger = Accountant(accountant.epsilon, accountant.delta, "zcdp")
        t0 = time.perf_counter()
        if mechanism == "aim":
            w = build_workload(workload, attrs, target=enc.target, domain=sizes,
                               max_cells=None if max_cells is None else int(max_cells))
            model = aim.run_aim(frame, sizes, w, ledger, seed_rng, settings, relation)
        else:
            model = mst.run_mst(frame, sizes, ledger, seed_rng, settings, relation)
        model.info["mechanism_seconds"] = time.perf_counter() - t0
        return model

    ctx = current_context()
    if ctx is None or ctx.store is None or noise_is_off():
        model, hit, key = fit(rng), False, None
    else:
        seed = ctx.seed(fields)
        keyed = {**fields, "cell": ctx.cell,
                 "data": data_fingerprint(frame, attrs, sizes)}
        if keyed_oracle:
            keyed["oracle"] = keyed_oracle
        if shared:
            keyed["shared_max_cells"] = int(shared)
        arrays, meta, hit = ctx.store.get_or_create(
            keyed, lambda: fit(np.random.default_rng(seed)).to_arrays())
        model = MarginalModel.from_arrays(arrays, meta)
        key = meta["artifact_key"]

    for c in model.charges:
        accountant.charge_rho(c.rho, c.label)
    keep = ("mechanism", "rounds", "annealed_rounds", "model_size_mb", "mechanism_seconds",
            "noise_disabled", "oracle_fallbacks")
    info = {k: model.info[k] for k in keep if k in model.info}
    info.update(cache_hit=bool(hit), artifact_key=key, n_releases=len(model.charges))
    return model, info
