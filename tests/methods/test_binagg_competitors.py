"""DP-GD and JLT (BinAgg paper's competitors): noise scale, clipping, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.data.base import TabularData
from dpbench.methods.regression.dpgd import DPGD, DPGDGrid, dpgd_paths
from dpbench.methods.regression.jlt import JLT, jlt_threshold
from dpbench.privacy import Accountant, gdp_eps


def _data(n: int = 2000, d: int = 3, seed: int = 0) -> TabularData:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.clip(X @ np.array([1.0, 2.0, 1.5][:d]) + 0.1 * rng.normal(size=n), 0, 5)
    return TabularData(X, y, math.sqrt(d), 5.0, tuple(f"x{j}" for j in range(d)), "y")


def test_dpgd_step_noise_has_sd_clip_sqrtT_over_mu() -> None:
    # X = 0 makes every gradient 0, so after one step theta = -lr * noise / n with
    # noise ~ N(0, (C sqrt(T) / mu)^2). 4,000 chains x 2 coordinates, seed 3; the sample
    # sd of 8,000 normals is within 5% of the truth with overwhelming probability (~6.3 sd).
    n, C, mu, lr = 10, 2.0, 0.5, 1.0
    X, y = np.zeros((n, 2)), np.zeros(n)
    theta = dpgd_paths(X, y, np.full(4000, lr), np.full(4000, C), 1, mu,
                       np.random.default_rng(3))
    noise = -theta * n / lr
    assert noise.std() == pytest.approx(C / mu, rel=0.05)
    # T = 4 steps with zero gradients: theta = -lr/n * sum of 4 draws of sd C*2/mu
    theta4 = dpgd_paths(X, y, np.full(4000, lr), np.full(4000, C), 4, mu,
                        np.random.default_rng(4))
    assert (-theta4 * n / lr).std() == pytest.approx(2 * (C * 2 / mu), rel=0.05)


def test_dpgd_clips_each_example_gradient() -> None:
    # one example x = (1, 0), y = -100: gradient (100, 0) clipped to norm C = 1; the noise
    # (sd 1e-9) is negligible, so theta = -lr * (1, 0) / n after one step
    X, y = np.array([[1.0, 0.0]]), np.array([-100.0])
    theta = dpgd_paths(X, y, np.array([0.5]), np.array([1.0]), 1, 1e9, np.random.default_rng(0))
    assert theta[0] == pytest.approx([-0.5, 0.0], abs=1e-8)


def test_dpgd_charges_compose_to_mu() -> None:
    data, delta = _data(), 1e-6
    ledger = Accountant(gdp_eps(1.0, delta), delta, currency="gdp")
    DPGD(lr=0.5, clip=2.0, epochs=25).fit(data, ledger, np.random.default_rng(0))
    assert len(ledger.charges) == 25
    assert all(c.mu == pytest.approx(1 / 5) for c in ledger.charges)   # mu / sqrt(T)
    assert ledger.mu_spent == pytest.approx(1.0, rel=1e-9)


def test_dpgd_grid_picks_lowest_training_loss_and_charges_one_run() -> None:
    data, delta = _data(), 1e-6
    ledger = Accountant(gdp_eps(1.0, delta), delta, currency="gdp")
    grid = DPGDGrid(lrs=[0.01, 1.0], clips=[0.1, 5.0], epochs=[1, 20])
    grid.fit(data, ledger, np.random.default_rng(1))
    loss = [np.mean((data.X @ c - data.y) ** 2) for c in grid.grid_coefs_]
    assert grid.best_ == int(np.argmin(loss))
    assert ledger.mu_spent == pytest.approx(1.0, rel=1e-9)
    assert len(ledger.charges) == grid.configs()[grid.best_][2]


def test_jlt_threshold_constants() -> None:
    # Sheffet 2017 Alg. 1 (our reading): w^2 = 8 B^2/eps (sqrt(2 r ln(8/delta)) + ln(8/delta)),
    # Laplace scale 4 B^2 / eps; B = 2, eps = 0.5, delta = 1e-4, r = 100 by hand:
    ln8 = math.log(8e4)
    w2, lap = jlt_threshold(2.0, 0.5, 1e-4, 100)
    assert w2 == pytest.approx(64 * (math.sqrt(200 * ln8) + ln8), rel=1e-12)
    assert lap == pytest.approx(32.0)


def test_jlt_charges_once_and_is_consistent_at_large_budget() -> None:
    data = _data(n=20000)
    ledger = Accountant(1e4, 1e-6, currency="approx")
    model = JLT(r=4000).fit(data, ledger, np.random.default_rng(2))
    assert [(c.epsilon, c.delta) for c in ledger.charges] == [(1e4, 1e-6)]
    ols = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
    assert model.info()["altered"] == 0.0
    assert np.linalg.norm(model.coef_ - ols) / np.linalg.norm(ols) < 0.1


def test_bad_hyperparameters_fail_in_one_line() -> None:
    with pytest.raises(ValueError, match="lr"):
        DPGD(lr=0.0)
    with pytest.raises(ValueError, match="epochs"):
        DPGDGrid(epochs=[1.5])
    with pytest.raises(ValueError, match="r="):
        JLT(r=0)
