"""PATE of the excess-risk paper's App. D.2: gamma, ledger, Laplace scale, noiseless labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpbench.data.base import TabularData
from dpbench.methods.classification.pate import PATE, noisy_argmax, pate_gamma
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.outputs import LinearFit
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.conversions import cdp_eps


def _data(n: int, seed: int, pm1: bool = False) -> TabularData:
    """Two integer-code columns; y = 1 iff x0 >= 5 (separable, with an intercept)."""
    X = np.random.default_rng(seed).integers(0, 10, size=(n, 2)).astype(float)
    y = (X[:, 0] >= 5).astype(float)
    return TabularData(X=X, y=2 * y - 1 if pm1 else y, x_bound=float(np.sqrt(162)),
                       y_bound=1.0, feature_names=("x0", "x1"), target="y")


@pytest.mark.parametrize("eps,T,delta", [(1.0, 100, 1e-5), (0.5, 20, 1e-8), (2.0, 100, 1e-9)])
def test_gamma_is_the_positive_root_of_the_papers_quadratic(eps, T, delta):
    # 4 T g^2 + 2 g sqrt(2 T ln(1/delta)) - eps = 0, solved here with numpy's companion matrix
    b = 2 * math.sqrt(2 * T * math.log(1 / delta))
    roots = np.roots([4 * T, b, -eps])
    assert pate_gamma(eps, T, delta) == pytest.approx(float(roots.max()), rel=1e-12)
    assert min(roots) < 0 < pate_gamma(eps, T, delta)


def test_gamma_hand_computed_at_the_codes_settings():
    # eps = 1, T = 100, delta = 1e-5: b = 2 sqrt(200 ln 1e5) = 2 sqrt(2302.5851) = 95.970518,
    # gamma = (-b + sqrt(b^2 + 1600)) / 800 = (-95.970518 + 103.972787) / 800 = 0.01000284
    assert pate_gamma(1.0, 100, 1e-5) == pytest.approx(0.01000284, rel=1e-6)


@pytest.mark.parametrize("eps,delta", [(0.25, 1e-5), (1.0, 1e-5), (1.0, 1 / 1000**2),
                                       (2.0, 1e-9)])
def test_ledger_spends_within_the_budget(eps, delta):
    acc = Accountant(eps, delta, currency="zcdp")
    m = PATE(n_teachers=10, n_student=100).fit(_data(1000, 0), acc, np.random.default_rng(1))
    g = pate_gamma(eps, 100, delta)
    assert len(acc.charges) == 100 and all(c.epsilon == 2 * g for c in acc.charges)
    assert acc.rho_spent == pytest.approx(100 * 2 * g**2, rel=1e-12)
    assert acc.rho_spent <= acc.rho_total
    spent_eps, spent_delta = acc.spent_epsilon_delta()
    assert spent_eps <= eps and spent_delta == delta
    # the Bun-Steinke epsilon of that rho is below the paper's bound, which equals eps
    rho = acc.rho_spent
    assert cdp_eps(rho, delta) <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) < eps
    assert m.info()["gamma"] == g


class _RecordingRng:
    """A Generator that records every Laplace draw's scale (everything else delegated)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.scales = np.random.default_rng(seed), []

    def __getattr__(self, name: str):
        return getattr(self.rng, name)

    def laplace(self, loc, scale, size):
        self.scales.append(scale)
        return self.rng.laplace(loc, scale, size)


def test_laplace_scale_is_one_over_gamma():
    rng = _RecordingRng(2)
    acc = Accountant(1.0, 1e-6, currency="zcdp")
    m = PATE(n_teachers=5, n_student=40).fit(_data(500, 3), acc, rng)
    assert rng.scales == [1 / pate_gamma(1.0, 40, 1e-6)]
    assert m.info()["laplace_scale"] == rng.scales[0]


def test_noisy_argmax_minority_rate_matches_the_laplace_difference():
    # votes (Delta, 0), noise Laplace(b) on both: P(minority wins) = P(L1 - L0 > Delta)
    # = exp(-Delta/b) (1 + Delta/(2b)) / 2. 200,000 queries, seed 4; tolerance 4 s.e.
    b, delta_votes, n = 3.0, 4.0, 200_000
    p = 0.5 * math.exp(-delta_votes / b) * (1 + delta_votes / (2 * b))
    votes = np.tile([delta_votes, 0.0], (n, 1))
    rate = float(np.mean(noisy_argmax(votes, b, np.random.default_rng(4)) == 1))
    assert abs(rate - p) <= 4 * math.sqrt(p * (1 - p) / n)


def test_noise_off_labels_are_the_teacher_majority():
    # separable data: every teacher is right on the student rows, so the majority is the
    # true label; noise off, the student labels equal it and the student is exact
    data = _data(2000, 5)
    with noise_disabled():
        m = PATE(n_teachers=15, n_student=100).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                                   np.random.default_rng(6))
    assert m.info()["noise_disabled"]
    assert np.array_equal(m.votes_.sum(axis=1), np.full(100, 15))
    assert np.array_equal(m.labels_, np.argmax(m.votes_, axis=1))   # plain majority
    assert np.array_equal(m.labels_, data.y[m.student_rows_].astype(int))
    assert np.mean((m.decision_function(data.X) > 0) == (data.y > 0)) == 1.0


def test_pm1_labels_and_intercept_reach_the_linear_fit():
    data = _data(2000, 5, pm1=True)
    with noise_disabled():
        m = PATE(n_teachers=15).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                    np.random.default_rng(6))
    fit = m.output(LinearFit)
    assert fit.intercept == m.intercept_ < 0        # threshold between codes 4 and 5
    assert np.mean((fit.decision_function(data.X) > 0) == (data.y > 0)) == 1.0


def test_single_class_partitions_vote_their_class():
    # 600 rows, 3 of them negative: almost every teacher part holds only positives; no
    # crash, those teachers vote 1, and an all-positive student predicts the constant class
    X = np.arange(600, dtype=float)[:, None] % 10
    y = np.ones(600)
    y[[0, 1, 2]] = 0.0
    data = TabularData(X=X, y=y, x_bound=9.0, y_bound=1.0, feature_names=("x",), target="y")
    with noise_disabled():
        m = PATE(n_teachers=50, n_student=100).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                                   np.random.default_rng(7))
    info = m.info()
    assert np.all(m.votes_[:, 1] >= 47) and info["teacher_rows"] == 10
    assert info["student_single_class"] == 1
    assert np.all(m.coef_ == 0) and m.intercept_ == pytest.approx(math.log(101))


def test_too_many_teachers_is_refused():
    with pytest.raises(ValueError, match="leave 400 for n_teachers=450 after the student "
                                         "rows; valid: n_teachers <= 400"):
        PATE(n_teachers=450).fit(_data(500, 0), Accountant(1.0, 1e-5, "zcdp"),
                                 np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_student=0 must be an integer >= 1"):
        PATE(n_student=0)


def test_private_student_rows_are_declared_unprotected_and_no_noiseless_statistic_is_kept():
    # the paper's choice: 100 of 2000 training rows published as the student's features;
    # the record says so, with the delta a row of the split really gets (1e-5 + 100/2000)
    data = _data(2000, 5)
    acc = Accountant(1.0, 1e-5, "zcdp")
    m = PATE(n_teachers=15).fit(data, acc, np.random.default_rng(6))
    out = acc.summary()
    assert out["unprotected_rows"] == 100.0
    assert out["delta_any_row"] == pytest.approx(1e-5 + 0.05, rel=1e-12)
    info = m.info()
    assert info["unprotected_rows"] == 100 and info["student"] == "private"
    assert not {"label_flip_rate", "single_class_teachers", "votes"} & set(info)


def test_public_student_rows_come_from_outside_the_training_rows():
    # pate_public: the student's rows are the data's public rows; every training row
    # teaches (15 teachers x floor(2000 / 15) = 133 rows), none is released
    from dpbench.data.encoding import build_encoding

    data = _data(2000, 5)
    codes = pd.DataFrame({"x0": data.X[:, 0].astype(int), "y": data.y.astype(int)})
    enc = build_encoding({"x0": 10, "y": 2}, "y", (), None, "raw")
    X, y = enc.encode(codes)
    with_public = TabularData(X=X, y=y, x_bound=9.0, y_bound=1.0, feature_names=enc.columns,
                              target="y", discrete=codes, domain={"x0": 10, "y": 2},
                              encoding=enc, public=codes.iloc[:150])
    acc = Accountant(1.0, 1e-5, "zcdp")
    with noise_disabled():
        m = PATE(n_teachers=15, student="public").fit(with_public, acc, np.random.default_rng(6))
    assert "unprotected_rows" not in acc.summary()
    assert m.info()["teacher_rows"] == 133 and m.student_rows_ is None
    assert np.array_equal(m.labels_, codes["y"].to_numpy()[:100])   # majority = truth
    with pytest.raises(ValueError, match="student=public needs n_student=100 public rows, "
                                         "the data has 0"):
        PATE(student="public").fit(data, acc, np.random.default_rng(0))
    assert PATE.data_required({"student": "public"}) == {"public_rows"}
