"""Train/test splitting (DD-SSP App. G.1: shuffle, 1,000 test rows, <= 50,000 train)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def shuffle_split(n: int, n_test: int, n_train_max: int | None,
                  rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """Row indices (train, test): a random permutation, the first ``n_test`` rows for test."""
    if not 0 < n_test < n:
        raise ValueError(f"n_test={n_test} must lie in (0, {n})")
    perm = rng.permutation(n)
    test, train = perm[:n_test], perm[n_test:]
    if n_train_max is not None:
        train = train[:n_train_max]
    return np.sort(train), np.sort(test)
