"""The one interface every method implements.

A method is configured by keyword hyperparameters (from its yaml's ``params``),
then fitted on a :class:`~dpbench.data.base.TabularData` under an
:class:`~dpbench.privacy.Accountant` with an explicit numpy Generator. It
never reads configs or files. Fitted state ends in ``_`` (scikit-learn style).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.privacy.accountant import Accountant, Currency


class Method(ABC):
    """Base class: ``Method(**params).fit(data, accountant, rng)``."""

    #: the ledger currency the method composes in
    accounting: ClassVar[Currency] = "approx"
    #: False for non-private baselines (they charge nothing)
    private: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        self.params = dict(params)

    @abstractmethod
    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        """Fit under the budget; must charge every release to ``accountant``."""

    def info(self) -> dict[str, Any]:
        """Extra JSON-serialisable facts worth storing with the trial (default none)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


class LinearModel(Method):
    """A method whose output is a coefficient vector ``coef_`` (no intercept)."""

    coef_: NDArray

    def decision_function(self, X: NDArray) -> NDArray:
        return np.asarray(X) @ self.coef_

    def predict(self, X: NDArray) -> NDArray:
        return self.decision_function(X)
