"""Isserlis moments and the normal approximation of the statistics, against Monte Carlo."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbench.methods.bayes import isserlis, stats
from dpbench.methods.bayes.moments import TANH_HALF, build_program


def _cov(d: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).normal(size=(d, d))
    return A @ A.T / d + 0.3 * np.eye(d)


def test_pairing_counts_are_double_factorials() -> None:
    # Fact 3.1: (2k - 1)!! partitions into pairs
    assert [len(isserlis.pairings(m)) for m in (2, 4, 6, 8)] == [1, 3, 15, 105]


def test_isserlis_closed_forms_from_the_supplement() -> None:
    C = _cov(3, 0)
    got = np.asarray(isserlis.moments(C, np.array([[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 0, 0]])))
    want = [C[0, 0] * C[1, 1] + 2 * C[0, 1] ** 2,            # E[x1^2 x2^2] (Sec. 7)
            C[0, 0] * C[1, 2] + 2 * C[0, 1] * C[0, 2],         # E[x1^2 x2 x3] (Sec. 7)
            3 * C[0, 0] ** 2]
    assert got == pytest.approx(want, rel=1e-14)
    assert np.asarray(isserlis.moments(C, np.array([[0, 1, 2]])))[0] == 0.0


def test_isserlis_moments_match_monte_carlo() -> None:
    # Every index tuple of order 2, 4 and 6 over 3 coordinates (and some of order 8) against
    # the sample mean of 400,000 draws (seed 0); tolerance: 5 Monte Carlo standard errors.
    d, n = 3, 400_000
    C = _cov(d, 1)
    w = np.random.default_rng(0).multivariate_normal(np.zeros(d), C, size=n)
    for m in (2, 4, 6, 8):
        tuples = np.array(list(itertools.combinations_with_replacement(range(d), m)))
        if m == 8:
            tuples = tuples[::5]
        exact = np.asarray(isserlis.moments(C, tuples))
        prods = np.stack([np.prod(w[:, t], axis=1) for t in tuples])
        mc, se = prods.mean(axis=1), prods.std(axis=1) / np.sqrt(n)
        assert np.all(np.abs(exact - mc) <= 5 * se), (m, np.max(np.abs(exact - mc) / se))


def _mc_statistics(glm: str, theta: np.ndarray, Sigma: np.ndarray, n: int,
                   seed: int) -> np.ndarray:
    """Per-record statistics of n records whose conditional moments are exactly the model's
    Taylor polynomials: logistic P(y=1|x) = (1 + tanh_taylor(u)) / 2; Poisson mean softplus."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(len(theta)), Sigma, size=n)
    u = X @ theta
    if glm == "logistic":
        h = np.polyval(TANH_HALF[::-1], u)
        assert np.all(np.abs(h) <= 1)          # a valid probability for these settings
        y = np.where(rng.random(n) < (1 + h) / 2, 1.0, -1.0)
    else:
        y = rng.poisson(np.logaddexp(0.0, u)).astype(float)
    return stats.per_record(glm, X, y)


def _cov_and_se(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample covariance of the rows of T and the standard error of each entry."""
    Tc = T - T.mean(0)
    m = T.shape[1]
    cov, se = np.empty((m, m)), np.empty((m, m))
    for i in range(m):
        prod = Tc[:, i:i + 1] * Tc
        cov[i], se[i] = prod.mean(0), prod.std(0) / np.sqrt(len(T))
    return cov, se


def test_logistic_normal_approximation_matches_monte_carlo() -> None:
    # y drawn with E[y|x] equal to the Taylor polynomial, so mu_s and Sigma_s must match the
    # Monte Carlo mean / covariance of t(x, y) up to sampling error: tolerance 5 standard
    # errors (mean), and 5 s.e. of the sample covariance (delta method), seed 3, n = 400,000.
    d, n = 3, 400_000
    theta, Sigma = np.array([-0.9, -0.5, 0.3]), 0.4 * _cov(d, 2)
    mu, cov = (np.asarray(a) for a in build_program("logistic", d)(theta, Sigma))
    T = _mc_statistics("logistic", theta, Sigma, n, seed=3)
    assert np.all(np.abs(mu - T.mean(0)) <= 5 * T.std(0) / np.sqrt(n))
    mc_cov, se = _cov_and_se(T)
    assert np.all(np.abs(cov - mc_cov) <= 5 * se + 1e-12)
    assert np.linalg.eigvalsh(cov).min() > 0


def test_poisson_normal_approximation_matches_monte_carlo() -> None:
    # True softplus-Poisson data; the model's Taylor polynomials (softplus to u^4, mu^2 to
    # u^3) are accurate for |u| << 1: Var(u) = 0.03 here. Tolerance: 5 s.e. + 1% of the
    # entry's scale (the Taylor remainder). seed 4, n = 400,000.
    d, n = 3, 400_000
    theta, Sigma = np.array([0.3, -0.6, 0.8]), 0.05 * _cov(d, 2)
    mu, cov = (np.asarray(a) for a in build_program("poisson", d)(theta, Sigma))
    T = _mc_statistics("poisson", theta, Sigma, n, seed=4)
    scale = np.sqrt(np.outer(T.var(0), T.var(0)))
    assert np.all(np.abs(mu - T.mean(0)) <= 5 * T.std(0) / np.sqrt(n) + 0.01 * T.std(0))
    mc_cov, se = _cov_and_se(T)
    assert np.all(np.abs(cov - mc_cov) <= 5 * se + 0.01 * scale)
    # ey2="paper" drops the Poisson variance mu from E[y^2|x]: Var(y x_j) visibly too small
    _, cov_paper = build_program("poisson", d, ey2="paper")(theta, Sigma)
    lin_y = slice(d + d * (d + 1) // 2, 2 * d + d * (d + 1) // 2)
    assert np.all(np.diag(np.asarray(cov_paper))[lin_y] < 0.7 * np.diag(mc_cov)[lin_y])


def test_paper_literal_options_show_the_documented_errors() -> None:
    d = 3
    theta, Sigma = np.array([-0.9, -0.5, 0.3]), 0.4 * _cov(d, 2)
    mu, _ = build_program("logistic", d)(theta, Sigma)
    mu_sign, _ = build_program("logistic", d, ey_sign="paper")(theta, Sigma)
    assert np.asarray(mu_sign)[:d] == pytest.approx(-np.asarray(mu)[:d])   # mirrored theta
    _, cov_b = build_program("logistic", d, cov_case_b="paper")(theta, Sigma)
    # case (b): Var(y x_j) = E[x_j^2 g(x)] - m_j^2 = -m_j^2 < 0 (odd moments vanish)
    assert np.diag(np.asarray(cov_b))[:d] == pytest.approx(-np.asarray(mu)[:d] ** 2)
    with pytest.raises(ValueError, match="ey_sign='x' is invalid; valid: corrected, paper"):
        build_program("logistic", d, ey_sign="x")
