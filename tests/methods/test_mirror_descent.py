"""dpbench's one-oracle mirror descent against mbi's own MirrorDescent step.

OneOracleMirrorDescent (dpbench/methods/marginals/_mbi.py) carries the marginals of the
current potentials from one step to the next instead of recomputing them. It must produce
the iterates of mbi's step (same potentials, step sizes and losses) on problems where the
Armijo search both accepts and rejects steps, with one oracle call per step where mbi's
step makes two.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from marginal_fixtures import noisy_measurements

from dpbench.methods.marginals import _mbi
from dpbench.methods.marginals._mbi import OneOracleMirrorDescent

CLIQUES = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("c", "d", "e"),
           ("a", "e")]


def _problem(seed: int) -> tuple[object, object, float]:
    """(domain, loss_fn, known_total) of noisy marginals of random data (seeded)."""
    domain, measurements = noisy_measurements(seed, CLIQUES)
    loss_fn = _mbi.marginal_loss.from_linear_measurements(measurements, domain)
    return domain, loss_fn, float(_mbi.minimum_variance_unbiased_total(measurements))


def _tables(cv: object) -> list[np.ndarray]:
    return [np.asarray(cv[cl].values) for cl in cv.cliques]


@pytest.mark.parametrize("branch", ["accept", "reject"])
def test_one_step_equals_mbis_step(branch):
    """From one state, our step and mbi's give the same potentials, step size and loss (to
    1e-12, rounding), on an accepted step (mbi's initial step size) and a rejected one (the
    step size x 1e4); our carried marginals are those of the new potentials."""
    domain, loss_fn, total = _problem(0)
    ours, mbis = OneOracleMirrorDescent(), _mbi.MirrorDescent()
    state = mbis._init(domain, loss_fn, total)        # ours computes it in its first step
    if branch == "reject":
        state = state._replace(alpha=state.alpha * 1e4)
    a = jax.jit(lambda s: ours._step(s, loss_fn, total))(state)
    b = jax.jit(lambda s: mbis._step(s, loss_fn, total))(state)
    assert float(a.alpha) == float(b.alpha) == state.alpha * (1.01 if branch == "accept" else 0.5)
    assert float(a.loss) == pytest.approx(float(b.loss), rel=1e-12)
    for x, y in zip(_tables(a.potentials), _tables(b.potentials), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    fresh = ours._oracle(loss_fn.cliques, domain)(a.potentials, total)
    for x, y in zip(_tables(a.mu), _tables(fresh), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("warm", [False, True])
def test_first_step_makes_mbis_initial_state(warm):
    """Our _init leaves the marginals to the first step (one copy of belief propagation per
    compiled fit); after it the state is mbi's _init state: same potentials, step size and
    loss, marginals to 1e-12 (rounding), from zero potentials and from a warm start."""
    domain, loss_fn, total = _problem(1)
    ours, mbis = OneOracleMirrorDescent(), _mbi.MirrorDescent()
    start = None
    if warm:
        start = jax.jit(lambda lf, t: _mbi._fused_impl(ours, domain, lf, t, None, iters=30)
                        )(loss_fn, total).potentials
    placeholder = ours._init(domain, loss_fn, total, warm_start=start)
    assert np.isposinf(float(placeholder.loss))
    a = jax.jit(lambda s: ours._step(s, loss_fn, total))(placeholder)
    b = mbis._init(domain, loss_fn, total, warm_start=start)
    assert float(a.alpha) == float(b.alpha)
    assert float(a.loss) == pytest.approx(float(b.loss), rel=1e-12)
    for x, y in zip(_tables(a.potentials), _tables(b.potentials), strict=True):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(_tables(a.mu), _tables(b.mu), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_fit_carries_the_marginals_of_its_potentials():
    """The fit's marginals are the carried ones (finalize does not recompute them): equal to
    the oracle's marginals of the fitted potentials to 1e-9 counts (total ~500)."""
    domain, loss_fn, total = _problem(2)
    est = OneOracleMirrorDescent()
    fit = jax.jit(lambda lf, t: _mbi._fused_impl(est, domain, lf, t, None, iters=100)
                  )(loss_fn, total)
    fresh = est._oracle(loss_fn.cliques, domain)(fit.potentials, total)
    for x, y in zip(_tables(fit.marginals), _tables(fresh), strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_carried_marginals_stay_the_potentials_marginals(seed):
    """Along 200 steps that start with a 1e3-times too large step size (rejections, then
    acceptances), the state's marginals equal the oracle's marginals of its potentials
    after every step (1e-9 counts; the total is ~500)."""
    domain, loss_fn, total = _problem(seed)
    est = OneOracleMirrorDescent()
    oracle = est._oracle(loss_fn.cliques, domain)

    def run(loss_fn: object, total: object) -> tuple:
        state = est._init(domain, loss_fn, total)
        state = state._replace(alpha=state.alpha * 1e3)

        def step(s: object, _: object) -> tuple:
            s = est._step(s, loss_fn, total)
            fresh = oracle(s.potentials, total)
            gap = jax.numpy.stack([jax.numpy.abs(s.mu[c].values - fresh[c].values).max()
                                   for c in fresh.cliques]).max()
            return s, (s.alpha, gap)

        return jax.lax.scan(step, state, None, length=200)[1]

    alphas, gaps = (np.asarray(x) for x in jax.jit(run)(loss_fn, total))
    ratio = alphas[1:] / alphas[:-1]
    assert np.any(np.isclose(ratio, 0.5)) and np.any(np.isclose(ratio, 1.01))
    assert gaps.max() <= 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_same_optimum_as_mbis_mirror_descent(seed):
    """1,000 steps each from zero potentials reach the same loss (1e-4 relative). The two
    runs agree to rounding for the first ~200 steps; after that rounding can flip an
    Armijo decision near its threshold (in mbi's own step too, between two compilations),
    so the paths part while both converge."""
    domain, loss_fn, total = _problem(seed)
    final = []
    for est in (OneOracleMirrorDescent(), _mbi.MirrorDescent()):
        def run(loss_fn: object, total: object, est: object = est) -> object:
            state = est._init(domain, loss_fn, total)
            state = jax.lax.scan(lambda s, _: (est._step(s, loss_fn, total), None), state,
                                 None, length=1000)[0]
            return loss_fn(est._oracle(loss_fn.cliques, domain)(state.potentials, total))

        final.append(float(jax.jit(run)(loss_fn, total)))
    assert final[0] == pytest.approx(final[1], rel=1e-4)


def test_one_oracle_call_per_step_where_mbis_step_makes_two():
    """Counted at trace time: the oracle is called once in our step, twice in mbi's."""
    domain, loss_fn, total = _problem(0)
    calls = []

    def counting(potentials, total=1.0, *, constraints=()):
        calls.append(1)
        return _mbi.mbi.marginal_oracles.message_passing_hugin(potentials, total,
                                                           constraints=constraints)

    counted = {}
    for name, est in (("ours", OneOracleMirrorDescent(marginal_oracle=counting)),
                      ("mbi", _mbi.MirrorDescent(marginal_oracle=counting))):
        state = est._init(domain, loss_fn, total)
        calls.clear()
        jax.make_jaxpr(lambda s, est=est: est._step(s, loss_fn, total))(state)
        counted[name] = len(calls)
    assert counted == {"ours": 1, "mbi": 2}


def test_fixed_step_size_is_refused():
    with pytest.raises(ValueError, match="stepsize=0.1"):
        OneOracleMirrorDescent(stepsize=0.1)


def _random_potentials(domain: object, cliques: list, seed: int) -> object:
    rng = np.random.default_rng(seed)
    tables = {c: _mbi.mbi.Factor(domain.project(c), rng.normal(0, 3, domain.project(c).shape))
              for c in cliques}
    return _mbi.mbi.CliqueVector(domain, list(cliques), tables)


@pytest.mark.parametrize("seed", [0, 1])
def test_warm_start_expanded_outside_the_program_is_mbis(seed):
    """expand_potentials (numpy, before a fit) gives mbi's _extract_potentials bit for bit:
    from None, from potentials on a sub-structure (several old cliques added into one new
    one), from a model, and onto the warm start's own cliques."""
    domain, _ = noisy_measurements(seed, CLIQUES)
    new = [("a", "b"), ("b", "c", "d"), ("c", "d", "e"), ("a", "e")]
    for old_cliques in ([("a",), ("b",), ("a", "b"), ("c", "d"), ("e",)], new):
        old = _random_potentials(domain, old_cliques, seed)
        for start in (None, old, _mbi.mbi.MarkovRandomField(potentials=old, marginals=old,
                                                            total=1.0)):
            ours = _mbi.expand_potentials(domain, new, start)
            mbis = _mbi._extract_potentials(start, domain, new)
            assert list(ours.cliques) == list(mbis.cliques)
            for x, y in zip(_tables(ours), _tables(mbis), strict=True):
                np.testing.assert_array_equal(x, y)


def test_refitting_a_structure_reuses_its_program(tmp_path, monkeypatch):
    """A fit's program depends on its own structure, not its warm start's: fitting B warm
    from A, then B warm from B, exports one program for B (two in all, not three), and the
    fit warm from A equals the one whose program expands A itself (mbi's _init; a short fit,
    so the fast-compile options), bit for bit."""
    a_cliques = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b")]
    domain, ma = noisy_measurements(3, a_cliques)
    _, extra = noisy_measurements(4, [("c", "d", "e"), ("b", "c")])
    mb = ma + extra
    monkeypatch.setenv(_mbi.compile_cache.ROOT_ENV, str(tmp_path))     # a fresh store
    monkeypatch.setattr(_mbi.program_store, "_loaded", {})
    exported = _mbi.program_store.stats["exported"]
    fit_a = _mbi.estimate_mrf(domain, ma, iters=20)
    fit_b = _mbi.estimate_mrf(domain, mb, iters=20, warm_start=fit_a.potentials)
    again = _mbi.estimate_mrf(domain, mb, iters=20, warm_start=fit_b.potentials)
    assert _mbi.program_store.stats["exported"] - exported == 2
    assert not np.array_equal(_tables(again.potentials)[0], _tables(fit_b.potentials)[0])

    loss_fn = _mbi.marginal_loss.from_linear_measurements(mb, domain)
    total = _mbi.minimum_variance_unbiased_total(mb)
    fit = functools.partial(_mbi._fused_impl, OneOracleMirrorDescent(), domain, iters=20)
    inside = jax.jit(fit, compiler_options=_mbi.FAST_COMPILE)(loss_fn, total, fit_a.potentials)
    for x, y in zip(_tables(fit_b.potentials), _tables(inside.potentials), strict=True):
        np.testing.assert_array_equal(x, y)
