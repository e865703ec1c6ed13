"""MST (McKenna, Miklau & Sheldon 2021), the DD-SSP paper's Fig. 5 alternative to AIM.

The zCDP budget rho (from the ledger) is split in three equal parts:

1. every 1-way marginal is measured with N(0, sigma^2 d) noise (the d marginals
   together have L2 sensitivity 1 at noise sigma = sqrt(3 / (2 rho))), cost rho/3;
2. domain compression: the levels of an attribute whose noisy count is below
   3 sqrt(d) sigma (3 noise sds) are merged into one level, and the 1-way
   measurement is re-expressed on the compressed domain (free post-processing);
3. a maximum spanning tree over the attributes is selected with d - 1
   exponential-mechanism draws (Kruskal order; score = L1 distance between the
   compressed 2-way data marginal and the model fitted to the 1-way
   measurements; sensitivity 1; each draw eps = sqrt(8 (rho/3) / (d - 1)),
   charged eps^2 / 8), cost rho/3;
4. the d - 1 tree marginals are measured with N(0, sigma^2 (d - 1)) each, cost rho/3;
5. Private-PGM estimates the model from all measurements.

Compressed levels are expanded back uniformly by :class:`MarginalModel`. Under replace-one
neighbours (``relation``, for a comparison stated so) the same steps run at the replace-one
sensitivities: sigma = sqrt(3 l2^2 / (2 rho)) with l2 = sqrt(2), scores' sensitivity 2.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from dpbench.data.marginals import checked_codes, data_marginal
from dpbench.data.workloads import Clique
from dpbench.methods.marginals import _mbi
from dpbench.methods.marginals.model import MarginalModel, RhoCharge
from dpbench.methods.marginals.noise import measure, noise_is_off, select
from dpbench.methods.marginals.settings import MSTSettings
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.relations import histogram_sensitivity

if TYPE_CHECKING:
    import pandas as pd

#: MST's neighbouring relation in its paper: one record added or removed (a marginal's L2
#: sensitivity 1, a score's (an L1 distance to a fixed model) change at most 1);
#: ``relation="replace_one"`` runs it at the replace-one sensitivities (L2 sqrt(2), L1 2;
#: privacy/relations.py)
RELATION = "add_remove"


def run_mst(data: pd.DataFrame, sizes: Mapping[str, int], accountant: Accountant,
            rng: np.random.Generator, settings: MSTSettings | None = None,
            relation: str = RELATION) -> MarginalModel:
    """Run MST on the integer-coded ``data`` (its columns, in order, are the attributes),
    private under ``relation`` (every measurement's sd scaled by the marginals' L2
    sensitivity l2, every score's sensitivity their L1 sensitivity l1)."""
    s = settings or MSTSettings()
    l1, l2 = histogram_sensitivity(relation)
    if accountant.currency != "zcdp":
        raise TypeError(f"MST composes in zCDP; got a {accountant.currency!r} ledger")
    t_start = time.perf_counter()
    attrs = list(data.columns)
    d = len(attrs)
    if d < 2:
        raise ValueError(f"MST needs at least 2 attributes, got {attrs}")
    codes = checked_codes(data, attrs, sizes)
    rho = accountant.remaining()
    sigma = math.sqrt(3 * l2**2 / (2 * rho))
    charges: list[RhoCharge] = []

    def charge(rho_i: float, label: str) -> None:
        accountant.charge_rho(rho_i, label)
        charges.append(RhoCharge(label, rho_i))

    # 1. 1-way marginals, jointly sensitivity l2 at noise sigma
    s1 = sigma * math.sqrt(d)
    noisy1: dict[str, np.ndarray] = {}
    for a in attrs:
        charge(l2**2 / (2 * s1**2), f"mst:1way:{a}")
        noisy1[a] = measure(data_marginal(codes, (a,), sizes), s1, rng, sensitivity=l2,
                            relation=relation, label=f"mst:1way:{a}")

    # 2. domain compression
    mapping: dict[str, np.ndarray] = {}
    if s.compress:
        for a in attrs:
            keep = noisy1[a] >= s.threshold * s1
            if not keep.all():
                m = np.full(keep.size, int(keep.sum()), dtype=np.int64)
                m[keep] = np.arange(int(keep.sum()))
                mapping[a] = m
    msizes = {a: int(mapping[a].max()) + 1 if a in mapping else int(sizes[a]) for a in attrs}
    mcodes = {a: mapping[a][codes[a]] if a in mapping else codes[a] for a in attrs}
    domain = _mbi.to_domain(attrs, msizes)
    full = _mbi.to_domain(attrs, sizes)
    log1 = []
    for a in attrs:
        m = _mbi.measurement(noisy1[a], (a,), s1)
        log1.append(m.compress({a: mapping[a]}, full) if a in mapping else m)

    # 3. spanning tree by the exponential mechanism
    t0 = time.perf_counter()
    start = _to_model(_mbi.estimate_mrf(domain, log1, iters=s.select_iters), attrs, msizes)
    pairs = list(itertools.combinations(attrs, 2))
    est = start.marginals(pairs)
    weight = {p: float(np.abs(data_marginal(mcodes, p, msizes) - est[p]).sum()) for p in pairs}
    eps = math.sqrt(8 * (rho / 3) / (d - 1))
    comp = {a: a for a in attrs}

    def find(a: str) -> str:
        while comp[a] != a:
            a = comp[a]
        return a

    tree: list[Clique] = []
    for step in range(d - 1):
        cands = [p for p in pairs if find(p[0]) != find(p[1])]
        charge(eps**2 / 8, f"mst:select:{step + 1}")
        a, b = cands[select([weight[p] for p in cands], eps, l1, rng, relation=relation,
                            label=f"mst:select:{step + 1}")]
        comp[find(b)] = find(a)
        tree.append((a, b))
    t_select = time.perf_counter() - t0

    # 4. tree marginals, jointly sensitivity l2 at noise sigma
    s2 = sigma * math.sqrt(d - 1)
    log2 = []
    for cl in tree:
        label = f"mst:2way:{'|'.join(cl)}"
        charge(l2**2 / (2 * s2**2), label)
        noisy2 = measure(data_marginal(mcodes, cl, msizes).ravel(), s2, rng, sensitivity=l2,
                         relation=relation, label=label)
        log2.append(_mbi.measurement(noisy2, cl, s2))

    # 5. Private-PGM
    t0 = time.perf_counter()
    model = _to_model(_mbi.estimate_mrf(domain, log1 + log2, iters=s.max_iters), attrs, sizes,
                      mapping)
    model.charges = charges
    model.info = {
        "mechanism": "mst", "settings": s.as_dict(), "rho": rho,
        "tree": ["|".join(c) for c in tree],
        "compressed": {a: [int(sizes[a]), msizes[a]] for a in mapping},
        "seconds_estimation": time.perf_counter() - t0, "seconds_selection": t_select,
        "seconds": time.perf_counter() - t_start, "noise_disabled": noise_is_off(),
    }
    return model


def _to_model(fit: object, attrs: list[str], sizes: Mapping[str, int],
              compression: Mapping[str, np.ndarray] | None = None) -> MarginalModel:
    """An mbi MRF fitted on the compressed domain, as a model over ``sizes`` (the original
    sizes with ``compression``, or the compressed sizes without)."""
    cliques, tables, total = _mbi.mrf_tables(fit)
    return MarginalModel(tuple(attrs), {a: int(sizes[a]) for a in attrs}, "mrf", total,
                         cliques=cliques, tables=tables, compression=dict(compression or {}))
