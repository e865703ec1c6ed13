"""Small discrete datasets for the marginal-mechanism tests (fast to fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.data.base import TabularData
from dpbench.data.encoding import build_encoding, feature_bound


def discrete_data(rng: np.random.Generator, n: int, domain: dict[str, int], target: str,
                  categorical: tuple[str, ...] = (), target_kind: str = "numeric"
                  ) -> TabularData:
    """Correlated integer codes: each attribute depends on the previous one, plus noise."""
    cols: dict[str, np.ndarray] = {}
    prev = None
    for a, m in domain.items():
        fresh = rng.integers(0, m, n)
        if prev is None:
            cols[a] = fresh
        else:
            follow = rng.random(n) < 0.6
            cols[a] = np.where(follow, prev % m, fresh)
        prev = cols[a]
    frame = pd.DataFrame({a: v.astype(np.int64) for a, v in cols.items()})
    return tabular(frame, domain, target, categorical, target_kind)


def tabular(frame: pd.DataFrame, domain: dict[str, int], target: str,
            categorical: tuple[str, ...] = (), target_kind: str = "numeric") -> TabularData:
    enc = build_encoding(domain, target, list(categorical), target_kind)
    X, y = enc.encode(frame)
    return TabularData(X=X, y=y, x_bound=feature_bound(enc),
                       y_bound=float(np.max(np.abs(enc.target_values))),
                       feature_names=enc.columns, target=target, discrete=frame,
                       domain=domain, encoding=enc)
