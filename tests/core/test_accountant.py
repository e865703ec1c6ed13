"""The privacy ledger: composition rules, refusals, conversions, validation, and
AdaSSP's calibration fitting inside its budget.

Targets are checked against independent references (grid-searched CKS'20 bound,
Balle-Wang closed form via scipy.stats, closed-form conversions), not against
the accountant's own conversions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _privacy_reference import brute_cdp_log_delta, bw_delta
from scipy import stats

from dpbench.data.base import TabularData
from dpbench.methods.regression.adassp import AdaSSP
from dpbench.privacy import Accountant, BudgetExceeded, validate_budget

EPS_GRID = [0.05, 0.1, 0.5, 1.0, 2.0]
DELTA = 1e-5
REL = 1e-9  # the ledger's stated float tolerance on the total (accountant.BUDGET_REL_TOL)


# ----------------------------------------------------------------------------- targets


@pytest.mark.parametrize("eps", EPS_GRID)
def test_totals_are_the_exact_equivalents_of_the_target(eps):
    rho = Accountant(eps, DELTA, "zcdp").rho_total
    assert brute_cdp_log_delta(rho, eps) == pytest.approx(math.log(DELTA), abs=1e-4)
    mu = Accountant(eps, DELTA, "gdp").mu_total
    assert bw_delta(mu, eps) == pytest.approx(DELTA, rel=1e-6)


# ----------------------------------------------------------------------------- refusals


def test_zcdp_adds_rho_and_refuses_overspending():
    acc = Accountant(1.0, DELTA, "zcdp")
    total = acc.rho_total
    acc.charge_rho(0.25 * total, "a")
    acc.charge_rho(0.75 * total, "b")
    assert acc.rho_spent == pytest.approx(total, rel=1e-12)
    assert acc.remaining() == pytest.approx(0.0, abs=1e-12 * total)
    with pytest.raises(BudgetExceeded, match="zcdp"):
        acc.charge_rho(1e-6 * total, "c")
    assert [c.label for c in acc.charges] == ["a", "b"]  # a refused charge is not recorded


def test_gdp_composes_in_quadrature_and_refuses_overspending():
    acc = Accountant(1.0, DELTA, "gdp")
    total = acc.mu_total
    acc.charge_mu(0.6 * total, "a")
    acc.charge_mu(0.8 * total, "b")  # 0.6 + 0.8 > 1 but 0.36 + 0.64 = 1: fits
    assert acc.mu_spent == pytest.approx(total, rel=1e-12)
    with pytest.raises(BudgetExceeded, match="gdp"):
        acc.charge_mu(1e-3 * total, "c")
    acc2 = Accountant(1.0, DELTA, "gdp")
    for k in range(3):
        acc2.charge_mu(total / math.sqrt(3), f"q{k}")
    assert acc2.mu_spent == pytest.approx(total, rel=1e-12)


def test_approx_basic_composition_and_refusals():
    acc = Accountant(1.0, 1e-5, "approx")
    acc.charge_eps_delta(0.5, 4e-6, "a")
    acc.charge_pure(0.3, "b")
    assert acc.eps_spent == pytest.approx(0.8) and acc.delta_spent == pytest.approx(4e-6)
    with pytest.raises(BudgetExceeded):
        acc.charge_eps_delta(0.3, 0.0, "eps over")
    with pytest.raises(BudgetExceeded):
        acc.charge_eps_delta(0.0, 7e-6, "delta over")
    acc.charge_eps_delta(0.2, 6e-6, "exactly the rest")
    assert acc.spent_epsilon_delta() == pytest.approx((1.0, 1e-5))


def test_pure_adds_epsilon_and_refuses_overspending():
    acc = Accountant(0.5, 0.0, "pure")
    acc.charge_pure(0.2, "a")
    acc.charge_pure(0.3, "b")
    assert acc.spent_epsilon_delta() == pytest.approx((0.5, 0.0))
    with pytest.raises(BudgetExceeded, match="pure"):
        acc.charge_pure(1e-6, "c")
    with pytest.raises(TypeError):
        acc.charge_eps_delta(0.0, 1e-9, "no delta in a pure ledger")


def test_wrong_currency_charges_are_refused():
    with pytest.raises(TypeError):
        Accountant(1.0, DELTA, "gdp").charge_rho(0.01, "x")
    with pytest.raises(TypeError):
        Accountant(1.0, DELTA, "zcdp").charge_mu(0.01, "x")
    with pytest.raises(TypeError):
        Accountant(1.0, DELTA, "zcdp").charge_eps_delta(0.1, 1e-6, "x")
    with pytest.raises(TypeError):
        Accountant(1.0, DELTA, "approx").charge_gaussian(1.0, 10.0, "x")


# ----------------------------------------------------------------------------- conversions


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0])
def test_charge_pure_conversions(eps):
    z = Accountant(10.0, DELTA, "zcdp")
    z.charge_pure(eps, "p")
    assert z.rho_spent == pytest.approx(eps**2 / 2, rel=1e-12)  # Bun & Steinke 2016, Prop. 1.4
    g = Accountant(10.0, DELTA, "gdp")
    g.charge_pure(eps, "p")
    # Dong, Roth & Su 2022: eps-DP => mu-GDP with mu = -2 Phi^{-1}(1/(1+e^eps))
    assert g.mu_spent == pytest.approx(-2 * stats.norm.ppf(1 / (1 + math.exp(eps))), rel=1e-10)
    a = Accountant(2.0, DELTA, "approx")
    a.charge_pure(eps, "p")
    assert a.spent_epsilon_delta() == (pytest.approx(eps), 0.0)


def test_charge_gaussian():
    z = Accountant(2.0, DELTA, "zcdp")
    z.charge_gaussian(3.0, 12.0, "g")
    assert z.rho_spent == pytest.approx(3.0**2 / (2 * 12.0**2), rel=1e-12)
    g = Accountant(2.0, DELTA, "gdp")
    g.charge_gaussian(3.0, 12.0, "g")
    assert g.mu_spent == pytest.approx(0.25, rel=1e-12)
    for bad_sigma in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="sigma="):
            g.charge_gaussian(1.0, bad_sigma, "bad")
    with pytest.raises(ValueError, match="sensitivity="):
        g.charge_gaussian(-1.0, 1.0, "bad")


@pytest.mark.parametrize("currency", ["zcdp", "gdp", "approx"])
@pytest.mark.parametrize("eps", EPS_GRID)
def test_spent_never_above_target(currency, eps):
    """Spend the whole budget in uneven pieces; the reported (eps, delta) stays within the
    ledger's 1e-9 relative float tolerance of the target, and the independent references
    confirm the spent privacy really is (eps, delta)-DP."""
    acc = Accountant(eps, DELTA, currency)
    shares = np.array([0.1, 0.2, 0.3, 0.4])
    if currency == "zcdp":
        for i, s in enumerate(shares):
            acc.charge_rho(s * acc.rho_total, f"c{i}")
    elif currency == "gdp":
        for i, s in enumerate(shares):
            acc.charge_mu(math.sqrt(s) * acc.mu_total, f"c{i}")
    else:
        for i, s in enumerate(shares):
            acc.charge_eps_delta(s * eps, s * DELTA, f"c{i}")
    e, d = acc.spent_epsilon_delta()
    assert e <= eps * (1 + REL) and d <= DELTA * (1 + REL)
    assert e == pytest.approx(eps, rel=1e-8)
    if currency == "zcdp":
        assert brute_cdp_log_delta(acc.rho_spent, eps) <= math.log(DELTA) + 1e-6
    if currency == "gdp":
        assert bw_delta(acc.mu_spent, eps) <= DELTA * (1 + 1e-6)
    summary = acc.summary()
    assert summary["spent_epsilon"] == e and summary["n_charges"] == 4


def test_empty_ledger():
    acc = Accountant(1.0, DELTA, "zcdp")
    assert acc.spent_epsilon_delta() == (0.0, 0.0)
    assert acc.remaining() == pytest.approx(acc.rho_total)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("eps,delta,name", [
    (0.0, 1e-5, "epsilon="), (-1.0, 1e-5, "epsilon="), (math.nan, 1e-5, "epsilon="),
    (math.inf, 1e-5, "epsilon="), ("1", 1e-5, "epsilon="), (None, 1e-5, "epsilon="),
    (True, 1e-5, "epsilon="),
    (1.0, 0.0, "delta="), (1.0, 1.0, "delta="), (1.0, -1e-5, "delta="), (1.0, 1.5, "delta="),
    (1.0, math.nan, "delta="), (1.0, "1e-5", "delta="), (1.0, None, "delta="),
])
def test_validate_budget_one_line_errors(eps, delta, name):
    for call in (lambda: validate_budget(eps, delta), lambda: Accountant(eps, delta, "zcdp")):
        with pytest.raises(ValueError, match=name) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg and repr(eps if name == "epsilon=" else delta) in msg


def test_validate_budget_accepts_numpy_scalars_and_pure_zero_delta():
    validate_budget(np.int64(1), np.float32(1e-5))
    validate_budget(np.float64(0.5), np.array(1e-6))
    validate_budget(1, 0.0, allow_zero_delta=True)
    Accountant(np.float64(2.0), 0.0, "pure")
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        validate_budget(1.0, 1.0, allow_zero_delta=True)
    with pytest.raises(ValueError, match="currency"):
        Accountant(1.0, 1e-5, "rdp")


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_negative_or_nonfinite_charges_are_refused(bad):
    with pytest.raises(ValueError, match="rho="):
        Accountant(1.0, DELTA, "zcdp").charge_rho(bad, "x")
    with pytest.raises(ValueError, match="mu="):
        Accountant(1.0, DELTA, "gdp").charge_mu(bad, "x")
    with pytest.raises(ValueError, match="epsilon="):
        Accountant(1.0, DELTA, "approx").charge_pure(bad, "x")


# ----------------------------------------------------------------------------- AdaSSP


@pytest.mark.parametrize("eps", EPS_GRID)
def test_adassp_calibration_fits_the_budget(eps):
    """DD-SSP paper, Alg. 5 (Wang 2018): three Gaussian releases each with noise sd
    sqrt(log(6/delta)) * Delta / (eps/3), i.e. each mu_i = (eps/3) / sqrt(log(6/delta))-GDP;
    together sqrt(3) mu_i. That must be (eps, delta)-DP by Balle & Wang's exact formula, and
    the ledger must accept the fit and record exactly that mu. Data: seed 6, n = 400, d = 6,
    rows scaled to ||x|| <= 1, |y| <= 1."""
    rng = np.random.default_rng(6)
    n, d = 400, 6
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.25
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    data = TabularData(X=X, y=y, x_bound=1.0, y_bound=1.0,
                       feature_names=tuple(f"x{j}" for j in range(d)), target="y")
    acc = Accountant(eps, DELTA, AdaSSP.accounting)
    model = AdaSSP().fit(data, acc, rng)
    mu_i = (eps / 3) / math.sqrt(math.log(6 / DELTA))
    assert len(acc.charges) == 3
    assert acc.mu_spent == pytest.approx(math.sqrt(3) * mu_i, rel=1e-12)
    assert bw_delta(math.sqrt(3) * mu_i, eps) <= DELTA
    spent_eps, spent_delta = acc.spent_epsilon_delta()
    assert spent_eps <= eps and spent_delta <= DELTA
    assert np.all(np.isfinite(model.coef_)) and model.coef_.shape == (d,)


def test_understated_charge_reports_true_spend() -> None:
    # A paper claims mu=0.5 for a release that is really 1.0-GDP: the record must show the
    # true total sqrt(0.5^2 + 1.0^2) (independently: gdp_eps of that), the claim, and a flag.
    import math

    from dpbench.privacy import gdp_eps

    led = Accountant(4.0, 1e-5, currency="gdp")  # mu_total ~ 0.9 > claimed 0.71
    led.charge_mu(0.5, "honest")
    led.charge_mu(0.5, "claimed", actual=1.0)
    out = led.summary()
    assert out["understated"] == 1.0
    assert out["mu_spent"] == pytest.approx(math.sqrt(1.25))
    assert out["claimed_mu_spent"] == pytest.approx(math.sqrt(0.5))
    assert out["spent_epsilon"] == pytest.approx(gdp_eps(math.sqrt(1.25), 1e-5))
    assert out["claimed_spent_epsilon"] == pytest.approx(gdp_eps(math.sqrt(0.5), 1e-5))
    clean = Accountant(2.0, 1e-5, currency="gdp")
    clean.charge_mu(0.5, "a", actual=0.5)
    assert "understated" not in clean.summary()


def test_understated_approx_charge_reports_the_true_epsilon() -> None:
    # A formula claims eps 0.6 for a release that really costs 0.9 (at the same delta):
    # with an honest 0.3 beside it the record's spend is 0.3 + 0.9 = 1.2 > the 1.0 target,
    # the claim 0.9, and the flag; a true cost below the claim leaves the claim standing.
    led = Accountant(1.0, 1e-6)
    led.charge_eps_delta(0.3, 0.0, "honest")
    led.charge_eps_delta(0.6, 1e-6, "claimed", actual=0.9)
    out = led.summary()
    assert out["understated"] == 1.0
    assert out["spent_epsilon"] == pytest.approx(1.2)
    assert out["claimed_spent_epsilon"] == pytest.approx(0.9)
    assert "claimed_mu_spent" not in out
    over_paid = Accountant(1.0, 1e-6)
    over_paid.charge_eps_delta(1.0, 1e-6, "paper formula", actual=0.61)
    assert "understated" not in over_paid.summary()
    assert over_paid.summary()["spent_epsilon"] == 1.0


def test_unprotected_rows_weaken_delta_for_a_row_of_the_split() -> None:
    # 100 of 5,771 rows published as they are: a row of the split is in them with
    # probability 100/5771, so its guarantee is (eps, delta + 0.017328...).
    led = Accountant(1.0, 3e-8, currency="zcdp")
    led.charge_pure(0.01, "q")
    led.declare_unprotected(100, 5771)
    out = led.summary()
    assert out["unprotected_rows"] == 100.0
    assert out["delta_any_row"] == pytest.approx(3e-8 + 100 / 5771, rel=1e-12)
    assert "unprotected_rows" not in Accountant(1.0, 1e-6).summary()
    with pytest.raises(ValueError, match="need 0 < rows <= n"):
        led.declare_unprotected(0, 10)
