"""Known functions sampled on a grid: data for function-approximation experiments.

A "dataset" here is a dense grid of x on [lower, upper] with the design matrix X the
monomial basis [1, x, ..., x^degree] and the label y = f(x), f taken by name from
``FUNCTIONS``. A linear fit on X is then a polynomial whose coefficients are its monomial
coefficients, and its sup error over the grid approximates the uniform error on the interval.
Train and test are the same grid (nothing is private or random).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split, TabularData
from dpbench.data.files import check_fits_memory


def log1p_exp_neg(x: NDArray) -> NDArray:
    """log(1 + e^-x) = -log sigmoid(x), the logistic loss at margin x (overflow-safe)."""
    return np.logaddexp(0.0, -np.asarray(x, dtype=float))


#: name -> vectorised f; the only place a target function is defined (loaders and reports
#: look it up by the name stored in a dataset's params)
FUNCTIONS: dict[str, Callable[[NDArray], NDArray]] = {
    "log1p_exp_neg": log1p_exp_neg,
}


def target_function(name: str) -> Callable[[NDArray], NDArray]:
    """The registered function ``name``; an unknown name is a one-line ValueError."""
    if name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}; valid: {', '.join(sorted(FUNCTIONS))}")
    return FUNCTIONS[name]


def monomial_basis(x: NDArray, degree: int) -> NDArray:
    """Columns 1, x, ..., x^degree of ``x`` (shape (len(x), degree + 1))."""
    return np.vander(np.asarray(x, dtype=float), int(degree) + 1, increasing=True)


def function_grid(*, rng: np.random.Generator, function: str, lower: float = -5.0,
                  upper: float = 5.0, n_grid: int = 20001, degree: int = 4) -> Split:
    """``n_grid`` equally spaced x on [lower, upper], X = monomials up to ``degree``, y = f(x).

    ``rng`` is unused (the grid is deterministic); train and test are the same grid.
    ``n_grid - 1`` a multiple of a method's degree puts its Bernstein nodes on the grid.
    """
    del rng
    f = target_function(function)
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper; got lower={lower!r}, upper={upper!r}")
    if int(n_grid) < 2 or int(degree) < 0:
        raise ValueError(f"need n_grid >= 2 and degree >= 0; got n_grid={n_grid!r}, "
                         f"degree={degree!r}")
    check_fits_memory(int(n_grid), int(degree) + 2, f"n_grid={int(n_grid):,}")
    x = np.linspace(float(lower), float(upper), int(n_grid))
    X, y = monomial_basis(x, int(degree)), f(x)
    grid = TabularData(
        X=X, y=y, x_bound=float(np.max(np.linalg.norm(X, axis=1))),
        y_bound=float(np.max(np.abs(y))),
        feature_names=tuple("1" if j == 0 else "x" if j == 1 else f"x^{j}"
                            for j in range(int(degree) + 1)),
        target=f"{function}(x)")
    return Split(train=grid, test=grid)
