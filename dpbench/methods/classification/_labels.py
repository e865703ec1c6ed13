"""Binary labels as +-1 margins, whatever coding ({0,1} or {-1,+1}) a dataset uses."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def to_pm1(y: NDArray) -> NDArray:
    """Map a binary label vector to {-1, +1}: the larger of the two values becomes +1.

    This matches scikit-learn (``classes_`` sorted, ``coef_`` points to the larger
    class), so every classifier here shares one sign convention.
    """
    values = np.unique(np.asarray(y))
    if values.size != 2:
        raise ValueError(f"binary labels needed, got {values.size} distinct values "
                         f"{values[:5].tolist()}; valid: exactly two values such as {{0, 1}}")
    return np.where(np.asarray(y) == values[1], 1.0, -1.0)


def logistic_loss(margins: NDArray) -> NDArray:
    """log(1 + exp(-m)) computed stably."""
    return np.logaddexp(0.0, -margins)
