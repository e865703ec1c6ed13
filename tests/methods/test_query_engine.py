"""The query-release engine (dpbench/data/queries.py), the seeded workload
sample, and the query_release task: flat layout and its index, the three answer backends
against each other and against independently counted marginals, the refusal of a
full-domain histogram too large for memory, and the task's metrics."""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from dpbench.data.base import Split, TabularData
from dpbench.data.encoding import build_encoding
from dpbench.data.marginals import data_marginal
from dpbench.data.queries import (
    HistogramTooLarge,
    QuerySet,
    codes_matrix,
    data_histogram,
    resolve_workload,
    uniform_histogram,
    workload_key,
)
from dpbench.data.query_release import load_query_data
from dpbench.data.workloads import all_kway, build_workload, sample_cliques
from dpbench.methods.outputs import QueryAnswers
from dpbench.runner.grid import _merged_params, load_entry, task_view
from dpbench.tasks import TASKS

TINY = {"a": 2, "b": 3, "c": 4, "d": 2}


def tiny_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({a: r.integers(0, m, n) for a, m in TINY.items()})


def qr_split(name: str) -> Split:
    view = task_view(name, load_entry("dataset", name), "query_release")
    return load_query_data(rng=np.random.default_rng(0), **_merged_params(view, "default"))


def test_layout_is_marginal_by_marginal_in_c_order_with_an_inverse() -> None:
    cliques = all_kway(list(TINY), 2)
    qs = QuerySet.build(TINY, cliques)
    # the authors' query manager: per marginal, itertools.product over the clique's levels
    expected = [(c, cell) for c in cliques
                for cell in itertools.product(*(range(TINY[a]) for a in c))]
    assert qs.n_queries == len(expected) == sum(math.prod(TINY[a] for a in c) for c in cliques)
    for p, (c, cell) in enumerate(expected):
        assert int(qs.position(c, cell)) == p
    marg, cells = qs.locate(np.arange(qs.n_queries))
    assert [(qs.cliques[m], cell) for m, cell in zip(marg, cells, strict=True)] == expected
    # vectorised: many cells of one marginal at once
    m = qs.marginal_index(("b", "c"))
    grid = np.array(list(itertools.product(range(3), range(4))))
    assert np.array_equal(qs.position(m, grid), np.arange(qs.span(m).start, qs.span(m).stop))
    with pytest.raises(ValueError, match="not in the workload"):
        qs.marginal_index(("c", "b"))
    with pytest.raises(ValueError, match=r"must lie in \[0, "):
        qs.locate(qs.n_queries)


def test_true_answers_are_the_normalised_marginal_counts() -> None:
    frame = tiny_frame()
    cliques = [("a", "b", "c"), ("d", "b"), ("c",)]          # any attribute order
    qs = QuerySet.build(TINY, cliques)
    ans = qs.answers(frame)
    codes = {a: frame[a].to_numpy() for a in TINY}
    for m, c in enumerate(cliques):
        assert np.array_equal(qs.split(ans)[m], data_marginal(codes, c, TINY) / len(frame))
        # one cell counted by hand
        cell = tuple(int(frame[a].iloc[0]) for a in c)
        hand = np.mean(np.all([frame[a].to_numpy() == v for a, v in zip(c, cell, strict=True)],
                              axis=0))
        assert ans[qs.position(m, cell)] == pytest.approx(hand)
    assert np.allclose([ans[qs.span(m)].sum() for m in range(qs.n_marginals)], 1.0)


def test_histogram_and_weighted_rows_answer_like_the_data() -> None:
    frame = tiny_frame(300, seed=1)
    qs = QuerySet.build(TINY, [("a", "b", "c"), ("d", "b"), ("c", "a", "d")])
    truth = qs.answers(frame)
    rows = codes_matrix(frame, TINY)
    hist = data_histogram(frame, TINY)
    assert hist.shape == tuple(TINY.values()) and hist.sum() == pytest.approx(1.0)
    assert np.allclose(qs.histogram_answers(hist), truth, atol=1e-15)
    assert np.allclose(qs.histogram_answers(hist.ravel() * 7.0), truth)   # unnormalised, flat
    assert np.allclose(qs.rows_answers(rows, np.ones(len(rows))), truth, atol=1e-15)
    # distinct rows weighted by their multiplicity = the data itself
    uniq, counts = np.unique(rows, axis=0, return_counts=True)
    assert np.allclose(qs.rows_answers(uniq, counts), truth)
    # the full domain as rows, weighted by the histogram = the histogram's answers
    every = np.array(list(itertools.product(*(range(m) for m in TINY.values()))))
    assert np.allclose(qs.rows_answers(every, hist.ravel()), truth)
    # a query's histogram cells are the slice histogram_index names
    for p in (0, 5, qs.n_queries - 1):
        assert hist[qs.histogram_index(p)].sum() == pytest.approx(truth[p])
    # the one query per marginal that each row satisfies
    pos = qs.row_positions(rows)
    assert np.allclose(np.bincount(pos.ravel(), minlength=qs.n_queries) / len(rows), truth)


def test_bad_rows_weights_and_histograms_are_refused_in_one_line() -> None:
    qs = QuerySet.build(TINY, [("a", "b")])
    rows = codes_matrix(tiny_frame(10), TINY)
    for bad, match in [((rows, -np.ones(10)), "finite and >= 0"),
                       ((rows, np.zeros(10)), "sum to 0"), ((rows, np.ones(3)), "one per row"),
                       ((rows[:, :2], None), r"expected \(n, 4\) codes")]:
        with pytest.raises(ValueError, match=match):
            qs.rows_answers(*bad)
    with pytest.raises(ValueError, match=r"codes outside the domain on \('a', 'b'\) "
                                         r"\(levels \(2, 3\)\)"):
        qs.rows_answers(rows + 5)
    with pytest.raises(ValueError, match="histogram has 5 cells; the domain has 48"):
        qs.histogram_answers(np.ones(5))
    with pytest.raises(ValueError, match=r"attribute 'a' has codes outside \[0, 2\)"):
        qs.answers(tiny_frame(10).assign(a=2))
    with pytest.raises(ValueError, match=r"clique attributes \['z'\] are not in"):
        QuerySet.build(TINY, [("a", "z")])


def test_adult_reduced_histogram_and_synthetic_rows_match_the_private_answers() -> None:
    split = qr_split("qr_adult_reduced")
    dom, priv = dict(split.train.domain), split.train.discrete
    qs = QuerySet.build(dom, resolve_workload(dom, split.train.n))
    truth = qs.answers(priv)
    hist = data_histogram(priv, dom)
    assert hist.size == 336_000
    assert np.allclose(qs.histogram_answers(hist), truth, atol=1e-12)
    rows = codes_matrix(priv, dom)
    assert np.allclose(qs.rows_answers(rows, np.ones(len(rows))), truth, atol=1e-12)
    # MWEM / PEP's starting point: every query answered by its share of the domain
    uni = qs.histogram_answers(uniform_histogram(dom))
    assert np.allclose(uni, np.concatenate([np.full(math.prod(s), 1 / math.prod(s))
                                            for s in qs.shapes]))


def test_full_adult_histogram_is_refused_with_its_size_before_allocating() -> None:
    split = qr_split("qr_adult")
    dom = dict(split.train.domain)
    tracemalloc.start()
    try:
        with pytest.raises(HistogramTooLarge) as exc:
            uniform_histogram(dom)
        with pytest.raises(HistogramTooLarge):
            data_histogram(split.train.discrete, dom)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(exc.value)
    assert "\n" not in msg
    assert "13 attributes has 731,566,080,000 cells (5.9 TB as float64)" in msg
    assert peak < 50e6, peak          # refused before anything domain-sized was built
    # a cap is a parameter: the 336,000-cell reduced domain passes, a smaller cap refuses
    red = {a: dom[a] for a in ("sex", "income>50K", "race", "marital-status", "occupation",
                               "education-num", "age_10")}
    assert uniform_histogram(red).size == 336_000
    with pytest.raises(HistogramTooLarge, match="336,000 cells"):
        uniform_histogram(red, max_cells=100_000)


def test_sampled_workload_is_the_authors_draw_and_the_default_is_unchanged() -> None:
    attrs = [f"x{i}" for i in range(8)]
    triples = all_kway(attrs, 3)                                   # 56, itertools order
    picks = np.random.RandomState(0).choice(56, 10, replace=False)
    assert sample_cliques(triples, 10) == [triples[i] for i in picks]
    assert sample_cliques(triples, 56) == triples == sample_cliques(triples, 100)
    sampled = build_workload("all_3way", attrs, number=10, seed=0)
    assert sorted(sampled) == sorted(triples[i] for i in picks) and sampled == sorted(sampled)
    assert build_workload("all_3way", attrs, number=10, seed=1) != sampled
    assert build_workload("all_3way", attrs) == triples            # no number: every triple
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        build_workload("all_3way", attrs, number=0)
    with pytest.raises(ValueError, match=r"k=9 must lie in \[1, 8\]"):
        build_workload("all_9way", attrs)
    dom = {a: i + 2 for i, a in enumerate(attrs)}
    # "n" = the number of data rows as the cell cap, as the authors filter ADULT* and LOANS
    assert resolve_workload(dom, 60, max_cells="n") == build_workload("all_3way", attrs,
                                                                      domain=dom, max_cells=60)
    with pytest.raises(ValueError, match="must be an integer, 'n'"):
        resolve_workload(dom, 60, max_cells="N")


def test_query_release_task_scores_answer_vectors() -> None:
    task = TASKS["query_release"]
    frame = tiny_frame(100)
    split = Split(train=_data(frame), test=_data(frame.iloc[:0]))
    params = {"workload": "all_2way"}
    qs = QuerySet.build(TINY, build_workload("all_2way", list(TINY)))
    truth = qs.answers(frame)
    exact = task.score(QueryAnswers(truth, workload_key("all_2way")), split, params)
    assert exact["max_error"] == 0.0 and exact["n_queries"] == qs.n_queries == 44
    off = truth.copy()
    off[[0, 7]] += [0.3, -0.1]
    got = task.score(QueryAnswers(off, "all_2way"), split, params)
    assert got["max_error"] == pytest.approx(0.3)
    assert got["mean_error"] == pytest.approx(0.4 / 44)
    assert got["rmse"] == pytest.approx(math.sqrt(0.1 / 44))
    with pytest.raises(ValueError, match="answers are for workload 'all_3way'; the task scores"):
        task.score(QueryAnswers(truth, "all_3way"), split, params)
    with pytest.raises(ValueError, match=r"\(5,\) answers for a workload of 44 queries"):
        task.score(QueryAnswers(truth[:5], "all_2way"), split, params)
    with pytest.raises(ValueError, match=r"k=5 must lie in \[1, 4\]"):
        task.check_split(split, {"workload": "all_5way"})
    assert workload_key("all_3way", 64, 0, "n") == "all_3way[max_cells=n,number=64,seed=0]"


def _data(frame: pd.DataFrame) -> TabularData:
    enc = build_encoding(TINY, "a", (), None, "raw")
    X, y = enc.encode(frame.reset_index(drop=True))
    return TabularData(X=X, y=y, x_bound=1.0, y_bound=1.0, feature_names=enc.columns,
                       target="a", discrete=frame.reset_index(drop=True), domain=TINY,
                       encoding=enc)


def test_shared_reductions_equal_one_einsum_per_marginal() -> None:
    # histogram_answers sums axes out once for several marginals (a reduction tree): on a
    # random 5-attribute histogram, cliques of sizes 1-4 in any attribute order (a repeated
    # clique too), it equals one einsum over the whole domain per marginal to 1e-15
    dom = {"a": 2, "b": 3, "c": 4, "d": 5, "e": 3}
    cliques = [("e", "a", "c"), ("b",), ("d", "c"), ("a", "b", "c", "d"), ("c", "e"),
               ("e", "a", "c"), ("b", "e", "d")]
    qs = QuerySet.build(dom, cliques)
    h = np.random.default_rng(5).random(tuple(dom.values()))
    names = list(dom)
    direct = np.concatenate([np.einsum(h, list(range(5)), [names.index(a) for a in c]).ravel()
                             for c in cliques]) / h.sum()
    assert np.max(np.abs(qs.histogram_answers(h) - direct)) < 1e-15
