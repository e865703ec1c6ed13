"""Speed of the query-release engine (dpbench/data/queries.py), as ratios
against reference implementations run in the same process.

Measured (median of ``--repeats`` runs after one warm-up, BLAS on one thread):
(1) all 334,128 ADULT queries (286 3-way marginals) for a 1,000-row weighted synthetic set
    (``QuerySet.rows_answers``); baseline: one weighted ``np.histogramdd`` per marginal, the
    way the query-release paper's authors answer a weighted row set (their query manager,
    through mbi's ``Dataset.datavector``);
(2) all 35 ADULT (reduced) marginals (14,955 queries) of a 336,000-cell full-domain
    histogram (``QuerySet.histogram_answers``); baseline: ``ndarray.sum`` over the other
    axes per marginal, then a transpose to the clique's order;
(3) for scale, the true answers of the 43,944 private rows (``QuerySet.answers``) on both
    workloads. Each engine result is checked against its baseline before timing.
Run: python scripts/bench_queries.py [--repeats 20]
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import timed
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from dpbench.data.queries import QuerySet, resolve_workload
from dpbench.data.query_release import load_query_data
from dpbench.runner.grid import _merged_params, load_entry, task_view


def queries(name: str) -> tuple[QuerySet, object]:
    """The paper's workload on a qr dataset yaml (default profile) and its private rows."""
    view = task_view(name, load_entry("dataset", name), "query_release")
    split = load_query_data(rng=np.random.default_rng(0), **_merged_params(view, "default"))
    dom = dict(split.train.domain)
    return QuerySet.build(dom, resolve_workload(dom, split.train.n)), split.train.discrete


def histogramdd_rows(qs: QuerySet, rows: NDArray, w: NDArray) -> NDArray:
    """Reference: one weighted np.histogramdd per marginal (the authors' route)."""
    out = []
    for ax, shape in zip(qs.axes, qs.shapes, strict=True):
        bins = [np.arange(m + 1) for m in shape]
        out.append(np.histogramdd(rows[:, list(ax)], bins, weights=w)[0].ravel())
    return np.concatenate(out) / w.sum()


def sum_axes(qs: QuerySet, hist: NDArray) -> NDArray:
    """Reference: ndarray.sum over the other axes per marginal, transposed to clique order."""
    out = []
    every = tuple(range(hist.ndim))
    for ax in qs.axes:
        marg = hist.sum(axis=tuple(a for a in every if a not in ax))
        out.append(np.transpose(marg, np.argsort(np.argsort(ax))).ravel())
    return np.concatenate(out) / hist.sum()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    full, priv = queries("qr_adult")
    small, priv_small = queries("qr_adult_reduced")
    rows = np.stack([rng.integers(0, m, 1000) for m in full.sizes], axis=1)
    w = rng.random(1000)
    hist = rng.random(small.sizes)
    assert np.allclose(full.rows_answers(rows, w), histogramdd_rows(full, rows, w))
    assert np.allclose(small.histogram_answers(hist), sum_axes(small, hist))

    with threadpool_limits(limits=1):
        base_rows = timed(lambda: histogramdd_rows(full, rows, w), args.repeats)
        ours_rows = timed(lambda: full.rows_answers(rows, w), args.repeats)
        base_hist = timed(lambda: sum_axes(small, hist), args.repeats)
        ours_hist = timed(lambda: small.histogram_answers(hist), args.repeats)
        true_full = timed(lambda: full.answers(priv), max(3, args.repeats // 4))
        true_small = timed(lambda: small.answers(priv_small), args.repeats)

    print(f"(1) ADULT, {full.n_marginals} marginals, {full.n_queries:,} queries, "
          f"1,000 weighted rows")
    print(f"    baseline np.histogramdd per marginal: {base_rows * 1e3:8.1f} ms  (= 1.00)")
    print(f"    QuerySet.rows_answers:                {ours_rows * 1e3:8.1f} ms  "
          f"({ours_rows / base_rows:.3f} x baseline)")
    print(f"(2) ADULT (reduced), {small.n_marginals} marginals, {small.n_queries:,} queries, "
          f"{hist.size:,}-cell histogram")
    print(f"    baseline ndarray.sum per marginal:    {base_hist * 1e3:8.1f} ms  (= 1.00)")
    print(f"    QuerySet.histogram_answers:           {ours_hist * 1e3:8.1f} ms  "
          f"({ours_hist / base_hist:.3f} x baseline)")
    print(f"(3) true answers of the {len(priv):,} private rows: ADULT "
          f"{true_full * 1e3:.1f} ms ({true_full / base_rows:.2f} x baseline 1), "
          f"ADULT (reduced) {true_small * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
