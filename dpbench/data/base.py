"""The one container every method receives: arrays plus the public facts about them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd  # annotations only: importing the data types stays light


@dataclass(frozen=True)
class Encoding:
    """How discrete attributes become the numeric design matrix.

    For attribute j with m_j levels, the encoded block is ``A_j @ onehot(x_j)``
    (DD-SSP paper, Sec. 3.1): a row vector of level values for scalar features,
    the identity with its first row dropped for reduced one-hot features.
    ``scheme`` names the rule that built the matrices (dpbench/data/encoding.py SCHEMES)
    and ``categorical`` its reduced one-hot attributes (ddssp only), so that
    ``encoding.retarget`` can build the same encoding for another target.
    """

    attributes: tuple[str, ...]          # feature attributes in column order
    matrices: Mapping[str, NDArray]      # attribute -> A_j, shape (p_j, m_j)
    target: str
    target_values: NDArray               # numeric value of each target level
    columns: tuple[str, ...]             # names of the encoded columns
    scheme: str = "ddssp"
    categorical: tuple[str, ...] = ()

    def encode(self, frame: pd.DataFrame) -> tuple[NDArray, NDArray]:
        """Map integer-coded records to (X, y)."""
        blocks = [self.matrices[a].T[frame[a].to_numpy()] for a in self.attributes]
        X = np.hstack(blocks) if blocks else np.zeros((len(frame), 0))
        y = self.target_values[frame[self.target].to_numpy()]
        return X.astype(float), y.astype(float)


@dataclass(frozen=True)
class TabularData:
    """A split of a dataset as methods see it.

    ``X``/``y`` are the encoded arrays; ``x_bound`` bounds every row's L2 norm
    and ``y_bound`` every |y| (public, data-independent: used for sensitivity).
    Marginal-based methods use ``discrete`` (integer codes) and ``domain``.
    ``truth`` carries known ground truth for synthetic data (e.g. ``beta``).
    ``x_range`` (d, 2) and ``y_range`` are optional public per-feature / label
    [lower, upper] boxes that every row respects (box-based methods: BinAgg).
    ``public`` holds public rows (integer codes over the same ``domain``; not private, no
    budget is paid to read them) that come with private rows, e.g. the query-release
    paper's 10% public split of ADULT (public-data-assisted methods: GEM-Pub).
    """

    X: NDArray
    y: NDArray
    x_bound: float
    y_bound: float
    feature_names: tuple[str, ...]
    target: str
    discrete: pd.DataFrame | None = None
    domain: Mapping[str, int] | None = None
    encoding: Encoding | None = None
    truth: Mapping[str, NDArray] = field(default_factory=dict)
    x_range: NDArray | None = None
    y_range: tuple[float, float] | None = None
    public: pd.DataFrame | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


#: what a dataset can provide beyond X, y and the norm bounds; methods and tasks declare
#: which they need, dataset yamls which they provide (``provides:``)
CAPABILITIES = {
    "discrete": "integer-coded records with a domain and an encoding (marginal-based methods)",
    "x_range": "public per-feature [lower, upper] boxes (box-based methods)",
    "truth": "known ground truth such as beta or theta (simulated data)",
    "binary_label": "a two-valued label (classification)",
    "count_label": "non-negative integer labels (Poisson regression)",
    "public_rows": "public rows over the same discrete domain (public-data-assisted methods)",
}


def capabilities(data: TabularData) -> frozenset[str]:
    """The capabilities a loaded split really has (the contract tests hold yamls to it)."""
    have = {"discrete": data.discrete is not None and data.domain is not None
            and data.encoding is not None,
            "x_range": data.x_range is not None, "truth": bool(data.truth),
            "binary_label": np.unique(data.y).size <= 2,
            "count_label": bool(np.all(data.y >= 0) and np.all(np.mod(data.y, 1) == 0)),
            "public_rows": data.public is not None and len(data.public) > 0}
    return frozenset(k for k, ok in have.items() if ok)


@dataclass(frozen=True)
class Split:
    """Train and test parts of one trial's data.

    ``resplits`` > 0 asks the task to score on that many random re-splits of ``train``
    (each holding out a ``resplit_test_frac`` share as test) instead of on train/test as
    given. This is the excess-risk paper's protocol (papers/exrisk): the generator is fitted on
    every row, and the evaluation splits are then drawn from the same rows, so their test
    rows were seen by the generator. 0 (the default) = use ``train``/``test`` as given.
    ``resplit_seed`` (drawn by the loader from the trial's data generator) seeds them: every
    method and epsilon of a trial is scored on the same re-splits, each trial on its own.
    """

    train: TabularData
    test: TabularData
    resplits: int = 0
    resplit_test_frac: float = 0.2
    resplit_seed: int = 0
