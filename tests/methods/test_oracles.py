"""The marginal oracles the mrf estimator can use, and the fallback to hugin.

``semistable`` (mbi's message_passing_fast) contracts exp(potential - max) with einsums
instead of log-space messages: the same marginals up to rounding where nothing underflows,
but exp underflows to 0 where the factors of a clique disagree by more than ~745 in log
space, and a belief that is 0 everywhere normalises to NaN. estimate_mrf then refits with
hugin; these tests build such a case by hand.
"""

from __future__ import annotations

import re

import jax.numpy as jnp
import numpy as np
import pytest
from marginal_fixtures import MD_ATTRS, MD_SIZES, discrete_data, noisy_measurements

from dpbench.artifacts import artifact_context
from dpbench.methods.marginals import _mbi, settings
from dpbench.methods.marginals._mbi import ORACLES, OneOracleMirrorDescent
from dpbench.methods.marginals.aim import AIMSettings
from dpbench.methods.regression.ddssp import DDSSP
from dpbench.privacy import Accountant

CLIQUES = [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d", "e"), ("a", "e")]   # a cycle


def test_oracle_names_are_the_oracles() -> None:
    """settings.py names the oracles without mbi (to import light): _mbi's, in its order."""
    assert tuple(ORACLES) == settings.ORACLES
    assert set(settings.EXACT_ORACLES) <= set(ORACLES)


def _clique_vector(domain: object, tables: dict) -> object:
    """An mbi CliqueVector of log-potential ``tables`` (clique -> array in clique order)."""
    zeros = _mbi.mbi.CliqueVector.zeros(domain, list(tables))
    return _mbi.mbi.CliqueVector(domain, list(tables), {
        cl: _mbi.mbi.Factor(zeros[cl].domain, jnp.asarray(t)) for cl, t in tables.items()})


def _potentials(seed: int, scale: float) -> object:
    """Random log-potentials N(0, scale^2) on CLIQUES (seeded)."""
    rng = np.random.default_rng(seed)
    return _clique_vector(_mbi.to_domain(MD_ATTRS, MD_SIZES), {
        cl: rng.normal(0, scale, [MD_SIZES[a] for a in cl]) for cl in CLIQUES})


def _assert_hugins(oracle: str, pot: object, total: float = 1000.0) -> None:
    """``oracle``'s marginals of ``pot`` are hugin's to 1e-9 counts."""
    hugin = ORACLES["hugin"](pot, total)
    got = ORACLES[oracle](pot, total)
    for cl in pot.cliques:
        np.testing.assert_allclose(np.asarray(got[cl].values), np.asarray(hugin[cl].values),
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize(("seed", "scale"), [(0, 0.5), (1, 5.0), (2, 50.0)])
def test_semistable_marginals_equal_hugins(seed, scale):
    """On random potentials with spreads up to ~150 in log space (scale 50, three sigma),
    both oracles give the same marginals of a total of 1000 to 1e-9 counts (seeded)."""
    _assert_hugins("semistable", _potentials(seed, scale))


@pytest.mark.parametrize(("seed", "scale"), [(0, 0.5), (2, 50.0), (3, 500.0), (4, 2000.0)])
def test_guarded_marginals_equal_hugins(seed, scale):
    """guarded gives hugin's marginals (total 1000) to 1e-9 counts on random potentials,
    including spreads (scale 500 and 2000, seeded) where semistable's are NaN in a clique."""
    pot = _potentials(seed, scale)
    hugin = ORACLES["hugin"](pot, 1000.0)
    guarded = ORACLES["guarded"](pot, 1000.0)
    for cl in CLIQUES:
        np.testing.assert_allclose(np.asarray(guarded[cl].values),
                                   np.asarray(hugin[cl].values), rtol=0, atol=1e-9)
    if scale >= 500:      # the guard mattered: semistable alone fails on these potentials
        semi = ORACLES["semistable"](pot, 1000.0)
        assert not all(np.isfinite(np.asarray(semi[cl].values)).all() for cl in CLIQUES)


def test_guarded_is_semistable_where_nothing_underflows():
    """Where no message underflows, guarded takes semistable's branch in every message:
    the same arithmetic, so bit-identical marginals (the guard costs no accuracy there and
    the fast path is the one that runs)."""
    pot = _potentials(1, 5.0)
    semi = ORACLES["semistable"](pot, 1000.0)
    guarded = ORACLES["guarded"](pot, 1000.0)
    for cl in CLIQUES:
        np.testing.assert_array_equal(np.asarray(guarded[cl].values),
                                      np.asarray(semi[cl].values))


def _underflowing() -> tuple[object, list]:
    """Potentials on which semistable's beliefs are 0 everywhere (NaN once normalised):
    in the clique {a, b, c}, f_bc puts -1000 on c = 0 and f_ac puts -1000 on c = 1 (both
    binary), so every term of the sum over c underflows after the per-factor maxima are
    subtracted; hugin's logsumexp gets log 2 - 1000. Plus noisy-free measurements of the
    three pairs, for a fit."""
    domain = _mbi.to_domain(("a", "b", "c"), {"a": 2, "b": 2, "c": 2})
    pot = _clique_vector(domain, {("a", "b"): np.zeros((2, 2)),
                                  ("b", "c"): np.array([[-1000.0, 0.0], [-1000.0, 0.0]]),
                                  ("a", "c"): np.array([[0.0, -1000.0], [0.0, -1000.0]])})
    measurements = [_mbi.measurement(np.full(4, 25.0), cl, 1.0) for cl in pot.cliques]
    return pot, measurements


def test_the_underflow_case_is_real():
    """The hand-built case: semistable gives NaN, hugin finite marginals (so the fallback
    test below exercises the fallback, not a no-op)."""
    pot, _ = _underflowing()
    semi = ORACLES["semistable"](pot, 100.0)
    hugin = ORACLES["hugin"](pot, 100.0)
    assert np.isnan(np.asarray(semi[("a", "b")].values)).all()
    assert np.isfinite(np.asarray(hugin[("a", "b")].values)).all()


def test_guarded_answers_the_underflow_case_without_a_fallback(monkeypatch):
    """On the hand-built case the guard takes HUGIN's arithmetic for the underflowing
    messages: hugin's marginals (1e-9), and a fit (every fit counts as long, so the tables
    oracle's program, guarded's messages) that needs no refit (no fallback)."""
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    pot, measurements = _underflowing()
    guarded = ORACLES["guarded"](pot, 100.0)
    hugin = ORACLES["hugin"](pot, 100.0)
    for cl in pot.cliques:
        np.testing.assert_allclose(np.asarray(guarded[cl].values),
                                   np.asarray(hugin[cl].values), rtol=0, atol=1e-9)
    before = _mbi.FALLBACKS["guarded"]
    fit = _mbi.estimate_mrf(pot.domain, measurements, iters=20, warm_start=pot,
                            oracle="guarded")
    assert _mbi.FALLBACKS["guarded"] == before and _mbi._finite(fit)


def test_semistable_can_be_finite_and_wrong_where_guarded_is_exact():
    """Why guarded, not semistable plus a finiteness check: in the clique {a, b, c} the
    belief's cell (a, b) = (0, 0) holds nearly all the mass (log 2 - 1000, against -2000 for
    (0, 1) and (1, 0)), but its two factors peak at different c, so semistable's sum
    underflows to 0 there while the other cells do not: every marginal is finite, and (a, b)
    is wrong by the whole total. guarded gives hugin's marginals."""
    domain = _mbi.to_domain(("a", "b", "c"), {"a": 2, "b": 2, "c": 2})
    pot = _clique_vector(domain, {("a", "b"): np.zeros((2, 2)),
                                  ("a", "c"): np.array([[0.0, -1000.0], [-2000.0, -2000.0]]),
                                  ("b", "c"): np.array([[-1000.0, 0.0], [-2000.0, -2000.0]])})
    hugin = ORACLES["hugin"](pot, 100.0)
    semi = ORACLES["semistable"](pot, 100.0)
    guarded = ORACLES["guarded"](pot, 100.0)
    assert all(np.isfinite(np.asarray(semi[cl].values)).all() for cl in pot.cliques)
    np.testing.assert_allclose(np.asarray(hugin[("a", "b")].values), [[100, 0], [0, 0]],
                               atol=1e-9)
    assert np.asarray(semi[("a", "b")].values)[0, 0] == 0.0
    for cl in pot.cliques:
        np.testing.assert_allclose(np.asarray(guarded[cl].values),
                                   np.asarray(hugin[cl].values), rtol=0, atol=1e-9)


@pytest.mark.parametrize(("seed", "scale"), [(0, 0.5), (2, 50.0), (3, 500.0), (4, 2000.0)])
def test_tables_marginals_equal_hugins(seed, scale):
    """tables (guarded's messages; each small tree clique's belief built once as a table,
    exp'd against its maximum and summed onto its measured cliques) gives hugin's marginals of a
    total of 1000 to 1e-9 counts on random potentials with spreads up to ~12,000 in log
    space (scale 2000, three sigma; seeded)."""
    _assert_hugins("tables", _potentials(seed, scale))


@pytest.mark.parametrize(("table_max_cells", "cover_max_cells"), [(0, 0), (0, 10**6), (30, 12)])
def test_tables_reads_a_large_tree_clique_off_smaller_marginals(monkeypatch, table_max_cells,
                                                                 cover_max_cells):
    """A tree clique above TABLE_MAX_CELLS is not built as a table: its measured cliques are
    read off guarded contractions onto sets of at most COVER_MAX_CELLS cells. Each measured
    clique alone (0, 0), one set for all of them (0, 1e6), and the larger tree cliques
    covered by sets of <= 12 cells while the smaller are built (30, 12): the marginals are
    hugin's to 1e-9 counts (seeded; scale 500, where semistable is wrong by the whole
    total, so guarded's fallback is taken)."""
    monkeypatch.setattr(_mbi, "TABLE_MAX_CELLS", table_max_cells)
    monkeypatch.setattr(_mbi, "COVER_MAX_CELLS", cover_max_cells)
    _assert_hugins("tables", _potentials(3, 500.0))


def test_belief_tables_cover_each_measured_clique_once(monkeypatch):
    """In a tree clique over all five attributes (240 cells, above a TABLE_MAX_CELLS of 100)
    with every pair measured, the sets of at most 24 cells hold each pair exactly once, in
    the tree clique's attribute order; with a TABLE_MAX_CELLS of 240 it is one table."""
    import itertools
    domain = _mbi.to_domain(MD_ATTRS, MD_SIZES)
    pairs = list(itertools.combinations(MD_ATTRS, 2))
    monkeypatch.setattr(_mbi, "COVER_MAX_CELLS", 24)
    monkeypatch.setattr(_mbi, "TABLE_MAX_CELLS", 100)
    tables = _mbi.belief_tables(domain, MD_ATTRS, pairs)
    assert sorted(cl for _, members in tables for cl in members) == sorted(pairs)
    for attrs, members in tables:
        assert domain.size(attrs) <= 24
        assert list(attrs) == [a for a in MD_ATTRS if a in attrs]
        assert all(set(cl) <= set(attrs) for cl in members)
    assert len(tables) < len(pairs)
    monkeypatch.setattr(_mbi, "TABLE_MAX_CELLS", 240)
    assert _mbi.belief_tables(domain, MD_ATTRS, pairs) == [(MD_ATTRS, pairs)]


@pytest.mark.parametrize("case", ["nan", "finite_and_wrong"])
def test_tables_is_exact_where_semistable_fails(case):
    """On both hand-built underflow cases (semistable NaN, and semistable finite but wrong
    by the whole total) tables gives hugin's marginals to 1e-9 counts."""
    if case == "nan":
        pot, _ = _underflowing()
    else:
        domain = _mbi.to_domain(("a", "b", "c"), {"a": 2, "b": 2, "c": 2})
        pot = _clique_vector(domain, {
            ("a", "b"): np.zeros((2, 2)),
            ("a", "c"): np.array([[0.0, -1000.0], [-2000.0, -2000.0]]),
            ("b", "c"): np.array([[-1000.0, 0.0], [-2000.0, -2000.0]])})
    _assert_hugins("tables", pot, 100.0)


def test_project_many_gives_each_projection():
    """project_many reads many marginals off one table by summing shared attributes out
    once: on a random table over five attributes, every subset of up to three attributes
    (25 targets, in their own attribute order, some reversed) and the whole table equal
    Factor.project's to 1e-12 relative (another summation order only; seeded)."""
    import itertools
    domain = _mbi.to_domain(MD_ATTRS, MD_SIZES)
    rng = np.random.default_rng(5)
    table = _mbi.mbi.Factor(domain, jnp.asarray(rng.random(domain.shape)))
    targets = [c[::-1] if k % 3 == 0 else c for k, c in enumerate(
        c for r in (1, 2, 3) for c in itertools.combinations(MD_ATTRS, r))]
    targets.append(tuple(MD_ATTRS))
    got = _mbi.project_many(table, targets)
    assert set(got) == set(targets)
    for t in targets:
        assert got[t].domain.attributes == t
        np.testing.assert_allclose(np.asarray(got[t].values),
                                   np.asarray(table.project(t).values), rtol=1e-12)


def test_non_finite_fit_is_redone_with_hugin():
    """estimate_mrf with semistable, warm-started on the underflowing potentials, returns
    exactly hugin's fit and counts one fallback; with hugin it counts none."""
    pot, measurements = _underflowing()
    domain = pot.domain
    before = _mbi.FALLBACKS["semistable"]
    semi = _mbi.estimate_mrf(domain, measurements, iters=20, warm_start=pot,
                             oracle="semistable")
    assert _mbi.FALLBACKS["semistable"] == before + 1
    hugin = _mbi.estimate_mrf(domain, measurements, iters=20, warm_start=pot)
    assert _mbi.FALLBACKS["semistable"] == before + 1
    assert _mbi._finite(hugin)
    for cl in hugin.marginals.cliques:
        np.testing.assert_array_equal(np.asarray(semi.marginals[cl].values),
                                      np.asarray(hugin.marginals[cl].values))


def test_semistable_fit_reaches_hugins_optimum(monkeypatch):
    """300 steps of mirror descent on noisy marginals of 500 random records (seeded): the
    oracles round differently, so Armijo decisions may differ near convergence, but the
    fitted marginals agree to 1e-4 of the total (~500). Every fit counts as long, so the
    default (guarded) runs the tables oracle's program (a short one would take hugin's)."""
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    domain, measurements = noisy_measurements(3, [(a,) for a in MD_ATTRS] + CLIQUES)
    fits = {o: _mbi.estimate_mrf(domain, measurements, iters=300, oracle=o) for o in ORACLES}
    for cl in fits["hugin"].marginals.cliques:
        for o in ("semistable", "guarded", "tables"):
            np.testing.assert_allclose(np.asarray(fits[o].marginals[cl].values),
                                       np.asarray(fits["hugin"].marginals[cl].values),
                                       rtol=0, atol=1e-4 * 500)


def test_a_short_guarded_fit_takes_hugins_program(monkeypatch):
    """The default's longer-fit program (tables) traces and compiles slower than hugin's
    (1.05-1.45x on Dutch's captured models of 0.05-0.53 MB, docs/speed.md, 2026-11-28): a
    fit below FAST_COMPILE_MAX_WORK (cells x iterations) runs hugin's program, so it is
    hugin's fit exactly; a longer one is not."""
    domain, measurements = noisy_measurements(3, [(a,) for a in MD_ATTRS] + CLIQUES)
    hugin = _mbi.estimate_mrf(domain, measurements, iters=50)
    short = _mbi.estimate_mrf(domain, measurements, iters=50, oracle="guarded")
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    long = _mbi.estimate_mrf(domain, measurements, iters=50, oracle="guarded")
    cl = hugin.marginals.cliques[-1]
    np.testing.assert_array_equal(np.asarray(short.marginals[cl].values),
                                  np.asarray(hugin.marginals[cl].values))
    assert not np.array_equal(np.asarray(long.marginals[cl].values),
                              np.asarray(hugin.marginals[cl].values))


def test_each_fit_is_compiled_with_the_options_of_its_length(monkeypatch):
    """Under the default oracle (guarded), short fits (cells x iterations <=
    FAST_COMPILE_MAX_WORK) take hugin's program and longer ones the tables oracle's, both
    with the fast-compile options, the longest (rank-weighted cells x iterations >
    LONG_FIT_MIN_WORK) with the level-1 options; long hugin fits XLA's defaults
    (docs/speed.md: XLA's level-1 options for long fits made a later process 30% faster and
    the linreg_adult grid 23% slower)."""
    from dpbench import program_store
    seen = []
    call = program_store.call

    def spy(fn, args, **kw):
        oracle = re.search(r"oracle='(\w+)'", kw["static"]).group(1)
        seen.append((oracle, kw.get("compiler_options")))
        return call(fn, args, **kw)

    monkeypatch.setattr(program_store, "call", spy)
    domain, measurements = noisy_measurements(4, [(a,) for a in MD_ATTRS] + CLIQUES)
    _mbi.estimate_mrf(domain, measurements, iters=20, oracle="guarded")
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    _mbi.estimate_mrf(domain, measurements, iters=20, oracle="guarded")
    _mbi.estimate_mrf(domain, measurements, iters=20)
    work = _mbi.ranked_cells(domain, list(dict.fromkeys(m.clique for m in measurements))) * 20
    monkeypatch.setattr(_mbi, "LONG_FIT_MIN_WORK", work - 1)
    _mbi.estimate_mrf(domain, measurements, iters=20, oracle="guarded")
    monkeypatch.setattr(_mbi, "LONG_FIT_MIN_WORK", work)
    _mbi.estimate_mrf(domain, measurements, iters=20, oracle="guarded")
    assert seen == [("hugin", _mbi.FAST_COMPILE), ("tables", _mbi.FAST_COMPILE),
                    ("hugin", None), ("tables", _mbi.LONG_FIT), ("tables", _mbi.FAST_COMPILE)]


def test_ranked_cells_weights_each_maximal_clique_by_its_attributes():
    """On a chain a-b, b-c the junction tree's maximal cliques are the two pairs: 2 x (2 x 3)
    + 2 x (3 x 4) cells, whatever the order the cliques come in."""
    domain = _mbi.to_domain(("a", "b", "c"), {"a": 2, "b": 3, "c": 4})
    assert _mbi.ranked_cells(domain, [("a", "b"), ("b", "c")]) == 2 * 6 + 2 * 12
    assert _mbi.ranked_cells(domain, [("b", "c"), ("a", "b"), ("b",)]) == 36
    assert _mbi.ranked_cells(domain, [("a", "b", "c")]) == 3 * 24


def test_unknown_oracle_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="oracle='bp'; valid: hugin, semistable, guarded"):
        OneOracleMirrorDescent(oracle="bp")
    with pytest.raises(ValueError, match="oracle='bp'; valid: hugin, semistable, guarded"):
        AIMSettings(oracle="bp")
    with pytest.raises(ValueError, match="applies to estimator='mrf' only"):
        AIMSettings(oracle="semistable", estimator="mixture")
    with pytest.raises(ValueError, match="oracle='hugin' applies to estimator='mrf' only"):
        AIMSettings(oracle="hugin", estimator="mixture")
    assert AIMSettings(estimator="mixture").oracle == "guarded"      # the default: no error


def test_the_oracle_is_named_in_the_estimators_repr():
    """The program store keys a fit by the estimator's repr: it must name the oracle and be
    free of memory addresses (a function would put one there, a new key every process)."""
    r = repr(OneOracleMirrorDescent(oracle="semistable"))
    assert "oracle='semistable'" in r and "0x" not in r


def test_oracle_keeps_the_seed_and_gets_its_own_artifact(tmp_path):
    """In one cell, DD-SSP with either oracle draws the same noise (the oracle is not part of
    the release's seed), so the coefficients agree to 1e-6 (the fits differ by rounding
    only: 3e-16 measured; another cell's seed moves them by 0.04), pays the same charges, and
    is stored as its own artifact (a semistable fit never answers a hugin request)."""
    data = discrete_data(np.random.default_rng(0), 2000, {"x1": 3, "x2": 4, "y": 5}, "y",
                         categorical=("x2",))
    fast = {"max_iters": 100, "max_model_size": 1.0}
    fits, accs = {}, {}
    with artifact_context(cell="cell-0", root=tmp_path):
        for oracle in ORACLES:
            accs[oracle] = Accountant(1.0, 1e-5, "zcdp")
            fits[oracle] = DDSSP(**fast, oracle=oracle).fit(data, accs[oracle],
                                                            np.random.default_rng(1))
    with artifact_context(cell="cell-1", root=tmp_path):
        other = DDSSP(**fast).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    info = {o: f.info() for o, f in fits.items()}
    assert not info["hugin"]["cache_hit"] and not info["semistable"]["cache_hit"]
    assert info["hugin"]["artifact_key"] != info["semistable"]["artifact_key"]
    assert info["semistable"]["oracle_fallbacks"] == 0
    np.testing.assert_allclose(fits["semistable"].coef_, fits["hugin"].coef_, atol=1e-6)
    assert np.abs(other.coef_ - fits["hugin"].coef_).max() > 1e-3
    assert ([(c.label, c.rho) for c in accs["hugin"].charges]
            == [(c.label, c.rho) for c in accs["semistable"].charges])


def test_a_longest_fit_is_the_fast_compile_fit_to_rounding(monkeypatch):
    """The longest fits run the tables oracle's program compiled with LONG_FIT, the others
    with FAST_COMPILE: float64 both ways, fused and ordered differently. On noisy marginals
    of 500 records (seeded): after 100 steps the two fits' marginals agree to rounding
    (1e-9 of the total ~500; measured 5.7e-14); later one side's Armijo test can accept a
    step the other rejects, and the paths part while both descend (measured 0.017 after
    300 steps) and meet again near the optimum: after 1,000 they agree within the oracles'
    tolerance (1e-4 of the total, as test_semistable_fit_reaches_hugins_optimum; measured
    5.3e-4; 2.8e-5 after 3,000)."""
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    domain, measurements = noisy_measurements(3, [(a,) for a in MD_ATTRS] + CLIQUES)
    for iters, tolerance in ((100, 1e-9), (1000, 1e-4)):
        fits = {}
        for name, least in (("fast", float("inf")), ("long", 0)):
            monkeypatch.setattr(_mbi, "LONG_FIT_MIN_WORK", least)
            fits[name] = _mbi.estimate_mrf(domain, measurements, iters=iters,
                                           oracle="guarded")
        for cl in fits["fast"].marginals.cliques:
            np.testing.assert_allclose(np.asarray(fits["long"].marginals[cl].values),
                                       np.asarray(fits["fast"].marginals[cl].values),
                                       rtol=0, atol=tolerance * 500)


def test_checked_tables_are_guardeds_where_every_contraction_is_exact(monkeypatch):
    """message_passing_tables(checked=True) runs semistable's contraction for every message
    and belief set, without guarded's per-message fallback: where nothing underflows these
    are guarded's marginals to the last bit (the branch guarded takes; seeded, scale 5; the
    call makes contractions, counted, so the comparison is not of two built tables)."""
    pot = _potentials(1, 5.0)
    tables = ORACLES["tables"](pot, 1000.0)
    contractions = []
    semistable = _mbi._semistable
    monkeypatch.setattr(_mbi, "_semistable",
                        lambda f, d: (contractions.append(d), semistable(f, d))[1])
    checked = _mbi.message_passing_tables(pot, 1000.0, checked=True)
    assert contractions
    for cl in CLIQUES:
        np.testing.assert_array_equal(np.asarray(checked[cl].values),
                                      np.asarray(tables[cl].values))


@pytest.mark.parametrize("case", ["nan", "finite_and_wrong"])
def test_checked_tables_are_nan_where_a_contraction_is_not_exact(monkeypatch, case):
    """On both underflow cases (semistable NaN, and semistable finite but wrong by the whole
    total) the one tree clique is built as a table (no contraction: the checked marginals
    are hugin's, 1e-9 counts); read off contractions instead (TABLE_MAX_CELLS and
    COVER_MAX_CELLS 0), every checked marginal is NaN where guarded's are finite: an
    inexact contraction is never returned as a number."""
    pot, _ = _underflowing()
    if case == "finite_and_wrong":
        pot = _clique_vector(pot.domain, {
            ("a", "b"): np.zeros((2, 2)),
            ("a", "c"): np.array([[0.0, -1000.0], [-2000.0, -2000.0]]),
            ("b", "c"): np.array([[-1000.0, 0.0], [-2000.0, -2000.0]])})
    hugin = ORACLES["hugin"](pot, 100.0)
    checked = _mbi.message_passing_tables(pot, 100.0, checked=True)
    for cl in pot.cliques:
        np.testing.assert_allclose(np.asarray(checked[cl].values),
                                   np.asarray(hugin[cl].values), rtol=0, atol=1e-9)
    monkeypatch.setattr(_mbi, "TABLE_MAX_CELLS", 0)
    monkeypatch.setattr(_mbi, "COVER_MAX_CELLS", 0)
    checked = _mbi.message_passing_tables(pot, 100.0, checked=True)
    tables = ORACLES["tables"](pot, 100.0)
    for cl in pot.cliques:
        assert np.isnan(np.asarray(checked[cl].values)).all()
        np.testing.assert_allclose(np.asarray(tables[cl].values),
                                   np.asarray(hugin[cl].values), rtol=0, atol=1e-9)


def test_a_checked_step_keeps_a_nan_to_the_end(monkeypatch):
    """A checked estimator takes the step whose loss is not finite (an inexact contraction
    made it NaN), so the NaN reaches the fit and _estimate redoes it; unchecked, the Armijo
    test refuses that step and the fit would go on from an unflagged state."""
    domain, measurements = noisy_measurements(3, CLIQUES)
    loss_fn = _mbi.marginal_loss.from_linear_measurements(measurements, domain)
    pot = _mbi.expand_potentials(domain, loss_fn.cliques, None)
    mu = ORACLES["hugin"](pot, 500.0)
    state = _mbi.MirrorDescentState(mu, pot, 1e-3, loss_fn(mu))

    def nan_oracle(potentials, total, constraints=(), checked=False):
        return potentials * jnp.nan                   # an oracle that met an inexact sum
    monkeypatch.setattr(_mbi, "message_passing_tables", nan_oracle)      # checked's
    monkeypatch.setitem(_mbi.ORACLES, "tables", nan_oracle)              # unchecked's
    for checked in (True, False):
        est = OneOracleMirrorDescent(oracle="tables", checked=checked)
        new = est._step(state, loss_fn, 500.0)
        nan = [np.isnan(np.asarray(new.mu[cl].values)).all() for cl in loss_fn.cliques]
        assert all(nan) if checked else not any(nan)
    with pytest.raises(ValueError, match="checked=True applies to oracle='tables'"):
        OneOracleMirrorDescent(oracle="guarded", checked=True)


def test_a_long_fit_that_meets_an_inexact_contraction_is_redone_guarded(monkeypatch):
    """Every fit counts as long (LONG_FIT, checked contractions first) and reads its
    marginals off contractions: warm-started on the underflowing potentials the checked fit
    is NaN, so it is redone with the guarded contractions (one fallback counted) and equals,
    bit for bit, the fit with the checked run switched off (LONG_CHECKED). On a fit where
    everything is exact (noisy marginals of 500 records, 300 steps, seeded) nothing is
    redone and the marginals are the guarded program's to 1e-9 relative (bit for bit here,
    2026-11-28; the two programs may round differently under another XLA, which fuses
    across messages without guarded's conds)."""
    monkeypatch.setattr(_mbi, "FAST_COMPILE_MAX_WORK", 0)
    monkeypatch.setattr(_mbi, "LONG_FIT_MIN_WORK", 0)
    monkeypatch.setattr(_mbi, "TABLE_MAX_CELLS", 0)          # marginals off contractions
    monkeypatch.setattr(_mbi, "COVER_MAX_CELLS", 0)
    pot, measurements = _underflowing()
    before = _mbi.FALLBACKS["guarded"]
    redone = _mbi.estimate_mrf(pot.domain, measurements, iters=20, warm_start=pot,
                               oracle="guarded")
    assert _mbi.FALLBACKS["guarded"] == before + 1 and _mbi._finite(redone)
    monkeypatch.setattr(_mbi, "LONG_CHECKED", False)
    plain = _mbi.estimate_mrf(pot.domain, measurements, iters=20, warm_start=pot,
                              oracle="guarded")
    assert _mbi.FALLBACKS["guarded"] == before + 1
    for cl in plain.marginals.cliques:
        np.testing.assert_array_equal(np.asarray(redone.marginals[cl].values),
                                      np.asarray(plain.marginals[cl].values))
    domain, measurements = noisy_measurements(3, [(a,) for a in MD_ATTRS] + CLIQUES)
    guarded = _mbi.estimate_mrf(domain, measurements, iters=300, oracle="guarded")
    monkeypatch.setattr(_mbi, "LONG_CHECKED", True)
    checked = _mbi.estimate_mrf(domain, measurements, iters=300, oracle="guarded")
    assert _mbi.FALLBACKS["guarded"] == before + 1
    for cl in guarded.marginals.cliques:
        np.testing.assert_allclose(np.asarray(checked.marginals[cl].values),
                                   np.asarray(guarded.marginals[cl].values), rtol=1e-9)
