"""k-way marginals of a fitted MRF across several junction-tree cliques, against brute force.

Every model here is small enough to enumerate its joint distribution, so each marginal the
junction tree answers (inside a clique, pairs by tree traversal, k-way by variable
elimination over a Steiner subtree, independent components by outer product) is checked
against the sum of the explicit joint, to 1e-10 relative error.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from marginal_fixtures import brute_marginal, mrf_joint

from dpbench.methods.marginals.junction import CalibratedTree
from dpbench.methods.marginals.model import MarginalModel

TOTAL = 250.0


MODELS = {
    # a chain of 5 cliques: 4-way queries at the two ends span every clique
    "chain": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")],
    # a star with 3-way cliques and a branching junction tree
    "branching": [("a", "b", "c"), ("c", "d"), ("c", "e", "f"), ("f", "g"), ("b", "h")],
    # two tree components plus an isolated attribute
    "components": [("a", "b"), ("b", "c"), ("c", "d"), ("e", "f"), ("f", "g"), ("h",)],
}


def _model(name, seed):
    rng = np.random.default_rng(seed)
    cliques = MODELS[name]
    attrs = sorted({a for c in cliques for a in c})
    sizes = {a: int(rng.integers(2, 5)) for a in attrs}
    tables = [rng.normal(scale=1.5, size=[sizes[x] for x in cl]) for cl in cliques]
    return attrs, sizes, cliques, tables


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("k", [2, 3, 4])
def test_every_kway_marginal_matches_brute_force(name, k):
    attrs, sizes, cliques, tables = _model(name, seed=k)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    assert len(tree.cliques) >= 3
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    spanning = 0
    for query in itertools.combinations(attrs, k):
        query = tuple(np.random.default_rng(len(query)).permutation(query))  # any axis order
        spanning += not any(set(query) <= set(c) for c in tree.cliques)
        np.testing.assert_allclose(tree.marginal(query), brute_marginal(p, attrs, query),
                                   rtol=1e-10, atol=1e-12)
    assert spanning > 0          # the test exercises out-of-clique marginals


@pytest.mark.parametrize("name", sorted(MODELS))
def test_all_marginals_at_once_match_brute_force(name):
    """Every 1- to 4-way query in one ``marginals`` call (parts shared across queries, the
    path AIM's selection takes) equals the explicit joint's marginal."""
    attrs, sizes, cliques, tables = _model(name, seed=21)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    rng = np.random.default_rng(0)
    queries = [tuple(rng.permutation(q)) for k in (1, 2, 3, 4)
               for q in itertools.combinations(attrs, k)]
    got = tree.marginals(queries)
    assert list(got) == queries
    for q in queries:
        np.testing.assert_allclose(got[q], brute_marginal(p, attrs, q), rtol=1e-10, atol=1e-12)
    model = MarginalModel(tuple(attrs), sizes, "mrf", TOTAL, cliques=cliques, tables=tables)
    via_model = model.marginals(queries)            # pairs by traversal, the rest as above
    for q in queries:
        np.testing.assert_allclose(via_model[q], got[q], rtol=1e-10, atol=1e-12)


def test_spanning_marginal_covers_three_or_more_cliques():
    attrs, sizes, cliques, tables = _model("chain", seed=7)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    query = ("a", "c", "f")
    comp = tree._comps[0]
    nodes, _ = tree._steiner(query, comp)
    assert len(nodes) == 5                  # a..f sit at both ends of the chain
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    np.testing.assert_allclose(tree.marginal(query), brute_marginal(p, attrs, query), rtol=1e-10)


def test_elimination_contracts_two_tables_at_a_time(monkeypatch):
    """np.einsum's greedy order caps intermediates at the largest operand and contracts
    the rest in one loop over the product of their axes (slow: most of a 4-way selection
    round on the excess-risk paper's Adult models); the elimination's cap
    (ELIMINATION_MAX_CELLS) keeps every step pairwise. The query (c, d, h) on this model
    (found by a seeded search; the capped order takes a 3-operand step there) is such a
    case, and the answer is still brute force's."""
    from dpbench.methods.marginals import junction
    cliques = [("a", "b", "f"), ("a", "d", "e"), ("e", "f", "h"), ("a", "c", "d"),
               ("b", "c", "d")]
    sizes = {"a": 4, "b": 5, "c": 5, "d": 6, "e": 4, "f": 3, "h": 6}
    attrs = sorted(sizes)
    rng = np.random.default_rng(2)
    tables = [rng.normal(scale=1.5, size=[sizes[x] for x in cl]) for cl in cliques]
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    steps = []
    einsum = np.einsum

    def spy(*args, optimize):
        steps.extend(len(s) for s in np.einsum_path(*args, optimize=optimize)[0][1:])
        return einsum(*args, optimize=optimize)

    monkeypatch.setattr(junction.np, "einsum", spy)
    query = ("c", "d", "h")
    got = tree.marginal(query)
    assert steps and max(steps) <= 2
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    np.testing.assert_allclose(got, brute_marginal(p, attrs, query), rtol=1e-10, atol=1e-12)


def test_elimination_paths_are_searched_once_and_change_no_bit(monkeypatch):
    """Each elimination's contraction order is searched once per subscripts and shapes
    (junction.elimination_path) instead of by np.einsum on every call: a second tree of the
    same structure finds every path cached, and every marginal has the bits np.einsum gives
    when it searches the order itself. The same structure with other attribute sizes takes
    other orders for the same subscripts (checked), so a key without the shapes would give
    wrong orders there, and the bits would differ."""
    from dpbench.methods.marginals import junction
    cliques = [("a", "b", "f"), ("a", "d", "e"), ("e", "f", "h"), ("a", "c", "d"),
               ("b", "c", "d")]
    small = {"a": 4, "b": 5, "c": 5, "d": 6, "e": 4, "f": 3, "h": 6}
    other = {"a": 11, "b": 9, "c": 8, "d": 7, "e": 7, "f": 11, "h": 4}   # found by a seeded search
    attrs = sorted(small)
    queries = [q for k in (3, 4) for q in itertools.combinations(attrs, k)]
    cached = junction.elimination_path
    orders: dict[str, dict] = {"small": {}, "other": {}}

    def answers(sizes, searched=False, record=None):
        tables = [np.random.default_rng(9).normal(scale=1.5, size=[sizes[x] for x in cl])
                  for cl in cliques]

        def path(subs, shapes, out):
            if record is not None:
                record[(subs, out)] = cached(subs, shapes, out)
            return ("greedy", junction.ELIMINATION_MAX_CELLS) if searched else cached(
                subs, shapes, out)

        with monkeypatch.context() as m:
            m.setattr(junction, "elimination_path", path)
            return CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL).marginals(queries)

    cached.cache_clear()
    first = answers(small, record=orders["small"])
    searches = cached.cache_info().misses
    assert searches > 0
    again = answers(small)
    assert cached.cache_info().misses == searches          # the second tree: all cached
    resized = answers(other, record=orders["other"])
    by_numpy, by_numpy_other = answers(small, searched=True), answers(other, searched=True)
    for q in queries:
        assert np.array_equal(first[q], by_numpy[q])
        assert np.array_equal(again[q], by_numpy[q])
        assert np.array_equal(resized[q], by_numpy_other[q])
    shared = orders["small"].keys() & orders["other"].keys()
    assert any(orders["small"][k] != orders["other"][k] for k in shared)


def test_large_tree_cliques_share_chained_sums(monkeypatch):
    """A tree clique of at least CHAIN_MIN_CELLS cells answers the marginals it holds by
    chains of single-attribute sums, the largest attribute first, with cached intermediate
    tables: the answers are brute force's, they reuse the cache (far fewer reads of the
    whole table than queries: 25 on the direct sums), and each has the same bits asked
    alone, among the others, or with nothing cached (a cap of one cell; AIM scores a
    candidate and computes the chosen one's marginal again)."""
    from dpbench.methods.marginals import junction
    sizes = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3, "f": 2, "g": 4}
    attrs = sorted(sizes)
    cliques = [("a", "b", "c", "d", "e"), ("d", "e", "f", "g")]   # 360 and 120 cells
    monkeypatch.setattr(junction, "CHAIN_MIN_CELLS", 300)         # the first is chained
    rng = np.random.default_rng(5)
    tables = [rng.normal(scale=1.0, size=[sizes[x] for x in cl]) for cl in cliques]
    queries = [q for k in (1, 2, 3) for q in itertools.combinations(cliques[0], k)]
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    host = tree.host(("a", "b"))
    reads = []
    full = tree.beliefs[host].values

    class Spy(np.ndarray):
        def sum(self, *args, **kwargs):
            reads.append(1)
            return np.asarray(self).sum(*args, **kwargs)

    tree.beliefs[host].values = full.view(Spy)
    together = tree.marginals(queries)
    assert len(reads) <= len(cliques[0])                # one read per first attribute dropped
    assert tree._chains
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    for q in queries:
        np.testing.assert_allclose(together[q], brute_marginal(p, attrs, q), rtol=1e-10,
                                   atol=1e-12)
    tree.beliefs[host].values = full
    fresh = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    monkeypatch.setattr(junction, "CHAIN_CACHE_CELLS", 1)        # nothing stays cached
    evicted = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    for q in queries:
        assert np.array_equal(fresh.marginal(q), together[q])
        assert np.array_equal(evicted.marginal(q), together[q])
    assert not evicted._chains


def test_zero_probability_cells_give_exact_zeros():
    attrs, sizes, cliques, tables = _model("chain", seed=3)
    tables[2] = tables[2].copy()
    tables[2][0, :] = -1000.0               # c = 0: beliefs underflow to exactly 0
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    m = tree.marginal(("a", "c", "e"))
    assert np.all(m[:, 0, :] == 0)
    np.testing.assert_allclose(m, brute_marginal(p, attrs, ("a", "c", "e")), rtol=1e-10, atol=1e-12)


def test_pairs_by_traversal_agree_with_elimination():
    attrs, sizes, cliques, tables = _model("branching", seed=11)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    pairs = tree.pairs_from("a", attrs)
    for b, m in pairs.items():
        comp = tree._comps[0]
        np.testing.assert_allclose(m, tree._eliminate(("a", b), comp), rtol=1e-10, atol=1e-12)


def test_pairs_by_traversal_visit_only_the_cliques_on_the_way(monkeypatch):
    """Asked for a few partners, the traversal carries P(a, c) only along the tree paths to
    the cliques that first hold them, and gives the same values to the last bit as when
    asked for all of them."""
    attrs, sizes, cliques, tables = _model("branching", seed=11)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    everything = tree.pairs_from("a", attrs)
    carried: list[tuple] = []
    carry = CalibratedTree._carry
    monkeypatch.setattr(CalibratedTree, "_carry",
                        lambda self, a, jp, p, c: carried.append(c) or carry(self, a, jp, p, c))
    some = tree.pairs_from("a", ["d"])           # (c, d) hangs off a's home clique
    assert set(some) == {"d"}
    assert np.array_equal(some["d"], everything["d"])
    assert [set(c) for c in carried] == [{"c", "d"}]
    carried.clear()
    assert tree.pairs_from("a", ["b", "c"]).keys() == {"b", "c"}     # all in a's home
    assert carried == []


def test_model_marginals_answer_4way_queries_on_the_original_domain():
    attrs, sizes, cliques, tables = _model("branching", seed=5)
    model = MarginalModel(tuple(attrs), sizes, "mrf", TOTAL, cliques=cliques, tables=tables)
    p = mrf_joint(attrs, sizes, cliques, tables, TOTAL)
    queries = [("a", "d", "g", "h"), ("h", "e"), ("b", "f", "d")]
    got = model.marginals(queries)
    for q in queries:
        np.testing.assert_allclose(got[q], brute_marginal(p, attrs, q), rtol=1e-10, atol=1e-12)


def test_bad_queries_are_refused_in_one_line():
    attrs, sizes, cliques, tables = _model("chain", seed=1)
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=TOTAL)
    with pytest.raises(ValueError, match="unknown attributes.*valid: a, b"):
        tree.marginal(("a", "zz"))
    with pytest.raises(ValueError, match="repeats"):
        tree.marginal(("a", "a"))


# -- workloads and AIM with k-way candidates -------------------------------------------------

def test_all_kway_workloads_and_the_max_cells_filter():
    from dpbench.data.workloads import build_workload

    attrs = ["a", "b", "c", "d", "e"]
    dom = {"a": 2, "b": 10, "c": 10, "d": 3, "e": 2}
    assert len(build_workload("all_4way", attrs)) == 5
    assert build_workload("all_3way", attrs) == build_workload("all_triples", attrs)
    kept = build_workload("all_4way", attrs, domain=dom, max_cells=500)   # drops the 600s
    assert kept == [("a", "b", "c", "e"), ("a", "b", "d", "e"), ("a", "c", "d", "e")]
    with pytest.raises(ValueError, match="every marginal .* more than max_cells=10 cells"):
        build_workload("all_4way", attrs, domain=dom, max_cells=10)
    with pytest.raises(ValueError, match=r"workload='all_kway' is unknown; valid: .*all_<k>way"):
        build_workload("all_kway", attrs)
    with pytest.raises(ValueError, match=r"k=6 must lie in \[1, 5\]"):
        build_workload("all_6way", attrs)


def test_aim_runs_a_4way_workload_within_budget():
    from marginal_fixtures import discrete_data

    from dpbench.data.workloads import build_workload
    from dpbench.methods.marginals.aim import AIMSettings, run_aim
    from dpbench.privacy import Accountant

    dom = {"x1": 3, "x2": 4, "x3": 2, "x4": 3, "y": 2}
    data = discrete_data(np.random.default_rng(0), 3000, dom, "y")
    frame = data.discrete[list(dom)]
    acc = Accountant(2.0, 1e-6, "zcdp")
    rho = acc.remaining()
    model = run_aim(frame, dom, build_workload("all_4way", list(dom)), acc,
                    np.random.default_rng(1),
                    AIMSettings(max_iters=50, max_model_size=2.0, rounds_per_attribute=4))
    assert acc.rho_spent <= rho * (1 + 1e-12)
    chosen = [c.split("|") for c in model.info["measured"]]
    assert max(len(c) for c in chosen) >= 3       # k-way candidates were selectable
    sample = model.sample(500, np.random.default_rng(2))
    assert list(sample.columns) == list(dom) and len(sample) == 500
