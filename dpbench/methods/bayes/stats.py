"""Degree-2 PASS-GLM sufficient statistics (Kulkarni et al., Sec. 3.2 and eq. 7).

Per record, ``t1(x) = x`` and ``t2(x) = [x_1^2 .. x_d^2, sqrt(2) x_1 x_2, .., sqrt(2) x_{d-1} x_d]``
(the sqrt(2) weights make ``||t2(x) - t2(x')||^2 = ||x||^4 + ||x'||^4 - 2<x,x'>^2``).

- logistic (y in {-1, +1}): ``t(x, y) = [y t1(x), y^2 t2(x)]`` (d + d(d+1)/2 entries);
  the constant 1 is the public record count N and is not released.
- Poisson (y in {0, 1, ..}):  ``t(x, y) = [t1(x), t2(x), y t1(x), y t2(x)]`` (Lemma 3.4.2).

Each entry is described by a :class:`Component` (monomial of x, weight and
power of y) so the moment code (``moments.py``) reads the same layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

GLMS = ("logistic", "poisson")


@dataclass(frozen=True)
class Component:
    """One statistic entry: ``weight * prod(x[i] for i in index) * y**y_power``."""

    index: tuple[int, ...]
    weight: float
    y_power: int


def quadratic_pairs(d: int) -> list[tuple[int, int]]:
    """Index pairs of t2: the squares (i, i) first, then (i, j), i < j, lexicographically."""
    return [(i, i) for i in range(d)] + [(i, j) for i in range(d) for j in range(i + 1, d)]


def components(glm: str, d: int) -> list[Component]:
    """Layout of the released statistic vector for ``glm`` with d features."""
    check_glm(glm)
    lin = [((i,), 1.0) for i in range(d)]
    quad = [((i, j), 1.0 if i == j else math.sqrt(2.0)) for i, j in quadratic_pairs(d)]
    if glm == "logistic":
        return [Component(ix, w, 1) for ix, w in lin] + [Component(ix, w, 2) for ix, w in quad]
    blocks = [(lin, 0), (quad, 0), (lin, 1), (quad, 1)]
    return [Component(ix, w, p) for part, p in blocks for ix, w in part]


def t1(X: NDArray) -> NDArray:
    """Linear terms, shape (n, d)."""
    return np.asarray(X, dtype=float)


def t2(X: NDArray) -> NDArray:
    """Weighted quadratic terms, shape (n, d(d+1)/2)."""
    X = np.asarray(X, dtype=float)
    pairs = quadratic_pairs(X.shape[1])
    i, j = (np.array(p, dtype=int) for p in zip(*pairs, strict=True)) if pairs else ([], [])
    w = np.where(i == j, 1.0, math.sqrt(2.0))
    return X[:, i] * X[:, j] * w


def per_record(glm: str, X: NDArray, y: NDArray) -> NDArray:
    """t(x_i, y_i) for every record, shape (n, m), in the order of :func:`components`."""
    check_glm(glm)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)[:, None]
    if glm == "logistic":
        return np.hstack([y * t1(X), y**2 * t2(X)])
    q1, q2 = t1(X), t2(X)
    return np.hstack([q1, q2, y * q1, y * q2])


def check_glm(glm: str) -> None:
    if glm not in GLMS:
        raise ValueError(f"glm={glm!r} is invalid; valid: {', '.join(GLMS)}")
