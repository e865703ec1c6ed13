"""DD-SSP (Algorithm 1, Prop. 3.2-3.4) and AIM-Synth: exactness, logistic = scaled linear.

Fits use one small 3-attribute domain (shared with test_aim.py) so JAX compiles
each model structure once per session.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from marginal_fixtures import discrete_data, tabular
from scipy.optimize import minimize
from sklearn.metrics import roc_auc_score

from dpbench.data.marginals import data_marginal
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.regression.aim_synth import AIMSynth
from dpbench.methods.regression.ddssp import (
    DDSSP,
    block_matrices,
    chebyshev_coefficients,
    log_sigmoid,
    ztz_from_marginals,
)
from dpbench.methods.regression.public import PublicOLS
from dpbench.privacy import Accountant

DOMAIN = {"x1": 3, "x2": 4, "y": 5}
FAST = {"max_iters": 100, "max_model_size": 1.0}


@pytest.fixture(scope="module")
def data():
    return discrete_data(np.random.default_rng(0), 2000, DOMAIN, "y", categorical=("x2",))


@pytest.fixture(scope="module")
def binary():
    """Same shape of data with a binary target (labels +-1)."""
    dom = {"x1": 3, "x2": 4, "y": 2}
    return discrete_data(np.random.default_rng(7), 2000, dom, "y", categorical=("x2",),
                         target_kind="binary_pm1")


def _codes(data):
    return {a: data.discrete[a].to_numpy() for a in data.discrete.columns}


def test_ztz_from_exact_marginals_equals_data_statistics():
    # Prop. 3.2 on a wider domain (two one-hot, two scalar attributes): exact to rounding.
    dom = {"a": 3, "b": 5, "c": 4, "d": 2, "y": 6}
    data = discrete_data(np.random.default_rng(3), 500, dom, "y", categorical=("a", "c"))
    enc = data.encoding
    attrs = (*enc.attributes, enc.target)
    codes = _codes(data)
    pairs = {(attrs[j], attrs[k]): data_marginal(codes, (attrs[j], attrs[k]), dom)
             for j in range(len(attrs)) for k in range(j + 1, len(attrs))}
    singles = {a: data_marginal(codes, (a,), dom) for a in attrs}
    ztz = ztz_from_marginals(block_matrices(enc, enc.target_values), attrs, pairs, singles)
    Z = np.column_stack([data.X, data.y])
    np.testing.assert_allclose(ztz, Z.T @ Z, rtol=0, atol=1e-9)


def test_chebyshev_coefficients_closed_form():
    # Interpolation at the 3 Chebyshev nodes 0, +-a (a = 6 cos(pi/6)) of phi(s) = -log(1+e^-s):
    # b0 = phi(0) = -log 2; b1 = (phi(a) - phi(-a)) / (2a) = 1/2 since phi(a) - phi(-a) = a;
    # b2 = (phi(a) + phi(-a) - 2 phi(0)) / (2 a^2).
    a = 6 * math.cos(math.pi / 6)
    phi = lambda s: -math.log1p(math.exp(-s))  # noqa: E731
    b = chebyshev_coefficients(6.0)
    np.testing.assert_allclose(b, [-math.log(2), 0.5, (phi(a) + phi(-a) + 2 * math.log(2))
                                   / (2 * a * a)], rtol=1e-12)
    assert b[2] < 0
    # degree-2 interpolation error of log-sigmoid on [-6, 6] stays below 0.3
    s = np.linspace(-6, 6, 1001)
    assert np.max(np.abs(np.polyval(b[::-1], s) - log_sigmoid(s))) < 0.3


def test_noise_off_ddssp_reproduces_public_ols(data):
    # Noise off: AIM measures exact marginals; once all 3 pairs are measured, Private-PGM
    # fits them to ~1e-6 relative with 1,000 iterations (100 leave theta ~0.02 off), so theta
    # matches OLS to 1e-3 (the assembly itself is exact, see
    # test_ztz_from_exact_marginals_equals_data_statistics).
    with noise_disabled():
        model = DDSSP(**{**FAST, "max_iters": 1000}).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                                        np.random.default_rng(1))
    assert model.info()["noise_disabled"] is True
    ols = PublicOLS().fit(data, None, None).coef_
    np.testing.assert_allclose(model.coef_, ols, atol=1e-3)
    Z = np.column_stack([data.X, data.y])
    np.testing.assert_allclose(model.xtx_, (Z.T @ Z)[:-1, :-1], rtol=1e-4, atol=1e-3)


def test_noise_off_aim_synth_reproduces_marginal_on_one_clique_domain():
    # One feature + target: the workload is one pair, the model one clique. Noise off, the
    # fitted model equals the data's joint (to 1e-3 counts) and the rounding sampler puts
    # round(n p) records in every cell, so synthetic counts are within 1 of the data's.
    dom = {"x": 4, "y": 3}
    data = discrete_data(np.random.default_rng(4), 1500, dom, "y", categorical=("x",))
    with noise_disabled():
        model = AIMSynth(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                     np.random.default_rng(5))
    assert model.info()["synth_rows"] == 1500
    # refit on the same release through the released model: compare synthetic counts
    with noise_disabled():
        from dpbench.methods.marginals.aim import AIMSettings
        from dpbench.methods.marginals.release import release_marginals
        released, _ = release_marginals(data, Accountant(1.0, 1e-5, "zcdp"),
                                        np.random.default_rng(5), mechanism="aim",
                                        workload="all_pairs", settings=AIMSettings(**FAST))
    synth = released.sample(1500, np.random.default_rng(6))
    truth = data_marginal(_codes(data), ("x", "y"), dom)
    got = data_marginal({a: synth[a].to_numpy() for a in dom}, ("x", "y"), dom)
    assert np.abs(got - truth).max() <= 1
    # and OLS on the synthetic rows equals OLS on the data (same joint up to rounding)
    ols = PublicOLS().fit(data, None, None).coef_
    np.testing.assert_allclose(model.coef_, ols, atol=0.02)


def test_logistic_ddssp_is_positive_multiple_of_linear_and_same_auc(binary):
    # Same release (same rng seed, no cache): logistic theta = -b1/(2 b2) * linear theta.
    acc_lin, acc_log = Accountant(1.0, 1e-5, "zcdp"), Accountant(1.0, 1e-5, "zcdp")
    lin = DDSSP(model="linear", **FAST).fit(binary, acc_lin, np.random.default_rng(11))
    log = DDSSP(model="logistic", **FAST).fit(binary, acc_log, np.random.default_rng(11))
    b0, b1, b2 = chebyshev_coefficients(6.0)
    np.testing.assert_allclose(log.coef_, -b1 / (2 * b2) * lin.coef_, rtol=1e-12)
    test = discrete_data(np.random.default_rng(12), 1000, {"x1": 3, "x2": 4, "y": 2}, "y",
                         categorical=("x2",), target_kind="binary_pm1")
    auc_lin = roc_auc_score(test.y, lin.decision_function(test.X))
    auc_log = roc_auc_score(test.y, log.decision_function(test.X))
    assert auc_lin == auc_log
    assert acc_lin.rho_spent == acc_log.rho_spent


def test_logistic_solution_maximises_the_chebyshev_objective(binary):
    model = DDSSP(model="logistic", **FAST).fit(binary, Accountant(2.0, 1e-5, "zcdp"),
                                                 np.random.default_rng(2))
    b0, b1, b2 = chebyshev_coefficients(6.0)

    def neg(theta):
        return -(model.n_ * b0 + b1 * theta @ model.xty_ + b2 * theta @ model.xtx_ @ theta)

    res = minimize(neg, np.zeros_like(model.coef_), method="BFGS",
                   options={"gtol": 1e-10, "maxiter": 10_000})
    np.testing.assert_allclose(model.coef_, res.x, rtol=1e-5, atol=1e-7)


def test_logistic_labels_01_are_mapped_to_pm1():
    dom = {"x1": 3, "x2": 4, "y": 2}
    d01 = discrete_data(np.random.default_rng(7), 2000, dom, "y", categorical=("x2",),
                        target_kind="binary_01")
    dpm = tabular(d01.discrete, dom, "y", ("x2",), target_kind="binary_pm1")
    m01 = DDSSP(model="logistic", **FAST).fit(d01, Accountant(1.0, 1e-5, "zcdp"),
                                               np.random.default_rng(3))
    mpm = DDSSP(model="logistic", **FAST).fit(dpm, Accountant(1.0, 1e-5, "zcdp"),
                                               np.random.default_rng(3))
    np.testing.assert_allclose(m01.coef_, mpm.coef_, rtol=1e-12)


def test_ddssp_charges_the_release_to_its_own_ledger(data):
    acc = Accountant(0.5, 1e-5, "zcdp")
    model = DDSSP(**FAST).fit(data, acc, np.random.default_rng(0))
    assert acc.rho_spent == pytest.approx(acc.rho_total, rel=1e-9)
    assert model.info()["n_releases"] == len(acc.charges)


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="model='probit'"):
        DDSSP(model="probit")
    with pytest.raises(ValueError, match="mechanism='pgm'"):
        DDSSP(mechanism="pgm")
    with pytest.raises(ValueError, match=r"\['max_model_size'\] do not apply to mechanism='mst'"):
        DDSSP(mechanism="mst", max_model_size=10.0)
    with pytest.raises(ValueError, match="unknown parameters"):
        AIMSynth(max_size=3)


def test_every_mechanism_setting_reaches_the_mechanism():
    # max_iters is both an AIM and an MST setting: it was once popped twice and lost
    assert DDSSP(max_iters=200).settings.max_iters == 200
    assert AIMSynth(max_iters=50, final_iters=70).settings.max_iters == 50
    assert DDSSP(mechanism="mst", max_iters=30).settings.max_iters == 30


@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"mechanism": "mst", "max_iters": 100, "select_iters": 50},
    {"estimator": "mixture", "mixture_components": 4, **FAST},
])
def test_mst_and_mixture_releases_feed_both_consumers(data, params):
    # Fig. 5 / 6 variants: same pipeline, full budget charged, and at eps = 2 (seed 3) the
    # training MSE is within 0.01 of OLS's (0.381; predicting 0 gives 0.439).
    acc = Accountant(2.0, 1e-5, "zcdp")
    dd = DDSSP(**params).fit(data, acc, np.random.default_rng(3))
    sy = AIMSynth(**params).fit(data, Accountant(2.0, 1e-5, "zcdp"), np.random.default_rng(3))
    assert acc.rho_spent == pytest.approx(acc.rho_total, rel=1e-9)
    ols = PublicOLS().fit(data, None, None)
    ols_mse = float(np.mean((data.y - ols.predict(data.X)) ** 2))
    for m in (dd, sy):
        assert float(np.mean((data.y - m.predict(data.X)) ** 2)) < ols_mse + 0.01


def test_noise_off_default_logistic_on_synthetic_rows_matches_the_non_dp_fit():
    # One feature + binary target: one clique, so with noise off the synthetic rows have the
    # data's joint up to rounding and scikit-learn's default LR (intercept, C = 1) fitted on
    # them is the Non-DP fit on the real rows (within 0.05; measured: slope 0.660 vs 0.661,
    # intercept 0.0376 vs 0.0379).
    from dpbench.methods.classification.nondp_logistic import NonDPLogistic

    dom = {"x": 4, "y": 2}
    data = discrete_data(np.random.default_rng(8), 2000, dom, "y", categorical=())
    with noise_disabled():
        aim = AIMSynth(model="default_logistic", **FAST).fit(
            data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(9))
    ref = NonDPLogistic().fit(data, Accountant(1.0, 1e-5, "zcdp"), None)
    assert AIMSynth.tasks_served({"model": "default_logistic"}) >= {"classification"}
    assert abs(ref.coef_[0]) > 0.3                          # a real slope (0.66 here)
    np.testing.assert_allclose(aim.coef_, ref.coef_, atol=0.05)
    assert aim.intercept_ == pytest.approx(ref.intercept_, abs=0.05)
