"""DP-SGD of the excess-risk paper's Alg. 6: noise formula, ledger, RDP calibration, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opacus.accountants import RDPAccountant

from dpbench.data.base import Split, TabularData
from dpbench.methods.classification.dpsgd import ALPHAS
from dpbench.methods.classification.dpsgd_iyengar import (
    DPSGDIyengar,
    paper_sigma,
    sampler_epsilon,
)
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.outputs import LinearFit
from dpbench.privacy.accountant import Accountant
from dpbench.tasks.classification import evaluate


def _data(X: np.ndarray, y: np.ndarray) -> TabularData:
    return TabularData(X=X, y=y, x_bound=float(np.max(np.linalg.norm(X, axis=1))), y_bound=1.0,
                       feature_names=tuple(f"x{i}" for i in range(X.shape[1])), target="y")


def _codes(n: int, seed: int) -> TabularData:
    """Integer codes 0..9 in 3 columns; y = 1 iff x0 >= 5 (needs the intercept), 0/1 labels."""
    X = np.random.default_rng(seed).integers(0, 10, size=(n, 3)).astype(float)
    return _data(X, (X[:, 0] >= 5).astype(float))


def test_paper_sigma_matches_hand_computation():
    # T = 100, n = 1000, eps = 0.5, delta = 1e-5:
    # sqrt(16 * 100 * ln(1e5)) / (1000 * 0.5) = sqrt(1600 * 11.5129255) / 500
    #                                       = sqrt(18420.681) / 500 = 135.7228 / 500
    assert paper_sigma(100, 1000, 0.5, 1e-5) == pytest.approx(0.2714456, rel=1e-6)
    # L enters squared under the root: L = 2 doubles sigma
    assert paper_sigma(100, 1000, 0.5, 1e-5, 2.0) == pytest.approx(2 * 0.2714456, rel=1e-6)
    with pytest.raises(ValueError, match="delta in"):
        paper_sigma(100, 1000, 0.5, 1.5)


@pytest.mark.parametrize("eps", [0.25, 1.0, 2.0])
def test_paper_calibration_charges_exactly_the_budget(eps):
    data = _codes(2000, 0)
    delta = 1 / data.n**2
    acc = Accountant(eps, delta)
    m = DPSGDIyengar(T=50, B=100).fit(data, acc, np.random.default_rng(0))
    assert acc.spent_epsilon_delta() == (eps, delta)   # equals the budget, so never above
    info = m.info()
    assert info["eps_charged"] == eps and info["delta_charged"] == delta
    assert info["noise_sd"] == pytest.approx(paper_sigma(50, 2000, eps, delta))
    assert info["noise_multiplier"] == pytest.approx(info["noise_sd"] * 100)
    # the paper's noise over-pays at these settings, for the sampler actually used
    assert info["neighbours"] == m.neighbours == "replace_one"
    assert 0 < info["eps_sampler"] < eps
    assert acc.summary()["spent_epsilon"] == eps and "understated" not in acc.summary()


def test_rdp_calibration_spends_the_target_per_opacus():
    # tolerance: the calibrated true epsilon lies in [0.99 eps, eps]; seed 0
    eps = 1.0
    data = _codes(5000, 1)
    delta = 1 / data.n**2
    acc = Accountant(eps, delta)
    m = DPSGDIyengar(T=200, B=250, calibration="rdp", sampling="poisson")
    info = m.fit(data, acc, np.random.default_rng(0)).info()
    assert m.neighbours == info["neighbours"] == "add_remove"   # Poisson's relation
    # recomputed with opacus' own RDPAccountant object (Poisson rate B/n, T steps)
    opacus_acc = RDPAccountant()
    opacus_acc.history.append((info["noise_multiplier"], 250 / 5000, 200))
    true_eps = opacus_acc.get_epsilon(delta, alphas=ALPHAS)
    assert 0.99 * eps <= true_eps <= eps
    assert info["eps_sampler"] == pytest.approx(true_eps, rel=1e-9)
    spent, spent_delta = acc.spent_epsilon_delta()
    assert spent == pytest.approx(true_eps, rel=1e-9) and spent <= eps
    assert spent_delta == delta
    assert info["noise_sd"] == pytest.approx(info["noise_multiplier"] * 1.0 / 250)


def _prv_bounds(z: float, q: float, steps: int, delta: float) -> tuple[float, float]:
    """prv-accountant's (lower, upper) epsilon of the Poisson-sampled Gaussian at noise
    multiplier z: a second library, another algorithm (numerical PRV composition)."""
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    prv = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(
        noise_multiplier=z, sampling_probability=q)], max_self_compositions=[steps],
        eps_error=0.01, delta_error=delta / 1000)
    low, _, up = prv.compute_epsilon(delta=delta, num_self_compositions=[steps])
    return low, up


def test_paper_formula_at_adult_settings_spends_about_six_tenths():
    # Adult: n = 48,842, 80% train (39,073 rows), T = 500, B = 1000, eps = 1, delta = 1/n^2;
    # z about 10.5. Fixed-size batches without replacement, replace-one: the pair of a
    # Poisson-sampled Gaussian at sensitivity 2C, i.e. noise multiplier z / 2 (Zhu, Dong &
    # Wang 2022). prv-accountant's bounds at z / 2 must bracket the recorded value (its
    # eps_error 0.01; our PLD is pessimistic, so within [low, up + 0.01]).
    n = int(48_842 * 0.8)
    data = _codes(n, 2)
    delta = 1 / n**2
    acc = Accountant(1.0, delta)
    info = DPSGDIyengar(T=500, lr=5.0, decay=0.1, B=1000).fit(
        data, acc, np.random.default_rng(0)).info()
    assert info["noise_multiplier"] == pytest.approx(10.53, abs=0.01)
    low, up = _prv_bounds(info["noise_multiplier"] / 2, 1000 / n, 500, delta)
    assert low <= info["eps_sampler"] <= up + 0.01
    assert 0.55 <= info["eps_sampler"] <= 0.68
    assert acc.spent_epsilon_delta()[0] == 1.0


def test_issue_36_poisson_calibration_on_fixed_size_batches_spends_twice_its_record():
    # The defect of dpsgd_iyengar_rdp before issue 36, Compas at eps 1: noise multiplier
    # 4.1975 calibrated by Poisson RDP (add/remove) at q = 200/5771, T 500, delta 3e-8,
    # while the batches were fixed-size draws without replacement (replace-one). That
    # sampler costs about 2 (the issue's independent audit: 1.996), not 1.
    z, b, n, steps, delta = 4.1975, 200, 5771, 500, 3.0e-8
    assert sampler_epsilon(z, b, n, steps, delta, "poisson") == pytest.approx(1.0, abs=1e-3)
    wor = sampler_epsilon(z, b, n, steps, delta, "without")
    low, up = _prv_bounds(z / 2, b / n, steps, delta)
    assert 1.9 <= wor <= 2.2 and low <= wor <= up + 0.01


def test_a_sampler_never_runs_under_another_samplers_accountant():
    # the old setting (RDP calibration, fixed-size batches) is refused before any work
    with pytest.raises(ValueError, match="calibration='rdp' analyses poisson sampling, not "
                                         "sampling='without'"):
        DPSGDIyengar(calibration="rdp", sampling="without")
    with pytest.raises(ValueError, match="sampling='with' has no privacy analysis here; "
                                         "valid: poisson, without"):
        DPSGDIyengar(sampling="with")
    assert DPSGDIyengar(sampling="poisson").neighbours == "add_remove"
    assert DPSGDIyengar().neighbours == "replace_one"


def test_the_shipped_rdp_variant_draws_poisson_batches():
    from dpbench.runner.grid import _merged_params, load_entry
    params = _merged_params(load_entry("method", "dpsgd_iyengar_rdp"), "default")
    assert params["calibration"] == "rdp" and params["sampling"] == "poisson"


def _gap(n: int, seed: int) -> TabularData:
    """y = 1 iff x0 > 0.4, with no x0 in (0.2, 0.6): separable with margin, only with an
    intercept; two noise columns."""
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, size=(n, 3))
    X[:, 0] = np.where(r.random(n) < 0.5, r.uniform(-1, 0.2, n), r.uniform(0.6, 1, n))
    return _data(X, (X[:, 0] > 0.4).astype(float))


def test_noise_off_learns_a_separable_problem_with_its_intercept():
    # the paper's Adult settings (T 500, lr 5, decay 0.1) with B = 200; no noise: the only
    # randomness is the batch draws (seed 3). All 3000 train and 3000 test rows must be right
    train, test = _gap(3000, 3), _gap(3000, 4)
    with noise_disabled():
        m = DPSGDIyengar(T=500, lr=5.0, decay=0.1, B=200).fit(
            train, Accountant(1.0, 1e-6), np.random.default_rng(3))
    assert m.info()["noise_disabled"]
    fit = m.output(LinearFit)
    assert fit.intercept == m.intercept_ < 0      # the threshold sits inside (0.2, 0.6)
    assert 0.2 < -fit.intercept / fit.coef[0] < 0.6
    assert np.array_equal(fit.decision_function(test.X), test.X @ fit.coef + fit.intercept)
    assert evaluate(fit, Split(train, test))["accuracy"] == 1.0
    assert np.mean((m.decision_function(train.X) > 0) == (train.y > 0)) == 1.0


def test_noise_on_each_coordinate_of_the_mean_has_sd_sigma():
    # columns that are all 0 get no gradient: with decay 0 their weight is -lr * (sum of T
    # N(0, sigma^2) draws), so w_j / (lr sqrt(T)) ~ N(0, sigma^2) i.i.d. over 2000 columns.
    # The sample sd's relative s.e. is 1/sqrt(2*2000) = 1.6%; tolerance 8% (5 s.e.); seed 0
    n, zeros, steps, lr = 400, 2000, 25, 1.0
    x0 = np.random.default_rng(5).integers(0, 2, size=n).astype(float)
    X = np.column_stack([x0, np.zeros((n, zeros))])
    m = DPSGDIyengar(T=steps, lr=lr, decay=0.0, B=40).fit(
        _data(X, x0), Accountant(1.0, 1e-5), np.random.default_rng(0))
    sd = float(np.std(m.coef_[1:] / (lr * math.sqrt(steps))))
    assert sd == pytest.approx(m.info()["noise_sd"], rel=0.08)


def test_labels_pm1_and_01_give_the_same_fit():
    d01 = _codes(500, 6)
    dpm = _data(d01.X, 2 * d01.y - 1)
    fits = [DPSGDIyengar(T=30, B=50).fit(d, Accountant(1.0, 1e-5), np.random.default_rng(7))
            for d in (d01, dpm)]
    assert np.array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].intercept_ == fits[1].intercept_


@pytest.mark.parametrize("sampling", ["without", "poisson"])
def test_every_sampling_runs_and_is_deterministic_given_the_rng(sampling):
    data = _codes(300, 8)
    fits = [DPSGDIyengar(T=20, B=30, sampling=sampling).fit(
        data, Accountant(1.0, 1e-5), np.random.default_rng(9)) for _ in range(2)]
    assert np.array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].info()["sampling"] == sampling


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="sampling='poison' has no privacy analysis here; "
                                         "valid: poisson, without"):
        DPSGDIyengar(sampling="poison")
    with pytest.raises(ValueError, match="calibration="):
        DPSGDIyengar(calibration="exact")
    with pytest.raises(ValueError, match="B=400 exceeds the 300 training rows"):
        DPSGDIyengar(B=400).fit(_codes(300, 0), Accountant(1.0, 1e-5), np.random.default_rng(0))


def test_intercept_defaults_to_zero_for_other_linear_fits():
    fit = LinearFit(coef=np.array([1.0, -1.0]))
    X = np.array([[1.0, 2.0], [3.0, 1.0]])
    assert fit.intercept == 0.0 and np.array_equal(fit.decision_function(X), X @ fit.coef)
    assert np.array_equal(LinearFit(coef=fit.coef, intercept=0.5).predict(X), X @ fit.coef + 0.5)
