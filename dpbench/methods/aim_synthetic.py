"""AIM synthetic data as a synthetic-data method (BinAgg paper, Table 3 "AIM" column).

No second AIM: this is the marginals slice's AIM-Synth (same release, zCDP accounting,
artifact cache) keeping its synthetic rows. The released model is sampled (Private-PGM
rounding) and the codes are decoded by the dataset's encoding (for the UCI loaders: bin
midpoints / original levels, ``dpbench.data.uci.discretize``): ``synthetic_ = (X, y)``.
"""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.regression.aim_synth import AIMSynth
from dpbench.privacy.accountant import Accountant


class AIMSyntheticData(AIMSynth):
    """Synthetic records from an AIM release; ``coef_`` is their OLS fit."""

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        released = self._release(data, accountant, rng)
        rows = self.params["synth_rows"] or max(1, int(round(released.total)))
        X, y = data.encoding.encode(released.sample(rows, rng))
        self.synthetic_ = (X, y)
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        self._info["synth_rows"] = int(rows)
        return self
