"""One-line ValueErrors for bad privacy parameters (shared by the privacy modules).

Any real number type is accepted (Python, numpy scalars, 0-d arrays); bools, strings, None, nan
and infinities are refused with a message naming the value and the valid range.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _is_real(x: object) -> bool:
    if isinstance(x, np.ndarray) and x.ndim == 0:  # 0-d arrays from numpy reductions
        return x.dtype.kind in "iuf"
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_)


def check_nonneg(x: float, name: str) -> float:
    """x as a float if it is a finite number >= 0."""
    if not (_is_real(x) and math.isfinite(x) and x >= 0):
        raise ValueError(f"{name}={x!r} is invalid: it must be a finite number >= 0")
    return float(x)


def check_positive(x: float, name: str) -> float:
    """x as a float if it is a finite number > 0."""
    if not (_is_real(x) and math.isfinite(x) and x > 0):
        raise ValueError(f"{name}={x!r} is invalid: it must be a finite number > 0")
    return float(x)


def check_delta(delta: float, *, allow_zero: bool = False) -> float:
    """delta as a float if it lies in (0, 1) (or [0, 1) with allow_zero)."""
    ok = _is_real(delta) and (0 <= delta < 1 if allow_zero else 0 < delta < 1)
    if not ok:
        valid = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"delta={delta!r} is invalid: it must lie in {valid}")
    return float(delta)
