"""DualQuery (Gaboardi et al. 2014, as Liu, Vietri & Wu 2021 run it): per-round costs
against hand-computed values, the query sampler as the exponential mechanism (seeded,
tolerances stated), the MIP best response equal to brute force over every record of a tiny
domain (several seeded weightings), the ``partial`` tie rule against brute force, the
ledger never above the budget and stopping at the first round it cannot pay for, the
sampling switched off (the exact MW game: deterministic, error falls), the outputs,
one-line refusals."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from dpbench.data.base import Split, TabularData
from dpbench.data.encoding import build_encoding
from dpbench.data.queries import (
    HistogramTooLarge,
    QuerySet,
    resolve_workload,
)
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.outputs import QueryAnswers, SyntheticTable
from dpbench.methods.query_release.dualquery import (
    DualQuery,
    best_response,
    enumerate_best_response,
    query_distribution,
    round_epsilon,
    round_rho,
    rounds_affordable,
    sample_queries,
    total_rho,
)
from dpbench.methods.query_release.template import NEIGHBOURS
from dpbench.privacy.accountant import Accountant
from dpbench.tasks import TASKS

sys.path.insert(0, str(Path(__file__).parent))
from test_query_release_methods import DOMAIN, tiny_frame  # noqa: E402


def tiny_data(n: int = 2000, seed: int = 0) -> TabularData:
    """tiny_frame's correlated codes over DOMAIN with the raw encoding (target d)."""
    frame = tiny_frame(n, seed)
    enc = build_encoding(DOMAIN, "d", (), None, "raw")
    X, y = enc.encode(frame)
    return TabularData(X=X, y=y, x_bound=3.0, y_bound=1.0, feature_names=enc.columns,
                       target="d", discrete=frame, domain=dict(DOMAIN), encoding=enc)


def score(model: DualQuery, data: TabularData) -> dict[str, float]:
    return TASKS["query_release"].score(model.output(QueryAnswers),
                                        Split(train=data, test=data), {})


# ---------------------------------------------------------------------------- accounting

def test_round_costs_match_hand_computed_values() -> None:
    # N 1000, eta 2, s 10: eps_t = 2 * 2 * t / 1000 = 0.004 t, rho_t = 10 (0.004 t)^2 / 8
    # = 2e-5 t^2; four rounds 2e-5 (0 + 1 + 4 + 9) = 2.8e-4
    assert round_epsilon(2.0, 3, 1000) == pytest.approx(0.012, rel=1e-14)
    assert round_rho(2.0, 0, 1000, 10) == 0.0
    assert round_rho(2.0, 3, 1000, 10) == pytest.approx(1.8e-4, rel=1e-14)
    assert total_rho(2.0, 4, 1000, 10) == pytest.approx(2.8e-4, rel=1e-14)
    # the closed form s eta^2 (T - 1) T (2T - 1) / (12 N^2) for T = 50
    assert total_rho(3.0, 50, 43_944, 100) == pytest.approx(
        100 * 9 * 49 * 50 * 99 / (12 * 43_944**2), rel=1e-12)
    # largest T with total <= rho: 2.8e-4 pays for 4 rounds, not 5 (5 cost 6e-4)
    assert rounds_affordable(2.0, 10, 1000, 2.8e-4 * (1 + 1e-12)) == 4
    assert rounds_affordable(2.0, 10, 1000, 5.9e-4) == 4


def test_query_distribution_is_the_exponential_mechanism_of_round_t() -> None:
    # round t = 4 of N = 100 rows: scores S of sensitivity t/N = 0.04, eps_t = 2 eta t/N;
    # EM: P ~ exp(eps_t S / (2 * 0.04)) = exp(eta S) over [S, -S]; hand-computed logits
    eta, t, n = 2.0, 4, 100
    scores = np.array([0.5, -0.25, 0.0])
    eps_t, sens = round_epsilon(eta, t, n), t / n
    logits = eps_t * np.concatenate([scores, -scores]) / (2 * sens)
    assert np.allclose(logits, [1.0, -0.5, 0.0, -1.0, 0.5, 0.0], rtol=0, atol=1e-14)
    p = query_distribution(scores, eta)
    assert np.allclose(p, special.softmax(logits), rtol=1e-13, atol=0)
    assert np.allclose(query_distribution(np.zeros(5), eta), 0.1)        # round 0: uniform
    # seed 0, 20,000 draws in 40 rounds of 500: each frequency within 4 binomial s.e.
    rng = np.random.default_rng(0)
    counts = np.zeros(6)
    for _ in range(40):
        pos, neg, c = sample_queries(scores, eta, 500, rng, sensitivity=0.01)
        assert c.sum() == 500 and np.all(c >= 1)
        np.add.at(counts, pos + 3 * neg, c)
    freq = counts / counts.sum()
    se = np.sqrt(p * (1 - p) / counts.sum())
    assert np.all(np.abs(freq - p) <= 4 * se), (freq, p)


# ---------------------------------------------------------------------------- best response

def brute_force(qs: QuerySet, positions: np.ndarray, negated: np.ndarray,
                weights: np.ndarray) -> tuple[float, dict[tuple[int, ...], float]]:
    """The payoff of every record of the domain, from the query engine's answers on a
    one-row data set (independent of the module's payoff)."""
    values = {}
    for record in itertools.product(*(range(m) for m in qs.sizes)):
        q = qs.rows_answers(np.array([record]))[positions]
        values[record] = float(np.sum(weights * np.where(negated, 1 - q, q)))
    return max(values.values()), values


def random_weighting(qs: QuerySet, rng: np.random.Generator, kind: str):
    if kind == "sampled":            # a round's draws: a few queries, integer counts
        pos, neg, w = sample_queries(rng.normal(0, 0.3, qs.n_queries), 3.0,
                                     int(rng.integers(1, 40)), rng, sensitivity=0.01)
        return pos, neg, w
    if kind == "positive":           # no negations: only satisfiable jointly by luck
        pos = rng.choice(qs.n_queries, size=12, replace=False)
        return pos, np.zeros(12, bool), rng.integers(1, 5, 12).astype(float)
    # every query and its negation with real weights (the noise-off objective)
    p = query_distribution(rng.normal(0, 1, qs.n_queries), 2.0)
    ids = np.arange(p.size)
    return ids % qs.n_queries, ids >= qs.n_queries, 50 * p


@pytest.mark.parametrize("workload", ["all_3way", "all_2way"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["sampled", "positive", "all"])
def test_mip_best_response_equals_brute_force(workload: str, seed: int, kind: str) -> None:
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100, workload))
    rng = np.random.default_rng(100 * seed + len(kind))
    pos, neg, w = random_weighting(qs, rng, kind)
    best, values = brute_force(qs, pos, neg, w)
    record, value, optimal = best_response(qs, pos, neg, w)
    assert optimal
    assert value == pytest.approx(best, abs=1e-9)                    # the maximum ...
    assert values[tuple(int(v) for v in record)] == pytest.approx(best, abs=1e-9)  # ... attained
    record, value = enumerate_best_response(qs, pos, neg, w)
    assert value == pytest.approx(best, abs=1e-9)
    assert values[tuple(int(v) for v in record)] == pytest.approx(best, abs=1e-9)
    ties = [r for r, v in values.items() if v > best - 1e-9]
    assert tuple(int(v) for v in record) == min(ties)               # no rng: first in C order
    for _ in range(5):                                              # rng: a random maximiser
        record, value = enumerate_best_response(qs, pos, neg, w, rng=rng)
        assert tuple(int(v) for v in record) in ties and value == pytest.approx(best, abs=1e-9)


def test_enumeration_breaks_ties_uniformly_at_random() -> None:
    # one query, (a, b, c) = (0, 0, 0): its maximisers are d = 0 and d = 1; its negation
    # alone: the 46 records outside that cell. Seed 0; frequencies within 4 binomial s.e.
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    pos = qs.position(0, (0, 0, 0)).reshape(1)
    rng = np.random.default_rng(0)
    draws = [enumerate_best_response(qs, pos, np.array([False]), np.ones(1), rng=rng)[0]
             for _ in range(2000)]
    assert all(tuple(r[:3]) == (0, 0, 0) for r in draws)
    share = np.mean([r[3] for r in draws])
    assert abs(share - 0.5) <= 4 * math.sqrt(0.25 / 2000)
    seen = {tuple(int(v) for v in enumerate_best_response(
        qs, pos, np.array([True]), np.ones(1), rng=rng)[0]) for _ in range(2000)}
    assert len(seen) == 46 and not any(r[:3] == (0, 0, 0) for r in seen)


def partial_by_hand(qs: QuerySet, positions: np.ndarray, negated: np.ndarray,
                    weights: np.ndarray, record: tuple[int, ...]) -> float:
    """sum over the sampled, not negated queries of weight x (matched cells) / k, from the
    query set's own cell lookup (independent of the module's partial_scores)."""
    marg, cells = qs.locate(positions)
    total = 0.0
    for m, cell, ng, w in zip(marg, cells, negated, weights, strict=True):
        if not ng:
            axes = qs.axes[int(m)]
            total += w * sum(record[a] == v for a, v in zip(axes, cell, strict=True)) / len(axes)
    return total


def test_partial_ties_keep_the_maximisers_nearest_the_unmet_sampled_queries() -> None:
    # q1 = (a, b, c) = (0, 0, 0) drawn twice, q2 = (b, c, d) = (1, 1, 1) once: the best
    # payoff is 2 (q1; q2 needs b = 1), attained by (0, 0, 0, d) for d = 0 and 1; of those
    # only d = 1 matches a cell of q2 (1/3), so ``partial`` keeps (0, 0, 0, 1) every time
    # and ``random`` picks d = 0 or 1 (seed 0, 200 draws: both seen)
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    bcd = [tuple(c) for c in qs.axes].index((1, 2, 3))
    pos = np.array([qs.position(0, (0, 0, 0))[()], qs.position(bcd, (1, 1, 1))[()]])
    neg, w = np.zeros(2, bool), np.array([2.0, 1.0])
    rng = np.random.default_rng(0)
    for _ in range(200):
        record, value = enumerate_best_response(qs, pos, neg, w, rng=rng, ties="partial")
        assert tuple(record) == (0, 0, 0, 1) and value == 2.0
    seen = {tuple(enumerate_best_response(qs, pos, neg, w, rng=rng, ties="random")[0])
            for _ in range(200)}
    assert seen == {(0, 0, 0, 0), (0, 0, 0, 1)}
    record, value, optimal = best_response(qs, pos, neg, w, ties="partial")
    assert tuple(record) == (0, 0, 0, 1) and value == 2.0 and optimal


@pytest.mark.parametrize("seed", range(6))
def test_partial_ties_equal_brute_force_on_sampled_rounds(seed: int) -> None:
    # a sampled round (seeded): both oracles' records maximise the payoff and, among the
    # maximisers, the partial score computed by hand; the enumeration's picks are spread
    # over every record that ties on both (50 draws, seed 10 + seed) when there are several
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    rng = np.random.default_rng(10 + seed)
    pos, neg, w = random_weighting(qs, rng, "sampled")
    best, values = brute_force(qs, pos, neg, w)
    tied = [r for r, v in values.items() if v > best - 1e-9]
    near = {r: partial_by_hand(qs, pos, neg, w, r) for r in tied}
    top = max(near.values())
    kept = {r for r in tied if near[r] > top - 1e-9}
    record, value, optimal = best_response(qs, pos, neg, w, ties="partial")
    assert optimal and value == pytest.approx(best, abs=1e-9)
    assert tuple(int(v) for v in record) in kept
    picks = {tuple(int(v) for v in enumerate_best_response(qs, pos, neg, w, rng=rng,
                                                           ties="partial")[0])
             for _ in range(50)}
    assert picks <= kept and (len(kept) == 1 or len(picks) > 1)


def test_a_query_sampled_twice_counts_twice() -> None:
    # q1 = (a=0, b=0, c=0) drawn 3 times, q2 = (a=1, b=0, c=0) twice: x must satisfy q1
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, 100))
    pos = np.array([qs.position(0, (0, 0, 0))[()], qs.position(0, (1, 0, 0))[()]])
    record, value, _ = best_response(qs, pos, np.zeros(2, bool), np.array([3.0, 2.0]))
    assert value == 3.0 and tuple(record[:3]) == (0, 0, 0)


# ---------------------------------------------------------------------------- the ledger

@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_ledger_never_above_the_budget_and_stops_at_the_first_unaffordable_round(
        epsilon: float) -> None:
    data = tiny_data()
    n, eta, s = data.n, 3.0, 20
    acc = Accountant(epsilon, 1 / n**2, "zcdp")
    model = DualQuery(eta=eta, samples=s).fit(data, acc, np.random.default_rng(3))
    rounds = model.info()["rounds_run"]
    assert rounds == len(acc.charges) == rounds_affordable(eta, s, n, acc.rho_total) >= 2
    # each round charged its own s (2 eta t / N)^2 / 8, before the draws, in order
    assert [c.rho for c in acc.charges] == [round_rho(eta, t, n, s) for t in range(rounds)]
    running = np.cumsum([c.rho for c in acc.charges])
    assert np.all(running <= acc.rho_total)
    assert running[-1] + round_rho(eta, rounds, n, s) > acc.rho_total   # next one: no
    assert acc.summary()["rho_spent"] == pytest.approx(running[-1], rel=1e-12)
    info = model.info()
    assert info["stop_reason"].startswith(f"budget: round {rounds + 1} would cost rho")
    assert info["neighbours"] == NEIGHBOURS and info["rho"] == acc.rho_total
    assert len(model.records_) == rounds and math.isfinite(score(model, data)["max_error"])


def test_dualquery_spends_only_what_is_left_and_max_rounds_caps_it() -> None:
    data = tiny_data()
    acc = Accountant(1.0, 1e-6, "zcdp")
    acc.charge_rho(acc.rho_total * 0.75, "earlier release")
    DualQuery(samples=20).fit(data, acc, np.random.default_rng(0))
    assert acc.rho_spent <= acc.rho_total
    left = acc.rho_total * 0.25
    assert len(acc.charges) - 1 == rounds_affordable(3.0, 20, data.n, left * (1 + 1e-12))
    capped = DualQuery(samples=20, max_rounds=3).fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                                    np.random.default_rng(0))
    assert capped.info()["rounds_run"] == 3
    assert capped.info()["stop_reason"] == "max_rounds=3 reached"


# ---------------------------------------------------------------------------- noise off

def test_with_sampling_off_the_exact_game_is_deterministic_and_its_error_falls() -> None:
    # noise off: each round best-responds to Q_t itself; eta 0.3 with 300 rounds, a budget
    # large enough for every round. Measured max error: 0.835 after 1 round (one record),
    # 0.032 after 30, 0.0043 after 300 (the largest true answer is 0.351)
    data = tiny_data()
    acc = lambda: Accountant(1e4, 1e-6, "zcdp")  # noqa: E731
    with noise_disabled():
        fits = {T: DualQuery(eta=0.3, samples=10, max_rounds=T, oracle="enumerate").fit(
            data, acc(), np.random.default_rng(T)) for T in (1, 30, 300)}
        again = DualQuery(eta=0.3, samples=10, max_rounds=30, oracle="enumerate").fit(
            data, acc(), np.random.default_rng(99))
    errors = [score(fits[T], data)["max_error"] for T in (1, 30, 300)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.01 * errors[0]
    assert again.records_.equals(fits[30].records_)          # no randomness left
    assert fits[30].info()["noise_disabled"] is True
    # the ledger is charged as with sampling on
    with noise_disabled():
        ledger = acc()
        DualQuery(eta=0.3, samples=10, max_rounds=5).fit(data, ledger, np.random.default_rng(0))
    assert [c.rho for c in ledger.charges] == [round_rho(0.3, t, data.n, 10) for t in range(5)]


# ---------------------------------------------------------------------------- outputs

def test_outputs_are_the_uniform_mixture_of_the_records() -> None:
    data = tiny_data()
    model = DualQuery(samples=25).fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                     np.random.default_rng(0))
    qs = QuerySet.build(DOMAIN, resolve_workload(DOMAIN, data.n))
    records = model.records_
    answers = model.output(QueryAnswers)
    assert answers.workload == "all_3way"
    assert np.allclose(answers.answers, qs.answers(records), rtol=0, atol=1e-15)
    table = model.output(SyntheticTable)
    assert table.records.equals(records) and table.X.shape == (len(records), 3)
    assert list(records.columns) == list(DOMAIN)


# ---------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("make,message", [
    (lambda: DualQuery(eta=0), "eta=0 must be a finite number > 0"),
    (lambda: DualQuery(eta=True), "eta=True must be a finite number > 0"),
    (lambda: DualQuery(samples=0), "samples=0 must be a whole number >= 1"),
    (lambda: DualQuery(samples=2.5), "samples=2.5 must be a whole number >= 1"),
    (lambda: DualQuery(max_rounds=0), "max_rounds=0 must be a whole number >= 1"),
    (lambda: DualQuery(oracle="gurobi"), "oracle='gurobi' is unknown; valid: mip, enumerate"),
    (lambda: DualQuery(mip_time_limit=-1), "mip_time_limit=-1 must be a finite number > 0"),
    (lambda: DualQuery(ties="first"), "ties='first' is unknown; valid: partial, random, solver"),
    (lambda: DualQuery(ties="random"), "ties='random' is not a rule of oracle 'mip'"),
    (lambda: DualQuery(oracle="enumerate", ties="solver"),
     "ties='solver' is not a rule of oracle 'enumerate'"),
])
def test_bad_hyperparameters_are_one_line_errors(make, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        make()
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_bad_workloads_ledgers_and_domains_are_refused_in_one_line() -> None:
    data = tiny_data()
    with pytest.raises(ValueError, match=r"k=5 must lie in \[1, 4\]"):
        DualQuery(workload="all_5way").check_data(data)
    with pytest.raises(TypeError, match="composes in zCDP; this ledger is 'gdp'"):
        DualQuery().fit(data, Accountant(1.0, 1e-6, "gdp"), np.random.default_rng(0))
    big = {f"x{i}": 10 for i in range(9)}                      # 1e9 cells
    frame = pd.DataFrame({a: [0, 1] for a in big})
    wide = TabularData(X=frame.to_numpy(float), y=np.zeros(2), x_bound=1.0, y_bound=1.0,
                       feature_names=tuple(big), target="x0", discrete=frame, domain=big)
    with pytest.raises(HistogramTooLarge, match="1,000,000,000 cells") as exc:
        DualQuery(oracle="enumerate").check_data(wide)
    assert "\n" not in str(exc.value)
    DualQuery().check_data(wide)                   # the MIP never enumerates the domain
