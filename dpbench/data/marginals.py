"""Integer-coded records -> marginal count tables (the mechanisms' only view of the data)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpbench.data.workloads import Clique

if TYPE_CHECKING:
    import pandas as pd


def checked_codes(frame: pd.DataFrame, attributes: Sequence[str],
                  sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The columns ``attributes`` as int64 arrays, checked to lie in [0, size)."""
    missing = [a for a in attributes if a not in frame.columns]
    if missing:
        raise ValueError(f"discrete data lacks attributes {missing}; it has {list(frame.columns)}")
    out: dict[str, np.ndarray] = {}
    for a in attributes:
        col = frame[a].to_numpy()
        if not np.issubdtype(col.dtype, np.integer):
            raise ValueError(f"attribute {a!r} must be integer-coded, got dtype {col.dtype}")
        size = int(sizes[a])
        if col.size and (col.min() < 0 or col.max() >= size):
            raise ValueError(f"attribute {a!r} has codes outside [0, {size}): "
                             f"min {col.min()}, max {col.max()}")
        out[a] = col.astype(np.int64)
    return out


def data_marginal(codes: Mapping[str, np.ndarray], clique: Clique,
                  sizes: Mapping[str, int]) -> np.ndarray:
    """Counts over ``clique``, shaped (m_a, m_b, ...) in clique order."""
    shape = tuple(int(sizes[a]) for a in clique)
    flat = np.ravel_multi_index(tuple(codes[a] for a in clique), shape)
    return np.bincount(flat, minlength=math.prod(shape)).astype(float).reshape(shape)
