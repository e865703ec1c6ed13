"""Numeric encodings of discrete attributes: one ``build_encoding`` for every scheme.

Schemes (``SCHEMES``), each mapping attribute j with m_j levels through a matrix A_j:

- ``ddssp`` (default; DD-SSP paper, Sec. 3.1 and App. G.1): the scalar encoding
  v_j(s) = 2 s/(m_j - 1) - 1 (levels rescaled to [-1, 1]), or reduced one-hot (first level
  dropped, A_j = I_j without its first row) for the attributes listed as ``categorical``;
  by Prop. 3.1 every encoded row then satisfies ||x||_2 <= sqrt(#attributes).
- ``raw``: every attribute is its integer code as one column (A_j = arange(m_j)) and the
  target keeps its class codes 0..m-1: what the excess-risk paper (Zhou et al., ICML 2024)
  feeds scikit-learn's default LogisticRegression (papers/exrisk).
- ``onehot``: FULL one-hot of every attribute (A_j = I_j). Full rather than reduced: the
  dpbench linear methods fit no intercept, and a full block restores one (every block sums
  to 1) and weights every level alike under a penalty, where the reduced form would make
  the first level the zero vector; each row sums to #attributes and ||x||_2 = sqrt(#attributes).
- ``pm1``: every attribute as scalar levels in [-1, 1] and binary labels -1/+1: the
  excess-risk theory's scaling (a multi-class target keeps its codes 0..m-1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Encoding

#: encoding schemes (module docstring); ``ddssp`` is the default
SCHEMES = ("ddssp", "raw", "onehot", "pm1")
#: numeric label values of the target's levels: ``numeric`` = scalar levels in [-1, 1],
#: ``codes`` = the class codes 0..m-1 (for multi-class targets), the binary kinds as named
TARGET_KINDS = ("numeric", "binary_pm1", "binary_01", "codes")


def scalar_levels(m: int) -> NDArray:
    """Levels 0..m-1 rescaled to [-1, 1] (a single level maps to 0)."""
    return np.zeros(1) if m == 1 else 2.0 * np.arange(m) / (m - 1) - 1.0


def reduced_one_hot(m: int) -> NDArray:
    """(m-1) x m identity with the first row dropped."""
    return np.eye(m)[1:]


def target_values(m: int, kind: str) -> NDArray:
    """Numeric value of each target level."""
    if kind not in TARGET_KINDS:
        raise ValueError(f"target kind {kind!r} unknown; valid: {', '.join(TARGET_KINDS)}")
    if kind == "numeric":
        return scalar_levels(m)
    if kind == "codes":
        return np.arange(m, dtype=float)
    if m != 2:
        raise ValueError(f"target kind {kind!r} needs a binary attribute, got {m} levels")
    return np.array([-1.0, 1.0]) if kind == "binary_pm1" else np.array([0.0, 1.0])


def default_target_kind(scheme: str, m: int) -> str:
    """The target kind a scheme uses unless one is given (``m`` = target levels)."""
    if scheme == "ddssp":
        return "numeric"
    if scheme == "pm1" and m == 2:
        return "binary_pm1"
    return "codes"


def _feature_block(scheme: str, a: str, m: int, categorical: bool) -> tuple[NDArray, list[str]]:
    """A_j and its column names for attribute ``a`` with ``m`` levels under ``scheme``."""
    if scheme == "raw":
        return np.arange(m, dtype=float)[None, :], [a]
    if scheme == "onehot":
        return np.eye(m), [f"{a}={s}" for s in range(m)]
    if scheme == "ddssp" and categorical:
        return reduced_one_hot(m), [f"{a}={s}" for s in range(1, m)]
    return scalar_levels(m)[None, :], [a]


def build_encoding(domain: Mapping[str, int], target: str, categorical: Sequence[str] = (),
                   target_kind: str | None = None, scheme: str = "ddssp") -> Encoding:
    """Encoding of every non-target attribute of ``domain`` (in domain order) under ``scheme``.

    ``categorical`` lists the reduced one-hot attributes of the ``ddssp`` scheme (the other
    schemes encode every attribute alike and ignore it); ``target_kind`` None means the
    scheme's default (``default_target_kind``).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"encoding scheme {scheme!r} unknown; valid: {', '.join(SCHEMES)}")
    if target not in domain:
        raise ValueError(f"target {target!r} not in the domain; valid: {', '.join(domain)}")
    attrs = tuple(a for a in domain if a != target)
    unknown = sorted(set(categorical) - set(attrs))
    if unknown:
        raise ValueError(f"categorical attributes {unknown} not in the domain; "
                         f"valid: {list(attrs)}")
    cat = tuple(a for a in attrs if a in set(categorical)) if scheme == "ddssp" else ()
    matrices: dict[str, NDArray] = {}
    columns: list[str] = []
    for a in attrs:
        matrices[a], names = _feature_block(scheme, a, int(domain[a]), a in cat)
        columns += names
    m = int(domain[target])
    kind = default_target_kind(scheme, m) if target_kind is None else target_kind
    return Encoding(attributes=attrs, matrices=matrices, target=target,
                    target_values=target_values(m, kind), columns=tuple(columns),
                    scheme=scheme, categorical=cat)


def retarget(encoding: Encoding, domain: Mapping[str, int], target: str,
             target_kind: str | None = None) -> Encoding:
    """The same scheme (and ddssp categorical set) for another ``target`` of ``domain``.

    A task that scores several targets from one table (the excess-risk paper's Fig. 5:
    Adult income, sex, relationship) encodes each target's features exactly as the loader
    would have; the old target becomes a feature. ``target_kind`` None = the scheme's default.
    """
    categorical = [a for a in encoding.categorical if a != target]
    return build_encoding(domain, target, categorical, target_kind, encoding.scheme)


def feature_bound(encoding: Encoding) -> float:
    """Public bound on ||x||_2: sqrt(sum_j max(1, max_s ||A_j e_s||^2)).

    Every ddssp / onehot / pm1 block has column norms <= 1, so this is Prop. 3.1's
    sqrt(#attributes); a raw block contributes its largest code squared, (m_j - 1)^2.
    """
    per_attr = [max(1.0, float(np.max(np.sum(np.asarray(encoding.matrices[a]) ** 2, axis=0))))
                for a in encoding.attributes]
    return float(np.sqrt(sum(per_attr)))
