"""Synthetic records of the query-release methods and the arena baselines (issue 37).

Query release (MWEM, PEP, GEM, RAP, RAP-softmax, DualQuery; their yamls' smoke profiles on
ADULT (reduced)'s smoke split, data seed 0, fit seed 1): the records hold every attribute of
the domain in its order with codes inside it, (X, y) are their encoding, two calls give the
same records; drawing them leaves the fit alone (answers and the generator's final state
equal to a fit whose record seed does not touch the generator; the answers of two fits
equal, and unchanged by ``output(SyntheticTable)``); sampled records answer the workload
like the released answers (tolerance stated below). The rounding rule of relaxed rows is
checked on hand-made rows (chi-square, alpha 1e-3).

Baselines, seeds and tolerances stated per test: ``uniform`` (chi-square of every 1-way and
one 2-way count, alpha 1e-3; charged epsilon 0), ``independent`` (1-way shares at a huge
budget; the noise variance over 300 seeds against the sigma^2 of the charged rho), ``majority``
(the majority class at a large eps, AUC 0.5; the Laplace variance 2 / eps^2) and ``mean``
(the mean at a large eps, clipping at y_bound; the sum's variance y_bound^2 / rho).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpbench.data.base import Split, TabularData
from dpbench.data.queries import QuerySet, resolve_workload
from dpbench.methods import records
from dpbench.methods.baselines.independent import Independent
from dpbench.methods.baselines.majority import Majority
from dpbench.methods.baselines.mean import Mean
from dpbench.methods.baselines.uniform import Uniform
from dpbench.methods.outputs import LinearFit, QueryAnswers, SyntheticTable
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, load_entry, task_view
from dpbench.tasks import TASKS

QR = ["mwem", "pep", "gem", "rap", "rap_softmax", "dualquery"]
#: methods whose relaxed rows / histogram are distributions: their n sampled records answer
#: every query within this of the released answer (4.5 sd of a share at n = 43,944 is 0.011)
SAMPLED_TOL = 0.02
ALPHA = 1e-3


@pytest.fixture(scope="module")
def adult() -> Split:
    view = task_view("qr_adult_reduced", load_entry("dataset", "qr_adult_reduced"),
                     "query_release")
    return import_object(view["_target_"])(rng=np.random.default_rng(0),
                                           **_merged_params(view, "smoke"))


def _fit(method: str, data: TabularData, rng: np.random.Generator):
    me = load_entry("method", method)
    cls = import_object(me["_target_"])
    model = cls(**_merged_params(me, "smoke"))
    model.fit(data, Accountant(1.0, 1e-5, currency=cls.accounting), rng)
    return model


@pytest.fixture(scope="module")
def fitted(adult: Split) -> dict:
    return {m: _fit(m, adult.train, np.random.default_rng(1)) for m in QR}


def _check_records(table: SyntheticTable, data: TabularData) -> None:
    domain = dict(data.domain)
    assert list(table.records.columns) == list(domain)
    for a, m in domain.items():
        col = table.records[a].to_numpy()
        assert np.issubdtype(col.dtype, np.integer) and col.min() >= 0 and col.max() < m, a
    X, y = data.encoding.encode(table.records)
    np.testing.assert_array_equal(table.X, X)
    np.testing.assert_array_equal(table.y, y)


# ------------------------------------------------------------------- query-release records

@pytest.mark.parametrize("method", QR)
def test_query_release_records_cover_the_domain(method: str, fitted: dict,
                                                adult: Split) -> None:
    model = fitted[method]
    assert model.produces[0] is QueryAnswers and SyntheticTable in model.produces
    table = model.output(SyntheticTable)
    _check_records(table, adult.train)
    expected = model.rounds_run_ if method == "dualquery" else adult.train.n
    assert len(table.records) == expected
    assert table.records.equals(model.output(SyntheticTable).records)   # same every call


@pytest.mark.parametrize("method", QR)
def test_records_leave_the_fit_and_its_answers_alone(method: str, fitted: dict, adult: Split,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fit whose record seed does not touch the generator (patched) ends in the same
    generator state with the same answers; the answers do not move when records are drawn."""
    before = fitted[method].output(QueryAnswers).answers.copy()
    fitted[method].output(SyntheticTable)
    np.testing.assert_array_equal(fitted[method].output(QueryAnswers).answers, before)
    rng = np.random.default_rng(1)
    again = _fit(method, adult.train, rng)
    np.testing.assert_array_equal(again.output(QueryAnswers).answers, before)
    for mod in ("histogram", "relaxed"):
        monkeypatch.setattr(f"dpbench.methods.query_release.{mod}.post_seed",
                            lambda _rng: np.random.SeedSequence(0))
    rng_off = np.random.default_rng(1)
    off = _fit(method, adult.train, rng_off)
    np.testing.assert_array_equal(off.output(QueryAnswers).answers, before)
    assert rng.bit_generator.state == rng_off.bit_generator.state


@pytest.mark.parametrize("method", ["mwem", "pep", "gem", "rap_softmax", "dualquery"])
def test_records_answer_like_the_released_answers(method: str, fitted: dict,
                                                  adult: Split) -> None:
    """DualQuery's records are its release (exact); the others' n draws from a distribution
    whose expected answers are the released ones (SAMPLED_TOL)."""
    model = fitted[method]
    domain = dict(adult.train.domain)
    qs = QuerySet.build(domain, resolve_workload(domain, adult.train.n, "all_3way"))
    got = qs.answers(model.output(SyntheticTable).records)
    want = model.output(QueryAnswers).answers
    tol = 1e-12 if method == "dualquery" else SAMPLED_TOL
    assert np.max(np.abs(got - want)) <= tol


def test_relaxed_rows_are_rounded_per_block() -> None:
    """Rows with a negative entry (RAP's raw values) and a block without positive mass: the
    negative entry is never drawn, the empty block is uniform, the others follow the
    normalised block (chi-square, alpha 1e-3, n 30,000, seed 5); each of the 3 rows serves
    10,000 records."""
    rows = np.array([[0.6, -0.4, 0.2, -0.1, -1.0, 0.0],
                     [0.1, 0.3, 0.0, 0.5, 0.5, 0.0],
                     [1.0, 1.0, 1.0, 0.2, 0.2, 0.6]])
    n = 30_000
    which = np.random.default_rng(np.random.SeedSequence(5)).permutation(np.arange(n) % 3)
    out = records.sample_blocks(rows, ["a", "b"], [3, 3], n, np.random.SeedSequence(5))
    assert np.bincount(which).tolist() == [10_000] * 3
    for r, probs in enumerate([([0.75, 0, 0.25], [1 / 3] * 3), ([0.25, 0.75, 0], [0.5, 0.5, 0]),
                               ([1 / 3] * 3, [0.2, 0.2, 0.6])]):
        for a, p in zip("ab", probs, strict=True):
            p = np.asarray(p)
            seen = np.bincount(out[a].to_numpy()[which == r], minlength=3)
            assert np.all(seen[p == 0] == 0), (r, a, seen)
            keep = p > 0
            assert stats.chisquare(seen[keep], 10_000 * p[keep]).pvalue > ALPHA, (r, a, seen)


def test_histogram_records_follow_the_distribution() -> None:
    """n = 50,000 draws from a 2 x 3 distribution: chi-square, alpha 1e-3, seed 7."""
    dist = np.array([[0.1, 0.0, 0.3], [0.2, 0.25, 0.15]])
    out = records.sample_histogram(dist * 4, ["a", "b"], 50_000, np.random.SeedSequence(7))
    seen = np.bincount(out["a"].to_numpy() * 3 + out["b"].to_numpy(), minlength=6)
    p = dist.ravel()
    assert seen[p == 0].sum() == 0
    assert stats.chisquare(seen[p > 0], 50_000 * p[p > 0]).pvalue > ALPHA


def test_post_seed_does_not_advance_the_generator() -> None:
    rng, twin = np.random.default_rng(11), np.random.default_rng(11)
    seeds = [records.post_seed(rng) for _ in range(2)]
    assert rng.bit_generator.state == twin.bit_generator.state
    a, b = (np.random.default_rng(s).random(4) for s in seeds)
    assert not np.array_equal(a, b) and not np.array_equal(a, twin.random(4))


# ------------------------------------------------------------------------------ baselines

def test_uniform_records_are_uniform_and_cost_nothing(adult: Split) -> None:
    """Every 1-way count and the (first, second attribute) 2-way count of the n records
    against uniform: chi-square, alpha 1e-3 each (fit seed 3)."""
    data = adult.train
    ledger = Accountant(1.0, 1e-5, currency="pure")
    model = Uniform().fit(data, ledger, np.random.default_rng(3))
    table = model.output(SyntheticTable)
    _check_records(table, data)
    assert len(table.records) == data.n
    assert [c.epsilon for c in ledger.charges] == [0.0]
    assert ledger.summary()["spent_epsilon"] == 0.0
    domain = dict(data.domain)
    for a, m in domain.items():
        seen = np.bincount(table.records[a].to_numpy(), minlength=m)
        assert stats.chisquare(seen).pvalue > ALPHA, a
    (a, ma), (b, mb) = list(domain.items())[:2]
    seen = np.bincount(table.records[a].to_numpy() * mb + table.records[b].to_numpy(),
                       minlength=ma * mb)
    assert stats.chisquare(seen).pvalue > ALPHA


def _frame_data(frame: pd.DataFrame, domain: dict[str, int]) -> TabularData:
    return TabularData(X=frame.to_numpy(float), y=np.zeros(len(frame)), x_bound=1.0,
                       y_bound=1.0, feature_names=tuple(domain), target=list(domain)[-1],
                       discrete=frame, domain=domain)


def test_independent_reproduces_one_way_marginals_at_a_huge_budget(adult: Split) -> None:
    """eps 1e6 (sigma ~ 1e-5 counts): the released shares equal the data's to 1e-6, the
    noisy n is n, and the n records' shares lie within 4.5 sd of them (fit seed 4)."""
    data = adult.train
    ledger = Accountant(1e6, 1e-5, currency="zcdp")
    model = Independent().fit(data, ledger, np.random.default_rng(4))
    assert ledger.rho_spent == pytest.approx(ledger.rho_total, rel=1e-12)
    assert model.n_synthetic_ == data.n
    table = model.output(SyntheticTable)
    _check_records(table, data)
    for a, m in dict(data.domain).items():
        true = np.bincount(data.discrete[a].to_numpy(), minlength=m) / data.n
        np.testing.assert_allclose(model.marginals_[a], true, atol=1e-6)
        got = np.bincount(table.records[a].to_numpy(), minlength=m) / data.n
        sd = np.sqrt(true * (1 - true) / data.n)
        assert np.all(np.abs(got - true) <= 4.5 * sd + 1e-12), a


def test_independent_noise_matches_the_charged_rho() -> None:
    """300 seeds on 500 rows over 3 attributes (9 cells): the released count minus the true
    one has variance sigma^2 = k / (2 rho) (rho the ledger's spend); the pooled sample
    variance of 2,700 draws lies within 12% (about 4 sd of the estimate, 2.7%)."""
    domain = {"a": 2, "b": 3, "c": 4}
    r = np.random.default_rng(0)
    frame = pd.DataFrame({a: r.integers(0, m, 500) for a, m in domain.items()})
    data = _frame_data(frame, domain)
    true = {a: np.bincount(frame[a], minlength=m) for a, m in domain.items()}
    errors, rhos = [], set()
    for seed in range(300):
        ledger = Accountant(1.0, 1e-5, currency="zcdp")
        model = Independent().fit(data, ledger, np.random.default_rng(seed))
        rhos.add(round(ledger.rho_spent, 15))
        errors += [model.noisy_[a] - true[a] for a in domain]
    (rho,) = rhos
    sigma2 = len(domain) / (2 * rho)
    assert model.sigma_ ** 2 == pytest.approx(sigma2, rel=1e-12)
    assert np.var(np.concatenate(errors), ddof=0) == pytest.approx(sigma2, rel=0.12)


def _labelled(y: np.ndarray, y_bound: float = 1.0) -> TabularData:
    X = np.random.default_rng(1).normal(size=(y.size, 3))
    return TabularData(X=X, y=y.astype(float), x_bound=10.0, y_bound=y_bound,
                       feature_names=("x0", "x1", "x2"), target="y")


@pytest.mark.parametrize("share,sign", [(0.7, 1.0), (0.3, -1.0)])
def test_majority_predicts_the_majority_class(share: float, sign: float) -> None:
    """eps 100 on 1,000 rows (Laplace sd 0.014 against a 400-row gap): the majority class,
    AUC 0.5 and accuracy = its share on the test rows (fit seed 2)."""
    y = (np.arange(1000) < share * 1000).astype(float)
    data = _labelled(y)
    ledger = Accountant(100.0, 1e-5, currency="pure")
    model = Majority().fit(data, ledger, np.random.default_rng(2))
    assert ledger.eps_spent == pytest.approx(100.0)
    fit = model.output(LinearFit)
    assert fit.intercept == sign and np.all(fit.coef == 0)
    metrics = TASKS["classification"].score(fit, Split(train=data, test=data), {})
    assert metrics["auc"] == 0.5
    assert metrics["accuracy"] == pytest.approx(max(share, 1 - share))


def test_majority_noise_is_laplace_at_the_charged_eps() -> None:
    """1,000 seeds at eps 0.5: the noisy counts minus the true ones have variance
    2 / eps^2 = 8 (2,000 draws: within 25%, about 5 sd of a Laplace variance estimate)."""
    y = (np.arange(200) < 120).astype(float)
    data = _labelled(y)
    noise = []
    for seed in range(1000):
        model = Majority().fit(data, Accountant(0.5, 1e-5, currency="pure"),
                               np.random.default_rng(seed))
        noise.append(model.noisy_counts_ - [80.0, 120.0])
    assert np.var(np.concatenate(noise)) == pytest.approx(2 / 0.5**2, rel=0.25)


def test_mean_is_close_to_the_true_mean_at_a_large_eps() -> None:
    """eps 1e4 on 2,000 labels in [-3, 3] (y_bound 3): the intercept is the mean to 1e-3, the
    coefficients 0 (fit seed 6); labels beyond y_bound are clipped."""
    y = np.random.default_rng(0).uniform(-3, 3, 2000)
    model = Mean().fit(_labelled(y, 3.0), Accountant(1e4, 1e-5, currency="zcdp"),
                       np.random.default_rng(6))
    fit = model.output(LinearFit)
    assert fit.intercept == pytest.approx(y.mean(), abs=1e-3) and np.all(fit.coef == 0)
    wide = np.where(np.arange(2000) < 1000, 10.0, -3.0)      # clipped to 3 and -3: mean 0
    model = Mean().fit(_labelled(wide, 3.0), Accountant(1e4, 1e-5, currency="zcdp"),
                       np.random.default_rng(6))
    assert model.intercept_ == pytest.approx(0.0, abs=1e-3)


def test_mean_noise_matches_the_charged_rho() -> None:
    """1,000 seeds at eps 1 (y_bound 2): the noisy sum's error has variance y_bound^2 / rho
    (rho / 2 each for the sum and the count) within 20% (about 4.5 sd of the estimate)."""
    y = np.random.default_rng(0).uniform(-2, 2, 300)
    errs, rho = [], None
    for seed in range(1000):
        ledger = Accountant(1.0, 1e-5, currency="zcdp")
        model = Mean().fit(_labelled(y, 2.0), ledger, np.random.default_rng(seed))
        rho = ledger.rho_spent
        errs.append(model.noisy_sum_ - y.sum())
    assert rho == pytest.approx(Accountant(1.0, 1e-5, currency="zcdp").rho_total, rel=1e-12)
    assert np.var(errs) == pytest.approx(4.0 / rho, rel=0.20)
    assert math.isfinite(model.intercept_)
