"""The adaptive-measurement template (App. B.1) and the histogram methods MWEM (with and
without past queries) and PEP (Liu, Vietri & Wu 2021): scales against hand-computed values,
the mechanisms' distributions (seeded, tolerances stated), the ledger summing to rho and
never above, MWEM's error falling with noise off (and rising under the paper's printed
sign), PEP's projection hitting the measurements exactly and equal to an independent
entropy projection, the tracked answers equal to recomputed ones, one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special

from dpbench.data.base import Split, TabularData
from dpbench.data.queries import (
    HistogramTooLarge,
    QuerySet,
    resolve_workload,
    uniform_histogram,
)
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.outputs import QueryAnswers
from dpbench.methods.query_release.histogram import DomainHistogram
from dpbench.methods.query_release.mwem import MWEM
from dpbench.methods.query_release.pep import PEP, project, projection_step
from dpbench.methods.query_release.template import NEIGHBOURS, AdaptiveBudget, plan
from dpbench.privacy.accountant import Accountant
from dpbench.runner.grid import _merged_params, load_entry, task_view
from dpbench.tasks import TASKS

DOMAIN = {"a": 2, "b": 3, "c": 4, "d": 2}


def tiny_frame(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Correlated codes over DOMAIN (b and c follow a), so the answers are far from uniform."""
    r = np.random.default_rng(seed)
    a = r.integers(0, 2, n)
    b = np.where(r.random(n) < 0.8, a, r.integers(0, 3, n))
    c = np.where(r.random(n) < 0.7, 2 * a + (b > 0), r.integers(0, 4, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": r.integers(0, 2, n)})


def tiny_data(n: int = 2000, seed: int = 0) -> TabularData:
    """tiny_frame's codes as the features (no encoding)."""
    frame = tiny_frame(n, seed)
    return TabularData(X=frame.to_numpy(float), y=np.zeros(n), x_bound=1.0, y_bound=1.0,
                       feature_names=tuple(DOMAIN), target="d", discrete=frame,
                       domain=dict(DOMAIN))


def max_error(model, data: TabularData) -> float:
    split = Split(train=data, test=data)
    return TASKS["query_release"].score(model.output(QueryAnswers), split, {})["max_error"]


# ---------------------------------------------------------------------------- the template

def test_template_scales_match_hand_computed_values() -> None:
    # rho 0.01, T 10, alpha 0.5, N 1000: eps0 = sqrt(2 * 0.01 / (10 * 0.5)) = sqrt(0.004)
    b = AdaptiveBudget(rho=0.01, rounds=10, alpha=0.5, n=1000)
    eps0 = math.sqrt(0.004)
    assert b.eps0 == pytest.approx(eps0, rel=1e-14)
    assert b.select_epsilon == pytest.approx(2 * 0.5 * eps0, rel=1e-14)   # P ~ exp(a eps0 N s)
    assert b.sigma == pytest.approx(1 / (1000 * 0.5 * eps0), rel=1e-14)
    assert b.rho_select == pytest.approx((0.5 * eps0) ** 2 / 2, rel=1e-14)
    assert b.rho_measure == pytest.approx((0.5 * eps0) ** 2 / 2, rel=1e-14)
    assert 10 * (b.rho_select + b.rho_measure) == pytest.approx(0.01, rel=1e-14)
    # GEM's alpha 0.67 (Table 2): eps0^2 = 2 rho / (T (0.67^2 + 0.33^2)) = 0.02 / 5.578
    g = AdaptiveBudget(rho=0.01, rounds=10, alpha=0.67, n=1000)
    assert g.eps0 ** 2 == pytest.approx(0.02 / 5.578, rel=1e-12)
    assert g.sigma == pytest.approx(1 / (1000 * 0.33 * g.eps0), rel=1e-12)
    assert 10 * (g.rho_select + g.rho_measure) == pytest.approx(0.01, rel=1e-12)
    # Alg. 3's exponent is half of B.1's and is charged at B.1's rate
    h = AdaptiveBudget(rho=0.01, rounds=10, alpha=0.5, n=1000, selection="alg3")
    assert h.select_epsilon == pytest.approx(b.select_epsilon / 2)
    assert h.rho_select == b.rho_select


def test_template_rho_is_the_ledgers_exact_conversion() -> None:
    n = 43_944
    acc = Accountant(0.1, 1 / n**2, "zcdp")
    b = plan(acc, n, rounds=50, alpha=0.5)
    assert b.rho == acc.rho_total           # the one CKS'20 conversion (privacy/conversions)
    # scope 0.7 (checked against the authors' cdp_rho): rho(0.1, 1/43944^2) = 1.70e-4
    assert b.rho == pytest.approx(1.70e-4, rel=5e-3)


def test_exponential_mechanism_draws_from_exp_alpha_eps0_n_score() -> None:
    # seed 0, 10,000 draws; each frequency within 4 binomial s.e. of its probability
    n, rounds = 1000, 10_000
    acc = Accountant(10_000.0, 1e-6, "zcdp")
    b = plan(acc, n, rounds, alpha=0.5)
    scores = np.array([0.0, 0.001, 0.002, 0.004])
    logits = 0.5 * b.eps0 * n * scores
    p = special.softmax(logits)
    rng = np.random.default_rng(0)
    draws = np.array([b.select(scores, acc, rng, "s") for _ in range(rounds)])
    freq = np.bincount(draws, minlength=4) / rounds
    se = np.sqrt(p * (1 - p) / rounds)
    assert np.all(np.abs(freq - p) <= 4 * se), (freq, p)
    assert p.max() / p.min() > 2                     # the test has power: far from uniform


def test_gaussian_measurement_has_sd_sigma_and_is_clipped() -> None:
    # seed 1, 10,000 draws at 0.5 (clipping is > 10 sd away): sample sd within 2.5% of
    # sigma (the s.e. of a sample sd is sigma / sqrt(2 n) = 0.7%: 3.5 s.e.)
    n, rounds = 10_000, 10_030
    acc = Accountant(3.0, 1e-6, "zcdp")
    b = plan(acc, n, rounds, alpha=0.5)
    rng = np.random.default_rng(1)
    values = np.array([b.measure(0.5, acc, rng, "m") for _ in range(10_000)])
    assert b.sigma < 0.05
    assert np.std(values, ddof=1) == pytest.approx(b.sigma, rel=0.025)
    assert np.mean(values) == pytest.approx(0.5, abs=4 * b.sigma / math.sqrt(values.size))
    assert b.measure(1.0 - 1e-12, acc, np.random.default_rng(2), "m") <= 1.0
    assert all(0.0 <= b.measure(0.0, acc, np.random.default_rng(s), "m") for s in range(20))


# ---------------------------------------------------------------------------- the ledger

METHODS = {"mwem": lambda T: MWEM(T=T), "mwem_vanilla": lambda T: MWEM(T=T, replay=False),
           "pep": lambda T: PEP(T=T)}


@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_ledger_sums_to_rho_and_never_above(name: str, epsilon: float) -> None:
    data = tiny_data()
    acc = Accountant(epsilon, 1 / data.n**2, "zcdp")
    model = METHODS[name](15).fit(data, acc, np.random.default_rng(3))
    assert len(acc.charges) == 2 * 15
    running = np.cumsum([c.rho for c in acc.charges])
    assert running[-1] == pytest.approx(acc.rho_total, rel=1e-12)
    assert np.all(running <= acc.rho_total * (1 + 1e-12))
    info = model.info()
    assert info["rounds_run"] == 15 and info["neighbours"] == NEIGHBOURS
    assert "T rounds" in info["stop_reason"]
    assert math.isfinite(max_error(model, data))


def test_the_template_spends_what_is_left_on_the_ledger() -> None:
    data = tiny_data()
    acc = Accountant(1.0, 1e-6, "zcdp")
    acc.charge_rho(acc.rho_total / 4, "earlier release")
    MWEM(T=5).fit(data, acc, np.random.default_rng(0))
    assert acc.rho_spent == pytest.approx(acc.rho_total, rel=1e-12)


# ---------------------------------------------------------------------------- MWEM

def test_mwem_error_falls_with_noise_off_and_the_papers_sign_diverges() -> None:
    data = tiny_data()
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, data.n))
    start = float(np.max(np.abs(qs.answers(data.discrete)
                                - qs.histogram_answers(uniform_histogram(DOMAIN)))))
    acc = lambda: Accountant(1.0, 1e-6, "zcdp")  # noqa: E731
    with noise_disabled():
        errors = [max_error(MWEM(T=T).fit(data, acc(), np.random.default_rng(0)), data)
                  for T in (1, 5, 40, 200)]
        vanilla = [max_error(MWEM(T=T, replay=False).fit(data, acc(), np.random.default_rng(0)),
                             data) for T in (1, 200)]
        paper = max_error(MWEM(T=40, update_sign="paper").fit(data, acc(),
                                                              np.random.default_rng(0)), data)
    # measured (max error 0.309 at D_0): 0.295, 0.250, 0.024, 0.0064; vanilla 0.303, 0.019
    assert start > errors[0] > errors[1] > errors[2] > errors[3]
    assert errors[3] < 0.03 * start
    assert vanilla[0] > vanilla[1]
    assert errors[3] < vanilla[1]            # replay converges faster (Fig. 7's claim)
    assert paper > start                     # App. B's printed sign: 0.351, moving away


def test_mwem_replays_past_queries_with_the_rounds_stale_answers() -> None:
    data = tiny_data()
    with noise_disabled():
        replay = MWEM(T=10).fit(data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(0))
        once = MWEM(T=10, replay_includes_new=False).fit(
            data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(0))
        vanilla = MWEM(T=10, replay=False).fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                               np.random.default_rng(0))
    assert vanilla.info()["updates"] == 10
    # the authors' replay set holds the new query: at least two updates a round
    assert replay.info()["updates"] >= 20
    assert once.info()["updates"] >= 10


# ---------------------------------------------------------------------------- PEP

def test_one_projection_step_hits_the_measurement_exactly() -> None:
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    hist = DomainHistogram(qs, uniform_histogram(DOMAIN))
    for position, target in [(3, 0.4), (40, 0.01), (7, 0.9)]:
        projection_step(hist, np.array([position]), np.array([target]))
        exact = qs.histogram_answers(hist.distribution())
        assert exact[position] == pytest.approx(target, abs=1e-13)


def test_pep_projection_is_the_entropy_projection_onto_every_measurement() -> None:
    # three measurements on three marginals: iterative projection until every gap is
    # < 1e-10, and the result equals the max-entropy distribution solved independently
    # (the dual: minimise log sum_x exp(lambda . q(x)) - lambda . a~ with scipy's BFGS)
    data = tiny_data()
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, data.n))
    true = qs.answers(data.discrete)
    positions = np.array([qs.position(0, (1, 2, 3)), qs.position(2, (0, 1, 0)),
                          qs.position(3, (2, 2, 1))]).ravel()
    targets = true[positions]
    hist = DomainHistogram(qs, uniform_histogram(DOMAIN))
    gap = project(hist, positions, targets, steps=400)
    exact = qs.histogram_answers(hist.distribution())
    assert gap < 1e-10 and np.max(np.abs(exact[positions] - targets)) < 1e-10

    indicator = np.stack([_indicator(qs, int(p)) for p in positions])    # (3, cells)

    def dual(lam: np.ndarray) -> float:
        return float(special.logsumexp(lam @ indicator) - lam @ targets)

    lam = optimize.minimize(dual, np.zeros(3), method="BFGS", options={"gtol": 1e-12}).x
    reference = special.softmax(lam @ indicator)
    assert np.max(np.abs(hist.distribution().ravel() - reference)) < 1e-7


def _indicator(qs: QuerySet, position: int) -> np.ndarray:
    h = np.zeros(qs.sizes)
    h[qs.histogram_index(position)] = 1.0
    return h.ravel()


def test_pep_with_noise_off_projects_onto_the_true_answers() -> None:
    # the rounds' schedule stops after min(T_max, 2t) steps; the gap it leaves is the one
    # recorded, and more steps from the fitted D reach the measurements exactly
    data = tiny_data()
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, data.n))
    true = qs.answers(data.discrete)
    with noise_disabled():
        model = PEP(T=8).fit(data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(0))
    measured = np.array(model.positions_)
    assert np.array_equal(model.targets_, true[measured])           # no noise
    answers = model.output(QueryAnswers).answers
    gap = np.max(np.abs(answers[measured] - true[measured]))
    assert gap == pytest.approx(model.info()["max_measured_gap"], abs=1e-12)
    assert model.info()["projection_steps"] == sum(min(25, 2 * t) for t in range(1, 9))
    hist = DomainHistogram(qs, model.distribution_)
    assert project(hist, measured, true[measured], steps=3000) < 1e-9


def test_tracked_answers_equal_recomputed_ones() -> None:
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    hist = DomainHistogram(qs, np.random.default_rng(0).random(qs.sizes))
    hist.answers()
    r = np.random.default_rng(1)
    for _ in range(50):
        hist.scale(int(r.integers(qs.n_queries)), float(np.exp(r.normal(0, 2))), track=True)
    fresh = qs.histogram_answers(hist.hist)
    assert np.max(np.abs(hist.answers() - fresh)) < 1e-12


# ---------------------------------------------------------------------------- refusals

def test_a_domain_too_large_for_memory_is_refused_in_one_line_before_allocating() -> None:
    view = task_view("qr_adult", load_entry("dataset", "qr_adult"), "query_release")
    from dpbench.data.query_release import load_query_data

    data = load_query_data(rng=None, **_merged_params(view, "default")).train
    for model in (MWEM(T=10), PEP(T=10)):
        with pytest.raises(HistogramTooLarge, match=r"731,566,080,000 cells") as exc:
            model.check_data(data)
        assert "\n" not in str(exc.value)
        with pytest.raises(HistogramTooLarge):
            model.fit(data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(0))


@pytest.mark.parametrize("make,message", [
    (lambda: MWEM(T=0), "T=0 must be a whole number >= 1"),
    (lambda: MWEM(T=2.5), "T=2.5 must be a whole number"),
    (lambda: PEP(T=10, alpha=1.0), "alpha=1.0 must lie in (0, 1)"),
    (lambda: MWEM(T=10, update_sign="reversed"), "update_sign='reversed' is unknown; valid: "
                                                 "standard, paper"),
    (lambda: MWEM(T=10, selection="half"), "selection='half' is unknown; valid: b1, alg3"),
    (lambda: MWEM(T=10, replay_threshold=-1), "replay_threshold=-1 must be a number >= 0"),
    (lambda: PEP(T=10, max_iters=0), "max_iters=0 must be a whole number >= 1"),
])
def test_bad_hyperparameters_are_one_line_errors(make, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        make()
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_bad_workloads_and_ledgers_are_refused() -> None:
    data = tiny_data()
    with pytest.raises(ValueError, match=r"k=5 must lie in \[1, 4\]"):
        MWEM(T=3, workload="all_5way").check_data(data)
    with pytest.raises(ValueError, match="workload='all_cubes' is unknown"):
        PEP(T=3, workload="all_cubes").check_data(data)
    with pytest.raises(TypeError, match="composes in zCDP; this ledger is 'gdp'"):
        MWEM(T=3).fit(data, Accountant(1.0, 1e-6, "gdp"), np.random.default_rng(0))
    model = MWEM(T=3, workload="all_2way").fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                              np.random.default_rng(0))
    with pytest.raises(ValueError, match="answers are for workload 'all_2way'; the task "
                                         "scores 'all_3way'"):
        max_error(model, data)
