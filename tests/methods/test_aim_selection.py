"""AIM's selection step in bulk equals the one-by-one definition (same candidates, same scores).

- model sizes of every candidate's junction tree (model_size.py) equal mbi's
  ``hypothetical_model_size`` one by one, exactly, on random domains and clique sets
  (trees, uncovered attributes, domains too large for int64 cell counts);
- the candidate set C_t is the one the one-by-one filter gives;
- bulk scores (all candidates' marginals at once, 2- to 4-way, stacked L1 errors) equal the
  scores computed one candidate at a time from the model's explicit joint to 1e-9 on
  random models, and bit for bit given the same model marginals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from marginal_fixtures import brute_marginal, mrf_joint

from dpbench.data.workloads import (
    all_kway,
    clique_size,
    downward_closure,
    sort_cliques,
    workload_weights,
)
from dpbench.methods.marginals import _mbi
from dpbench.methods.marginals.aim import _small_candidates, candidate_scores
from dpbench.methods.marginals.model import MarginalModel
from dpbench.methods.marginals.model_size import model_sizes_mb


def _random_cliques(rng, attrs, number, max_len):
    out = []
    for _ in range(number):
        k = int(rng.integers(1, min(len(attrs), max_len) + 1))
        out.append(tuple(sorted(rng.choice(attrs, size=k, replace=False), key=attrs.index)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_bulk_model_sizes_equal_mbi_one_by_one(seed):
    rng = np.random.default_rng(seed)
    for case in range(40):
        d = int(rng.integers(1, 10))
        attrs = [f"a{i}" for i in range(d)]
        high = 6000 if case % 4 == 0 else 30          # 6000^9 cells: beyond int64
        sizes = {a: int(rng.integers(1, high)) for a in attrs}
        base = _random_cliques(rng, attrs, int(rng.integers(0, 2 * d + 1)), 3)
        if case % 2:
            base = [(a,) for a in attrs] + base      # as in AIM: every 1-way measured
        if case % 5 == 0:
            base = [tuple(attrs[i:i + 2]) for i in range(d - 1)]     # a path: a tree
        cands = downward_closure(all_kway(attrs, min(d, 3)), attrs)
        dom = _mbi.to_domain(attrs, sizes)
        ref = [_mbi.model_size_mb(dom, [*base, c]) for c in cands]
        np.testing.assert_array_equal(model_sizes_mb(attrs, sizes, base, cands), ref)


def test_candidate_filter_equals_one_by_one():
    rng = np.random.default_rng(7)
    attrs = [f"a{i}" for i in range(8)]
    sizes = {a: int(rng.integers(2, 12)) for a in attrs}
    dom = _mbi.to_domain(attrs, sizes)
    cands = downward_closure(all_kway(attrs, 3), attrs)
    measured = [(a,) for a in attrs] + _random_cliques(rng, attrs, 6, 3)
    base = sort_cliques(measured, attrs)
    free = set(downward_closure(measured, attrs))
    for limit in (0.001, 0.01, 0.05, 1.0):
        ref = [c for c in cands
               if c in free or _mbi.model_size_mb(dom, [*base, c]) <= limit]
        assert _small_candidates(dom, cands, measured, limit) == ref


def _one_by_one(p, attrs, cands, answers, weights, sizes, sigma):
    """Each candidate's score from its marginal of the explicit joint ``p``, one at a time."""
    return np.array([
        weights[c] * (np.abs(answers[c] - brute_marginal(p, attrs, c).ravel()).sum()
                      - math.sqrt(2 / math.pi) * sigma * clique_size(c, sizes))
        for c in cands])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [3, 4])
def test_bulk_scores_equal_one_by_one_scores(seed, k):
    """Bulk selection (all candidates' model marginals in one call, parts shared, stacked L1
    errors) against each candidate's score from the model's explicit joint, on random
    models with several cliques and tree components; k = 4 is the excess-risk workload."""
    rng = np.random.default_rng(100 + seed)
    attrs = [f"a{i}" for i in range(7)]
    sizes = {a: int(rng.integers(2, 6)) for a in attrs}
    cliques = sort_cliques([(a,) for a in attrs] + _random_cliques(rng, attrs, 5, 3), attrs)
    cliques = list(dict.fromkeys(cliques))
    tables = [rng.normal(scale=1.5, size=[sizes[a] for a in c]) for c in cliques]
    model = MarginalModel(tuple(attrs), sizes, "mrf", 500.0, cliques=cliques, tables=tables)
    p = mrf_joint(attrs, sizes, cliques, tables, 500.0)
    workload = all_kway(attrs, k)
    weights = workload_weights(workload, attrs)
    cands = list(weights)
    assert max(map(len, cands)) == k
    answers = {c: rng.poisson(20.0, size=clique_size(c, sizes)).astype(float) for c in cands}
    sigma = float(rng.uniform(0.5, 5.0))
    est = model.marginals(cands)
    bulk = candidate_scores(cands, answers, est, weights, sizes, sigma)
    np.testing.assert_allclose(bulk, _one_by_one(p, attrs, cands, answers, weights, sizes, sigma),
                               rtol=1e-9, atol=1e-9)
    # one query at a time through the model gives the same marginals; through marginals()
    # (what AIM takes as the chosen candidate's estimate) the same to the last bit
    for c in cands:
        np.testing.assert_allclose(model.marginal(c), est[c], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(model.marginals([c])[c], est[c])
    # streamed one at a time (AIM's rounds), the same scores to the last bit
    streamed = candidate_scores(cands, answers, model.iter_marginals(cands), weights, sizes,
                                sigma)
    np.testing.assert_array_equal(streamed, bulk)
    # given the same marginals, the stacked arithmetic is the one-by-one expression exactly
    exact = np.array([weights[c] * (np.abs(answers[c] - est[c].ravel()).sum()
                                    - math.sqrt(2 / math.pi) * sigma * clique_size(c, sizes))
                      for c in cands])
    np.testing.assert_array_equal(bulk, exact)


def test_workload_weights_equal_the_pairwise_definition():
    attrs = [f"a{i}" for i in range(9)]
    for workload in (all_kway(attrs, 2), all_kway(attrs, 4),
                     [("a0", "a1"), ("a1", "a2", "a3"), ("a0", "a1")]):       # a duplicate
        closure = downward_closure(workload, attrs)
        ref = {r: float(sum(len(frozenset(r) & frozenset(s)) for s in workload))
               for r in closure}
        got = workload_weights(workload, attrs)
        assert got == ref and list(got) == list(ref)
