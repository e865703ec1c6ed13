"""AIM synthetic data as a synthetic-data method (BinAgg paper, Table 3 "AIM" column).

No second AIM: the release is the marginals slice's (``MarginalMethod._release``, zCDP
accounting, artifact cache). The released model is sampled (Private-PGM rounding) and the
codes are decoded by the dataset's encoding (for the UCI loaders: bin midpoints / original
levels, ``dpbench.data.uci.discretize``), giving ``synthetic_ = (X, y)``.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.regression._marginal import MarginalMethod
from dpbench.privacy.accountant import Accountant


class AIMSyntheticData(MarginalMethod):
    """Synthetic records from an AIM release; ``coef_`` is their OLS fit."""

    def __init__(self, mechanism: str = "aim", workload: str = "all_pairs",
                 synth_rows: int | None = None, **mechanism_params: Any) -> None:
        super().__init__(model="linear", mechanism=mechanism, workload=workload,
                         **mechanism_params)
        if synth_rows is not None and int(synth_rows) < 1:
            raise ValueError(f"synth_rows={synth_rows} must be >= 1 or None")
        self.params["synth_rows"] = synth_rows

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        released = self._release(data, accountant, rng)
        rows = self.params["synth_rows"] or max(1, int(round(released.total)))
        X, y = data.encoding.encode(released.sample(rows, rng))
        self.synthetic_ = (X, y)
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        self._info["synth_rows"] = int(rows)
        return self
