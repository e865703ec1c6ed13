"""Bayesian GLM release: the lemmas' sensitivities by brute force, sigma by mpmath, the ledger."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpbench.methods.bayes import stats
from dpbench.methods.bayes.release import release
from dpbench.methods.bayes.sensitivity import (
    logistic_sensitivity,
    paper_closed_form,
    poisson_sensitivity,
    sensitivity,
)
from dpbench.privacy import Accountant, BudgetExceeded, sigma_analytic


def _pairs(rng: np.random.Generator, n: int, d: int, R: float, unit: bool) -> tuple:
    """n random record pairs: on the sphere of radius R (unit=True) or uniform in the ball."""
    def draw() -> np.ndarray:
        v = rng.normal(size=(n, d))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        r = R if unit else R * rng.random(n) ** (1 / d)
        return v * np.reshape(r, (-1, 1)) if not unit else v * R
    return draw(), draw()


def _max_distance(glm: str, x: np.ndarray, xp: np.ndarray, y: np.ndarray, yp: np.ndarray,
                  weights: np.ndarray) -> float:
    """Brute force: largest ||F(x, y) - F(x', y')|| over the given pairs, F = weights * t."""
    diff = (stats.per_record(glm, x, y) - stats.per_record(glm, xp, yp)) * weights
    return float(np.linalg.norm(diff, axis=1).max())


@pytest.mark.parametrize("d", [2, 3, 5])
def test_logistic_sensitivity_is_the_brute_force_maximum(d: int) -> None:
    # seed 0; 200k unit-norm pairs + 200k in-ball pairs with random labels. The formula
    # must bound every pair (to 1e-9) and be attained within 0.5% (the bound is tight:
    # ||F-F'||^2 = 4.5 - 2 (t + 1/2)^2 on the unit sphere, t = <x, x'>).
    rng = np.random.default_rng(0)
    delta = logistic_sensitivity(1.0)
    assert delta == pytest.approx(math.sqrt(4.5), rel=1e-15)      # Cor. 3.1.1
    w = np.ones(len(stats.components("logistic", d)))
    worst = 0.0
    for unit in (True, False):
        x, xp = _pairs(rng, 200_000, d, 1.0, unit)
        y, yp = rng.choice([-1.0, 1.0], size=(2, 200_000))
        worst = max(worst, _max_distance("logistic", x, xp, y, yp, w))
    assert worst <= delta * (1 + 1e-9)
    assert worst >= 0.995 * delta


@pytest.mark.parametrize(("R", "c"), [(1.0, 0.2), (1.0, 4.0), (0.5, 1.0), (2.0, 1.0)])
def test_logistic_sensitivity_general_lemma(R: float, c: float) -> None:
    # Lemma 3.4.1 with sigma_1^2/sigma_2^2 = c, F = [t1, sqrt(c) t2]; (R=0.5, c=1) and
    # (R=1, c=0.2) put the paper's vertex t = -1/(2c) outside [-R^2, R^2]: our value is the
    # constrained maximum, the printed closed form stays a valid (looser) bound there.
    rng = np.random.default_rng(1)
    d = 3
    delta = logistic_sensitivity(R, c)
    w = np.r_[np.ones(d), np.full(d * (d + 1) // 2, math.sqrt(c))]
    x, xp = _pairs(rng, 300_000, d, R, unit=True)
    ones = np.ones(len(x))
    worst = _max_distance("logistic", x, xp, ones, ones, w)
    assert worst <= delta * (1 + 1e-9)
    assert worst >= 0.995 * delta
    printed = math.sqrt(1 / (2 * c) + 2 * R**2 + 2 * c * R**4)
    assert printed >= delta * (1 - 1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_poisson_sensitivity_is_the_brute_force_maximum(d: int) -> None:
    # seed 2; 400k unit-norm pairs with independent counts y, y' in {0..5}. The lemma's proof
    # takes y = y'; the brute force also covers y != y'. Delta = sqrt(4.5 * 26) (Cor. 3.1.2).
    rng = np.random.default_rng(2)
    delta = poisson_sensitivity(1.0, 5.0)
    assert delta == pytest.approx(math.sqrt(4.5 * (1 + 5.0**2)), rel=1e-14)
    assert delta == pytest.approx(paper_closed_form("poisson", 1.0, 5.0), rel=1e-14)
    x, xp = _pairs(rng, 400_000, d, 1.0, unit=True)
    y, yp = rng.integers(0, 6, size=(2, 400_000)).astype(float)
    w = np.ones(len(stats.components("poisson", d)))
    worst = _max_distance("poisson", x, xp, y, yp, w)
    assert worst <= delta * (1 + 1e-9)
    assert worst >= 0.99 * delta


def test_statistic_layout_matches_the_paper() -> None:
    # Fig. 2 (d = 4): [x y, x_i^2 y^2, x_i x_j y^2]; eq. (7) puts sqrt(2) on cross terms.
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    t = stats.per_record("logistic", x, np.array([-1.0]))[0]
    assert t[:4].tolist() == [-1.0, -2.0, -3.0, -4.0]
    assert t[4:8].tolist() == [1.0, 4.0, 9.0, 16.0]
    assert t[8:] == pytest.approx(math.sqrt(2) * np.array([2, 3, 4, 6, 8, 12.0]))
    # ||t2(x)||^2 = ||x||^4 (the identity behind the lemmas)
    assert np.sum(t[4:] ** 2) == pytest.approx(np.sum(x**2) ** 2)


def _mp_sigma(eps: float, delta: float, sens: float) -> float:
    """Balle & Wang (2018) eq. (2) solved for sigma by mpmath bisection at 40 digits."""
    mpmath.mp.dps = 40
    phi = mpmath.ncdf

    def excess(s: mpmath.mpf) -> mpmath.mpf:
        a, b = sens / (2 * s), eps * s / sens
        return phi(a - b) - mpmath.e**eps * phi(-a - b) - delta

    lo, hi = mpmath.mpf("1e-6"), mpmath.mpf("1e6")
    for _ in range(200):
        mid = mpmath.sqrt(lo * hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return float(hi)


@pytest.mark.parametrize("eps", [0.001, 0.1, 0.5, 1.1, 4.0])
@pytest.mark.parametrize("glm", ["logistic", "poisson"])
def test_sigma_analytic_matches_mpmath_bisection(eps: float, glm: str) -> None:
    sens = sensitivity(glm)
    assert sigma_analytic(eps, 1e-5, sens) == pytest.approx(_mp_sigma(eps, 1e-5, sens),
                                                           rel=1e-8)


def test_release_charges_one_gaussian_with_the_lemma_and_analytic_sigma() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3)) * 0.3
    X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    y = rng.choice([-1.0, 1.0], size=50)
    ledger = Accountant(0.1, 1e-5, currency="gdp")
    out = release("logistic", X, y, ledger, np.random.default_rng(4))
    assert out.sensitivity == pytest.approx(math.sqrt(4.5))
    assert out.sigma == pytest.approx(_mp_sigma(0.1, 1e-5, math.sqrt(4.5)), rel=1e-8)
    (charge,) = ledger.charges
    assert charge.mu == pytest.approx(math.sqrt(4.5) / out.sigma)
    eps, delta = ledger.spent_epsilon_delta()
    assert eps == pytest.approx(0.1, rel=1e-9) and delta == 1e-5
    # noise is on the statistics only: z - s ~ N(0, sigma^2) per entry (same generator)
    s = stats.per_record("logistic", X, y).sum(axis=0)
    noise = np.random.default_rng(4).normal(0.0, out.sigma, size=s.shape)
    assert out.z == pytest.approx(s + noise)
    with pytest.raises(BudgetExceeded, match="overspend"):
        release("logistic", X, y, ledger, rng)   # the budget is gone


def test_records_outside_the_bounds_are_dropped_or_clipped() -> None:
    X = np.array([[0.6, 0.0], [3.0, 4.0]])           # second record: ||x|| = 5 > R
    y = np.array([1.0, 1.0])
    for outside, expected in (("drop", [[0.6, 0.0]]), ("clip", [[0.6, 0.0], [0.6, 0.8]])):
        ledger = Accountant(1e6, 0.5, currency="gdp")  # sigma ~ 0: inspect the sums
        out = release("logistic", X, y, ledger, np.random.default_rng(0), outside=outside)
        s = stats.per_record("logistic", np.array(expected), np.ones(len(expected))).sum(0)
        assert out.z == pytest.approx(s, abs=1e-2)   # sigma ~ 1e-3 here
        assert out.n == 2 and out.n_outside == 1
    with pytest.raises(ValueError, match="outside='keep' is invalid; valid: drop, clip"):
        release("logistic", X, y, Accountant(1, 1e-5, currency="gdp"), np.random.default_rng(0),
                outside="keep")
    with pytest.raises(ValueError, match="poisson targets must be non-negative integers"):
        release("poisson", X, np.array([1.5, 0.0]), Accountant(1, 1e-5, currency="gdp"),
                np.random.default_rng(0))
