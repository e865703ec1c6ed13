"""Polynomial approximations of a function sampled on a grid (non-private; charge nothing).

They fit data from ``dpbench.data.functions.function_grid``: X is the monomial basis
[1, x, ..., x^d] of a grid covering [a, b] = [min x, max x] and y = f(x). The fitted
``coef_`` are the polynomial's monomial coefficients (zero-padded to the basis' d + 1), so
the ``approximation`` task scores them as a linear fit on X.

- :class:`Bernstein`: the iterated Bernstein polynomial I - (I - B_n)^k of f on [a, b]
  (k = 1: the Bernstein polynomial B_n f); it uses f only at the nodes a + i (b - a) / n.
- :class:`Minimax`: the best uniform degree-n approximation on the grid (a linear program).
- :class:`GivenPolynomial`: fixed coefficients, e.g. a polynomial printed in a paper, so it
  is scored on the same grid; not a method.
"""

from __future__ import annotations

from math import comb
from typing import Any, Self

import numpy as np
from numpy.polynomial import Polynomial
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.privacy.accountant import Accountant

# scipy (~0.4 s): imported when the method fits, not when `dpbench list` / `plan` reads it
optimize = lazy.module("scipy.optimize")


def grid_of(data: TabularData, degree: int, who: str) -> tuple[NDArray, NDArray]:
    """(x, f(x)) of a function grid whose X is [1, x, ..., x^d] with d >= ``degree``;
    otherwise a one-line ValueError naming ``who``."""
    X = np.asarray(data.X, dtype=float)
    d = X.shape[1] - 1
    if d < 1:
        raise ValueError(f"{who}: data has {X.shape[1]} column(s); expected a monomial basis "
                         "[1, x, ..., x^d] (a function_grid dataset)")
    x = X[:, 1]
    if not np.allclose(X, np.vander(x, d + 1, increasing=True), rtol=1e-9, atol=1e-12):
        raise ValueError(f"{who}: data columns are not the monomial basis [1, x, ..., x^{d}] "
                         "(a function_grid dataset)")
    if degree > d:
        raise ValueError(f"{who}: degree={degree} exceeds the data's basis degree {d}")
    return x, np.asarray(data.y, dtype=float)


def to_monomial(coef_t: NDArray, a: float, b: float) -> NDArray:
    """Monomial coefficients in x of sum_j coef_t[j] t^j with t = (x - a) / (b - a)."""
    t = Polynomial([-a / (b - a), 1.0 / (b - a)])
    out = Polynomial(np.asarray(coef_t, dtype=float))(t).coef
    return np.pad(out, (0, len(coef_t) - len(out)))


def bernstein_basis(n: int, a: float, b: float) -> NDArray:
    """(n + 1, n + 1) matrix whose column i holds the monomial coefficients in x of
    B_{n,i}(x) = C(n, i) t^i (1 - t)^(n - i), t = (x - a) / (b - a)."""
    cols = []
    for i in range(n + 1):
        in_t = comb(n, i) * Polynomial([0.0, 1.0]) ** i * Polynomial([1.0, -1.0]) ** (n - i)
        cols.append(to_monomial(np.pad(in_t.coef, (0, n + 1 - len(in_t.coef))), a, b))
    return np.column_stack(cols)


def iterated_bernstein(f_nodes: NDArray, a: float, b: float, iterate: int) -> NDArray:
    """Monomial coefficients of (I - (I - B_n)^k) f from f at the n + 1 Bernstein nodes.

    With P_0 = 0 and P_j = P_{j-1} + B_n(f - P_{j-1}) (so f - P_j = (I - B_n)^j f), each
    step needs f - P_{j-1} only at the nodes, where P_{j-1} is a known polynomial.
    """
    n = len(f_nodes) - 1
    M = bernstein_basis(n, a, b)
    V = np.vander(bernstein_nodes(n, a, b), n + 1, increasing=True)
    coef = np.zeros(n + 1)
    for _ in range(iterate):
        coef = coef + M @ (f_nodes - V @ coef)
    return coef


def bernstein_nodes(n: int, a: float, b: float) -> NDArray:
    """The Bernstein nodes a + i (b - a) / n, i = 0..n."""
    return a + (b - a) * np.arange(n + 1) / n


def minimax_coef(x: NDArray, y: NDArray, degree: int) -> tuple[NDArray, float]:
    """Monomial coefficients of the degree-``degree`` polynomial minimising max |p(x) - y|
    over the points, and that maximum (the LP: min t s.t. -t <= p(x_i) - y_i <= t).

    Solved in t = (x - a) / (b - a) (powers in [0, 1], a well-scaled LP), then mapped back.
    """
    a, b = float(x.min()), float(x.max())
    T = np.vander((x - a) / (b - a), degree + 1, increasing=True)
    ones = np.ones((len(x), 1))
    res = optimize.linprog(np.r_[np.zeros(degree + 1), 1.0],
                  A_ub=np.block([[T, -ones], [-T, -ones]]), b_ub=np.r_[y, -y],
                  bounds=[(None, None)] * (degree + 1) + [(0, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(f"minimax LP failed: {res.message}")
    return to_monomial(res.x[:-1], a, b), float(res.x[-1])


class PolynomialFit(LinearModel):
    """Common part: non-private, serves ``approximation``, pads ``coef_`` to the basis."""

    private = False
    serves = frozenset({"approximation"})

    def _set(self, coef: NDArray, width: int) -> None:
        self.coef_ = np.pad(np.asarray(coef, dtype=float), (0, width - len(coef)))


class Bernstein(PolynomialFit):
    """Iterated Bernstein polynomial I - (I - B_n)^k of f on the grid's interval
    (``degree`` n, ``iterate`` k; k = 1 is B_n f). Every node must be a grid point."""

    def __init__(self, degree: int = 4, iterate: int = 1) -> None:
        if int(degree) < 1 or int(iterate) < 1:
            raise ValueError(f"bernstein: need degree >= 1 and iterate >= 1; got "
                             f"degree={degree!r}, iterate={iterate!r}")
        super().__init__(degree=int(degree), iterate=int(iterate))
        self.degree, self.iterate = int(degree), int(iterate)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        x, y = grid_of(data, self.degree, "bernstein")
        a, b = float(x.min()), float(x.max())
        nodes = bernstein_nodes(self.degree, a, b)
        pos = np.array([int(np.argmin(np.abs(x - t))) for t in nodes])
        off = ~np.isclose(x[pos], nodes, rtol=0.0, atol=1e-9 * (b - a))
        if off.any():
            raise ValueError(f"bernstein: grid lacks the node x={nodes[off][0]:g} of degree "
                             f"{self.degree} on [{a:g}, {b:g}]; use an evenly spaced grid with "
                             f"n_grid - 1 a multiple of {self.degree}")
        self._set(iterated_bernstein(y[pos], a, b, self.iterate), data.d)
        return self

    def info(self) -> dict[str, Any]:
        return {"degree": self.degree, "iterate": self.iterate}


class Minimax(PolynomialFit):
    """Best uniform approximation of degree ``degree`` on the grid (linear program)."""

    def __init__(self, degree: int = 4) -> None:
        if int(degree) < 0:
            raise ValueError(f"minimax: need degree >= 0; got degree={degree!r}")
        super().__init__(degree=int(degree))
        self.degree = int(degree)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        x, y = grid_of(data, self.degree, "minimax")
        coef, self.lp_error_ = minimax_coef(x, y, self.degree)
        self._set(coef, data.d)
        return self

    def info(self) -> dict[str, Any]:
        return {"degree": self.degree, "lp_error": self.lp_error_}


class GivenPolynomial(PolynomialFit):
    """Fixed monomial coefficients ``coef`` (constant first), scored like a fit: e.g. a
    paper's printed polynomial, to recompute its error on the same grid."""

    def __init__(self, coef: list[float] | tuple[float, ...] = (0.0,)) -> None:
        values = [float(c) for c in coef]
        if not values or not np.all(np.isfinite(values)):
            raise ValueError(f"given polynomial: coef={list(coef)!r} must be finite numbers")
        super().__init__(coef=values)
        self.values = np.asarray(values)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        grid_of(data, len(self.values) - 1, "given polynomial")
        self._set(self.values, data.d)
        return self
