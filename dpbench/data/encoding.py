"""Numeric encodings of discrete attributes (DD-SSP paper, Sec. 3.1 and App. G.1).

Categorical attributes: reduced one-hot (first level dropped), A_j = I_j without
its first row. Numeric attributes: the scalar encoding v_j(s) = 2 s/(m_j - 1) - 1,
i.e. level indices rescaled to [-1, 1]. By Prop. 3.1 every encoded row then
satisfies ||x||_2 <= sqrt(#attributes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Encoding

TARGET_KINDS = ("numeric", "binary_pm1", "binary_01")


def scalar_levels(m: int) -> NDArray:
    """Levels 0..m-1 rescaled to [-1, 1] (a single level maps to 0)."""
    return np.zeros(1) if m == 1 else 2.0 * np.arange(m) / (m - 1) - 1.0


def reduced_one_hot(m: int) -> NDArray:
    """(m-1) x m identity with the first row dropped."""
    return np.eye(m)[1:]


def target_values(m: int, kind: str) -> NDArray:
    """Numeric value of each target level."""
    if kind == "numeric":
        return scalar_levels(m)
    if m != 2:
        raise ValueError(f"target kind {kind!r} needs a binary attribute, got {m} levels")
    if kind == "binary_pm1":
        return np.array([-1.0, 1.0])
    if kind == "binary_01":
        return np.array([0.0, 1.0])
    raise ValueError(f"target kind {kind!r} unknown; valid: {', '.join(TARGET_KINDS)}")


def build_encoding(domain: Mapping[str, int], target: str, categorical: Sequence[str],
                   target_kind: str = "numeric") -> Encoding:
    """Encoding of every non-target attribute of ``domain`` (in domain order)."""
    attrs = tuple(a for a in domain if a != target)
    unknown = sorted(set(categorical) - set(attrs))
    if unknown:
        raise ValueError(f"categorical attributes {unknown} not in the domain; "
                         f"valid: {list(attrs)}")
    cat = set(categorical)
    matrices: dict[str, NDArray] = {}
    columns: list[str] = []
    for a in attrs:
        m = int(domain[a])
        if a in cat:
            matrices[a] = reduced_one_hot(m)
            columns += [f"{a}={s}" for s in range(1, m)]
        else:
            matrices[a] = scalar_levels(m)[None, :]
            columns.append(a)
    return Encoding(attributes=attrs, matrices=matrices, target=target,
                    target_values=target_values(int(domain[target]), target_kind),
                    columns=tuple(columns))


def feature_bound(encoding: Encoding) -> float:
    """sqrt(#numeric + #one-hot attributes): the Prop. 3.1 bound on ||x||_2."""
    return float(np.sqrt(len(encoding.attributes)))
