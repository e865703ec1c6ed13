"""The shared size-class estimation program (dpbench/methods/marginals/flat.py) against mbi.

flat.py runs HUGIN with the junction tree as data (index arrays) so that every model of a
size class uses one compiled program. It must give mbi's HUGIN marginals on any tree
(forests, stars, chains, single cliques), the iterates of OneOracleMirrorDescent (same
potentials up to rounding until a line-search decision flips on rounding), mbi's warm
start, and one compiled program for two structures of one size class.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from marginal_fixtures import noisy_measurements

from dpbench.methods.marginals import _mbi, flat
from dpbench.methods.marginals._mbi import ORACLES, OneOracleMirrorDescent
from dpbench.methods.marginals.aim import AIMSettings

STRUCTURES = {
    "cycle": [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d", "e"), ("a", "e")],
    "forest": [("a", "b"), ("c", "d"), ("e",)],
    "star": [("a", "b"), ("a", "c"), ("a", "d"), ("a", "e")],
    "chain": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")],
    "one clique": [("a", "b", "c", "d", "e")],
    "one-way": [("a",), ("b",), ("c",), ("d",), ("e",)],
}


def _random_potentials(domain: object, cliques: list, seed: int, scale: float) -> object:
    rng = np.random.default_rng(seed)
    zeros = _mbi.mbi.CliqueVector.zeros(domain, cliques)
    return _mbi.mbi.CliqueVector(domain, cliques, {
        cl: _mbi.mbi.Factor(zeros[cl].domain,
                            jnp.asarray(rng.normal(0, scale, zeros[cl].domain.shape)))
        for cl in cliques})


def _flat_theta(pl: flat.Plan, pot: object) -> np.ndarray:
    theta = np.zeros(pl.size)
    for c, off in zip(pl.cliques, pl.offsets, strict=True):
        v = np.asarray(pot[c].values).ravel()
        theta[off: off + v.size] = v
    return theta


@pytest.mark.parametrize("name", list(STRUCTURES))
@pytest.mark.parametrize(("seed", "scale"), [(0, 0.5), (1, 5.0), (2, 30.0)])
def test_marginals_equal_hugins(name, seed, scale):
    """On random log-potentials N(0, scale^2) (seeded), the flat oracle's marginals of a
    total of 1000 equal mbi's message_passing_hugin's to 1e-9 counts, on every structure."""
    cliques = STRUCTURES[name]
    domain, measurements = noisy_measurements(seed, cliques)
    loss_fn = _mbi.marginal_loss.from_linear_measurements(measurements, domain)
    pot = _random_potentials(domain, list(loss_fn.cliques), seed, scale)
    pl = flat.plan(domain, measurements, loss_fn.cliques)
    arrays = {k: jnp.asarray(v) for k, v in pl.arrays.items()}
    mu = np.asarray(flat.oracle(jnp.asarray(_flat_theta(pl, pot)), 1000.0, arrays))
    ref = ORACLES["hugin"](pot, 1000.0)
    for c, shape, off in zip(pl.cliques, pl.shapes, pl.offsets, strict=True):
        got = mu[off: off + int(np.prod(shape))].reshape(shape)
        np.testing.assert_allclose(got, np.asarray(ref[c].values), rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["cycle", "forest", "star"])
@pytest.mark.parametrize("warm", [False, True])
def test_fit_follows_one_oracle_mirror_descent(name, warm):
    """50 steps from a cold start, or from a warm start over fewer cliques (mbi's
    _extract_potentials), give mbi's potentials to 1e-8 and marginals to 1e-8 counts: the
    same iterates up to rounding (seeded measurements, n = 500)."""
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), *STRUCTURES[name]]
    domain, measurements = noisy_measurements(3, cliques)
    start = None
    if warm:
        start = _mbi.estimate_mrf(domain, measurements[:6], iters=20).potentials
    ours = flat.estimate(domain, measurements, 50, start)
    theirs = _mbi._estimate(OneOracleMirrorDescent(), domain, measurements, 50, start)
    for c in theirs.potentials.cliques:
        np.testing.assert_allclose(np.asarray(ours.potentials[c].values),
                                   np.asarray(theirs.potentials[c].values), rtol=0, atol=1e-8)
        np.testing.assert_allclose(np.asarray(ours.marginals[c].values),
                                   np.asarray(theirs.marginals[c].values), rtol=0, atol=1e-8)
    assert float(ours.total) == pytest.approx(float(theirs.total), rel=1e-15)


@pytest.mark.parametrize("seed", [4, 5])
def test_same_optimum_as_mbi(seed):
    """After 2,000 steps (long enough for rounding to flip some line-search decisions) the
    loss of our fit and of mbi's program agree to 1e-4 relative (seeded)."""
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), *STRUCTURES["cycle"]]
    domain, measurements = noisy_measurements(seed, cliques)
    loss_fn = _mbi.marginal_loss.from_linear_measurements(measurements, domain)
    ours = flat.estimate(domain, measurements, 2000)
    theirs = _mbi._estimate(OneOracleMirrorDescent(), domain, measurements, 2000, None)
    assert float(loss_fn(ours.marginals)) == pytest.approx(float(loss_fn(theirs.marginals)),
                                                           rel=1e-4)


def test_one_program_serves_two_structures_of_a_size_class():
    """Two different clique sets of one size class run one compiled program: the second
    fit neither exports nor compiles (the program store's and jax's counts)."""
    a = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "e"), ("b", "c")]
    b = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "c"), ("b", "e")]
    (dom, ma), (_, mb) = noisy_measurements(6, a), noisy_measurements(7, b)
    pa = flat.plan(dom, ma, _mbi.marginal_loss.from_linear_measurements(ma, dom).cliques)
    pb = flat.plan(dom, mb, _mbi.marginal_loss.from_linear_measurements(mb, dom).cliques)
    assert pa.shape_class == pb.shape_class
    assert pa.cliques != pb.cliques
    flat.estimate(dom, ma, 7)
    before = dict(_mbi.program_store.stats)
    fits = flat.stats["fits"]
    flat.estimate(dom, mb, 7)
    assert flat.stats["fits"] == fits + 1
    assert _mbi.program_store.stats == before


def test_estimate_mrf_takes_the_shared_program_below_the_threshold_only():
    """flat.estimate_mrf routes hugin and guarded fits of models up to shared_max_cells cells
    to the shared program, larger models, semistable and shared_max_cells=0 to mbi's program
    per structure."""
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b")]
    domain, measurements = noisy_measurements(8, cliques)
    cells = _mbi.model_size_mb(domain, cliques) * 2**20 / 8
    for kwargs, used in [({"shared_max_cells": int(cells)}, 1),
                         ({"shared_max_cells": int(cells) - 1}, 0),
                         ({"shared_max_cells": int(cells), "oracle": "semistable"}, 0),
                         ({"shared_max_cells": int(cells), "oracle": "guarded"}, 1),
                         ({"shared_max_cells": 0}, 0), ({}, 1)]:
        fits = flat.stats["fits"]
        flat.estimate_mrf(domain, measurements, iters=5, **kwargs)
        assert flat.stats["fits"] - fits == used, kwargs


def test_negative_threshold_is_refused():
    with pytest.raises(ValueError, match="shared_max_cells=-1 must be >= 0"):
        AIMSettings(shared_max_cells=-1)


def test_other_queries_keep_mbis_program():
    """A measurement that is not of a marginal itself (here mbi's WeightedQuery) is refused
    by flat.py in one line, and flat.estimate_mrf fits such a model with mbi's program."""
    domain, measurements = noisy_measurements(9, [("a",), ("a", "b")])
    m = measurements[1]
    weighted = _mbi.LinearMeasurement(m.noisy_measurement, m.clique, m.stddev,
                                      query=_mbi.marginal_loss.WeightedQuery(np.ones(6)))
    with pytest.raises(ValueError, match="identity queries only"):
        flat.estimate(domain, [measurements[0], weighted], 5)
    fits = flat.stats["fits"]
    flat.estimate_mrf(domain, [measurements[0], weighted], iters=5, shared_max_cells=10**6)
    assert flat.stats["fits"] == fits


def test_program_keeps_the_seed_and_gets_its_own_artifact(tmp_path):
    """In one cell, DD-SSP with the shared program (default) and with mbi's program per
    structure (shared_max_cells=0) draws the same noise (the program is not part of the
    release's seed), so the coefficients agree to 1e-6 (the fits differ by rounding), pays
    the same charges, and each is its own artifact (one never answers the other's request)."""
    from marginal_fixtures import discrete_data

    from dpbench.artifacts import artifact_context
    from dpbench.methods.regression.ddssp import DDSSP
    from dpbench.privacy import Accountant

    data = discrete_data(np.random.default_rng(0), 2000, {"x1": 3, "x2": 4, "y": 5}, "y",
                         categorical=("x2",))
    fast = {"max_iters": 100, "max_model_size": 1.0}
    fits, accs = {}, {}
    with artifact_context(cell="cell-0", root=tmp_path):
        for cells in (flat.SHARED_MAX_CELLS, 0):
            accs[cells] = Accountant(1.0, 1e-5, "zcdp")
            before = flat.stats["fits"]
            fits[cells] = DDSSP(**fast, shared_max_cells=cells).fit(
                data, accs[cells], np.random.default_rng(1))
            assert (flat.stats["fits"] > before) == (cells > 0)
    shared, per_structure = fits[flat.SHARED_MAX_CELLS].info(), fits[0].info()
    assert not shared["cache_hit"] and not per_structure["cache_hit"]
    assert shared["artifact_key"] != per_structure["artifact_key"]
    np.testing.assert_allclose(fits[0].coef_, fits[flat.SHARED_MAX_CELLS].coef_, atol=1e-6)
    assert ([(c.label, c.rho) for c in accs[0].charges]
            == [(c.label, c.rho) for c in accs[flat.SHARED_MAX_CELLS].charges])
