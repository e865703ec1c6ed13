"""Polynomial approximation methods (Bernstein, iterated Bernstein, minimax, given
coefficients), the function-grid data and the approximation task, checked against closed
forms that do not use the methods' code."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.data.base import TabularData
from dpbench.data.functions import FUNCTIONS, function_grid, monomial_basis
from dpbench.methods.approx.polynomial import Bernstein, GivenPolynomial, Minimax
from dpbench.methods.outputs import LinearFit
from dpbench.privacy.accountant import Accountant
from dpbench.tasks import TASKS


def grid(f, lower: float, upper: float, n_grid: int = 4001, degree: int = 4) -> TabularData:
    x = np.linspace(lower, upper, n_grid)
    X = monomial_basis(x, degree)
    return TabularData(X=X, y=f(x), x_bound=1.0, y_bound=1.0,
                       feature_names=tuple(f"c{j}" for j in range(degree + 1)), target="y")


def fit(method, data: TabularData) -> np.ndarray:
    ledger = Accountant(1.0, 1e-5)
    method.fit(data, ledger, np.random.default_rng(0))
    assert not ledger.charges  # non-private: nothing charged
    return method.output(LinearFit).coef


def test_bernstein_reproduces_linear_functions() -> None:
    # B_n maps every affine function to itself, on any interval
    coef = fit(Bernstein(degree=4), grid(lambda x: 2.0 - 3.0 * x, -5.0, 5.0))
    np.testing.assert_allclose(coef, [2.0, -3.0, 0.0, 0.0, 0.0], atol=1e-12)


def test_bernstein_of_a_square_has_the_textbook_form() -> None:
    # on [0, 1]: B_n(x^2) = x^2 + x (1 - x) / n
    n = 4
    coef = fit(Bernstein(degree=n), grid(np.square, 0.0, 1.0))
    np.testing.assert_allclose(coef, [0.0, 1 / n, 1 - 1 / n, 0.0, 0.0], atol=1e-12)


def test_iterated_bernstein_converges_to_a_polynomial_of_its_degree() -> None:
    # I - (I - B_n)^k -> I on polynomials of degree <= n (B_n's eigenvalues lie in (0, 1])
    f = np.polynomial.Polynomial([0.3, -1.0, 0.5, 0.2, -0.05])
    data = grid(f, -2.0, 3.0)
    np.testing.assert_allclose(fit(Bernstein(degree=4, iterate=300), data), f.coef, atol=1e-8)
    one = fit(Bernstein(degree=4, iterate=1), data)
    assert np.max(np.abs(one - f.coef)) > 1e-2  # a single pass does not reproduce it


def test_bernstein_pads_to_the_basis_and_needs_its_nodes() -> None:
    data = grid(np.exp, -1.0, 1.0, n_grid=4001, degree=4)
    coef = fit(Bernstein(degree=2), data)
    assert coef.shape == (5,) and np.all(coef[3:] == 0.0)
    with pytest.raises(ValueError, match=r"^bernstein: grid lacks the node x=-0.333333"):
        fit(Bernstein(degree=3), grid(np.exp, -1.0, 1.0, n_grid=4001))
    with pytest.raises(ValueError, match="degree=6 exceeds the data's basis degree 4"):
        fit(Bernstein(degree=6), data)


def test_methods_refuse_data_that_is_not_a_monomial_basis() -> None:
    x = np.linspace(0.0, 1.0, 11)
    bad = TabularData(X=np.column_stack([np.ones_like(x), x, np.sin(x)]), y=x, x_bound=1.0,
                      y_bound=1.0, feature_names=("a", "b", "c"), target="y")
    for method in (Bernstein(degree=2), Minimax(degree=2), GivenPolynomial([1.0])):
        with pytest.raises(ValueError, match="not the monomial basis"):
            fit(method, bad)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_minimax_of_the_next_power_is_the_chebyshev_remainder(n: int) -> None:
    # on [-1, 1] the best degree-n approximation of x^(n+1) is x^(n+1) - T_{n+1} / 2^n,
    # with error 2^-n (T the Chebyshev polynomial)
    data = grid(lambda x: x ** (n + 1), -1.0, 1.0, n_grid=4001, degree=n)
    method = Minimax(degree=n)
    coef = fit(method, data)
    power = np.zeros(n + 2)
    power[-1] = 1.0
    cheb = np.polynomial.chebyshev.cheb2poly([0.0] * (n + 1) + [1.0])
    np.testing.assert_allclose(coef, (power - cheb / 2**n)[: n + 1], atol=1e-7)
    assert method.info()["lp_error"] == pytest.approx(2.0**-n, abs=1e-7)


def test_minimax_of_degree_zero_is_the_midrange() -> None:
    coef = fit(Minimax(degree=0), grid(np.exp, 0.0, 1.0, degree=1))
    assert coef[0] == pytest.approx((np.e + 1.0) / 2, abs=1e-9) and coef[1] == 0.0


def test_given_polynomial_is_returned_as_given() -> None:
    coef = fit(GivenPolynomial([0.5, -1.0]), grid(np.exp, -1.0, 1.0))
    np.testing.assert_array_equal(coef, [0.5, -1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="must be finite numbers"):
        GivenPolynomial([float("nan")])


def test_approximation_task_scores_sup_error_and_coefficients() -> None:
    split = function_grid(rng=np.random.default_rng(0), function="log1p_exp_neg",
                          lower=-1.0, upper=1.0, n_grid=201, degree=2)
    fitted = LinearFit(coef=np.array([np.log(2.0), -0.5, 0.0]))
    metrics = TASKS["approximation"].score(fitted, split, {})
    x = np.linspace(-1.0, 1.0, 201)
    want = np.max(np.abs(np.log(2.0) - 0.5 * x - np.log1p(np.exp(-x))))
    assert metrics["max_abs_error"] == pytest.approx(want, rel=1e-12)
    assert metrics["coef_0"] == pytest.approx(np.log(2.0)) and metrics["coef_2"] == 0.0


def test_function_grid_and_its_errors() -> None:
    split = function_grid(rng=np.random.default_rng(0), function="log1p_exp_neg",
                          n_grid=21, degree=3)
    assert split.train is split.test and split.train.X.shape == (21, 4)
    np.testing.assert_allclose(split.train.y, np.log1p(np.exp(-np.linspace(-5, 5, 21))))
    assert FUNCTIONS["log1p_exp_neg"](np.array([-800.0]))[0] == pytest.approx(800.0)
    with pytest.raises(ValueError, match=r"^unknown function 'nope'; valid: log1p_exp_neg$"):
        function_grid(rng=np.random.default_rng(0), function="nope")
    with pytest.raises(ValueError, match="lower < upper"):
        function_grid(rng=np.random.default_rng(0), function="log1p_exp_neg", lower=1.0,
                      upper=1.0)
