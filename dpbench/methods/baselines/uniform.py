"""Baseline "uniform": n synthetic records drawn uniformly over the discrete domain.

The records read nothing of the private rows: each attribute's code is drawn uniformly from
its ``domain`` size (public), independently, n times, with n the number of private rows.
Neighbouring datasets are **replace-one** (n public), so the release is a function of public
facts and the method's own randomness: 0-DP. The runner refuses a private method that charges
nothing, so the ledger (pure) is charged an explicit epsilon of 0 and the trace records one
``pure`` step of epsilon 0 (``dpbench.privacy.noise.reads_nothing``), which is what the
privacy audit prices.
(X, y) are the data's encoding of the records.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.baselines._records import RecordsBaseline
from dpbench.methods.records import codes_frame
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant

LABEL = "uniform: no data read"


class Uniform(RecordsBaseline):
    """Uniform records over the domain (module docstring); no hyperparameters."""

    accounting = "pure"
    neighbours = "replace_one"

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        if data.domain is None:
            raise ValueError("the uniform baseline needs a discrete domain (a dataset that "
                             "provides `discrete`)")
        accountant.charge_pure(0.0, LABEL)
        noise.reads_nothing(LABEL, relation=self.neighbours)
        domain = dict(data.domain)
        codes = [rng.integers(0, int(m), data.n)  # not privacy noise: reads no row
                 for m in domain.values()]
        self.records_ = codes_frame(np.column_stack(codes), list(domain))
        self.encoding_ = data.encoding
        return self

