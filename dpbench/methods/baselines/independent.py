"""Baseline "independent": synthetic records from private independent 1-way marginals.

Every 1-way marginal (count table) of the k attributes is measured once with the Gaussian
mechanism under zCDP, the budget rho (the ledger's) split equally: rho / k each, noise sd
sigma = 1 / sqrt(2 rho / k). Neighbouring datasets are **add/remove** (one record added or
removed changes one cell of each 1-way count table by 1: L2 sensitivity 1 per table), as
MST's 1-way measurements in this repository; ``relation="replace_one"`` measures at the
replace-one sensitivity sqrt(2) per table (sigma = sqrt(2) / sqrt(2 rho / k)).

Post-processing (no budget): each noisy table is clipped at 0 and normalised (uniform if
nothing is left); the number of records is the noisy n (under add/remove n is private): the
inverse-variance weighted mean of the k noisy table totals (total j has variance m_j
sigma^2), rounded, at least 1. The records are drawn i.i.d. from the product of the k
distributions with a seed spawned from the fit's generator after the measurements
(``dpbench.methods.records``); (X, y) are the data's encoding of them.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.data.marginals import checked_codes, data_marginal
from dpbench.methods.base import NEIGHBOUR_RELATIONS
from dpbench.methods.baselines._records import RecordsBaseline
from dpbench.methods.marginals.noise import measure
from dpbench.methods.records import (
    block_distributions,
    post_seed,
    product_rows,
    sample_blocks,
)
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_zcdp
from dpbench.privacy.relations import histogram_sensitivity

RELATION = "add_remove"


def noisy_total(tables: dict[str, np.ndarray]) -> float:
    """The inverse-variance weighted mean of the tables' totals (total j: variance
    proportional to its m_j cells)."""
    weights = np.array([1.0 / t.size for t in tables.values()])
    totals = np.array([float(t.sum()) for t in tables.values()])
    return float(weights @ totals / weights.sum())


class Independent(RecordsBaseline):
    """Independent 1-way marginals (module docstring); no hyperparameters."""

    accounting = "zcdp"
    neighbours = RELATION
    relations = NEIGHBOUR_RELATIONS

    def __init__(self, relation: str = RELATION) -> None:
        super().__init__()
        self.params.update(self.own_relation(relation))   # the release is private under it

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        if data.discrete is None or data.domain is None:
            raise ValueError("the independent baseline needs discrete data (a dataset that "
                             "provides `discrete`)")
        if accountant.currency != "zcdp":
            raise TypeError(f"the independent baseline composes in zCDP; this ledger is "
                            f"{accountant.currency!r}")
        domain = {a: int(m) for a, m in data.domain.items()}
        codes = checked_codes(data.discrete, list(domain), domain)
        rho_each = accountant.remaining() / len(domain)
        l2 = histogram_sensitivity(self.neighbours)[1]
        sigma = sigma_zcdp(rho_each, l2)
        noisy: dict[str, np.ndarray] = {}
        for a in domain:
            label = f"1-way marginal ({a})"
            accountant.charge_rho(rho_each, label)
            noisy[a] = measure(data_marginal(codes, (a,), domain), sigma, rng,
                               sensitivity=l2, relation=self.neighbours, label=label)
        self.sigma_, self.noisy_ = sigma, noisy
        self.n_synthetic_ = max(1, round(noisy_total(noisy)))
        sizes = list(domain.values())
        self.marginals_ = {a: p[0] for a, p in
                           zip(domain, block_distributions(product_rows(noisy), sizes),
                               strict=True)}
        self.records_ = sample_blocks(product_rows(self.marginals_), list(domain), sizes,
                                      self.n_synthetic_, post_seed(rng))
        self.encoding_ = data.encoding
        return self

    def info(self) -> dict[str, Any]:
        return {**super().info(), "sigma": self.sigma_}
