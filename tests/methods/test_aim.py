"""AIM and MST: privacy accounting, noise scales, determinism, exact inference helpers.

Every fit here uses one small 3-attribute domain so JAX compiles each model
structure once per test session (compilation, not fitting, dominates the time).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from marginal_fixtures import discrete_data

from dpbench.data.workloads import build_workload
from dpbench.methods.marginals.aim import AIMSettings, run_aim
from dpbench.methods.marginals.junction import CalibratedTree
from dpbench.methods.marginals.mst import MSTSettings, run_mst
from dpbench.privacy import Accountant, draws

DOMAIN = {"x1": 3, "x2": 4, "y": 5}
DELTA = 1e-5
FAST_AIM = AIMSettings(max_iters=100, max_model_size=1.0)
FAST_MST = MSTSettings(max_iters=100, select_iters=50)


def cks_delta_bruteforce(rho: float, eps: float) -> float:
    """delta(eps) of rho-zCDP, Canonne-Kamath-Steinke 2020 Prop. 7, minimised over a dense
    grid of Renyi orders (an upper bound on the exact infimum, written independently of
    dpbench.privacy.conversions)."""
    alphas = 1 + np.geomspace(1e-6, 1e6, 400_001)
    log_d = ((alphas - 1) * (alphas * rho - eps) + alphas * np.log1p(-1 / alphas)
             - np.log(alphas - 1))
    return float(np.exp(log_d.min()))


@pytest.fixture(scope="module")
def data():
    return discrete_data(np.random.default_rng(0), 2000, DOMAIN, "y", categorical=("x2",))


def _frame(data):
    return data.discrete[list(DOMAIN)]


class Scales:
    """The noise scales a trace recorded: Gaussian sds and exponential-mechanism epsilons."""

    def __init__(self, trace: list) -> None:
        self.sigmas = [d.scale for d in trace if d.mechanism == "gaussian"]
        self.epsilons = [d.scale for d in trace if d.mechanism == "exponential"]
        assert {d.relation for d in trace} == {"add_remove"}
        assert {d.sensitivity for d in trace if d.mechanism == "gaussian"} == {1.0}


@pytest.mark.parametrize("eps,rounds,per_attr", [(0.05, None, 16), (1.0, None, 3), (4.0, 6, 16)])
def test_aim_spends_at_most_rho_and_noise_matches_charges(data, eps, rounds, per_attr):
    acc = Accountant(eps, DELTA, "zcdp")
    settings = AIMSettings(max_iters=100, max_model_size=1.0, rounds=rounds,
                           rounds_per_attribute=per_attr)
    with draws.recording() as trace:
        model = run_aim(_frame(data), DOMAIN, build_workload("all_pairs", list(DOMAIN)), acc,
                        np.random.default_rng(1), settings)
    rec = Scales(trace)
    # the run's own ledger: total within the (eps, delta) guarantee, checked by brute force
    assert cks_delta_bruteforce(acc.rho_spent, eps) <= DELTA * (1 + 1e-6)
    # AIM uses its whole budget (the last round takes what is left)
    assert acc.rho_spent == pytest.approx(acc.rho_total, rel=1e-9)
    # every charge is the zCDP cost of the noise actually drawn:
    # Gaussian with sensitivity 1 -> 1/(2 sigma^2); exponential mechanism -> eps^2/8
    gauss = [c.rho for c in acc.charges if ":select:" not in c.label]
    sel = [c.rho for c in acc.charges if ":select:" in c.label]
    np.testing.assert_allclose(gauss, [1 / (2 * s**2) for s in rec.sigmas], rtol=1e-12)
    np.testing.assert_allclose(sel, [e**2 / 8 for e in rec.epsilons], rtol=1e-12)
    # initial scale: sigma_0 = sqrt(T / (2 * 0.9 * rho)), T = 16 d unless given (Alg. 2 l. 4)
    T = rounds or per_attr * len(DOMAIN)
    assert rec.sigmas[0] == pytest.approx(math.sqrt(T / (1.8 * acc.rho_total)), rel=1e-12)
    assert rec.epsilons[0] == pytest.approx(math.sqrt(0.8 * acc.rho_total / T), rel=1e-12)
    assert [c.label for c in model.charges] == [c.label for c in acc.charges]


@pytest.mark.parametrize("eps", [0.1, 2.0])
def test_mst_spends_at_most_rho_and_noise_matches_charges(data, eps):
    acc = Accountant(eps, DELTA, "zcdp")
    with draws.recording() as trace:
        model = run_mst(_frame(data), DOMAIN, acc, np.random.default_rng(2), FAST_MST)
    rec = Scales(trace)
    assert cks_delta_bruteforce(acc.rho_spent, eps) <= DELTA * (1 + 1e-6)
    rho, d = acc.rho_total, len(DOMAIN)
    # McKenna et al. 2021: sigma = sqrt(3 / (2 rho)); d 1-way marginals at sigma sqrt(d),
    # d - 1 tree marginals at sigma sqrt(d - 1), d - 1 selections at eps = sqrt(8 rho/3/(d-1))
    expect_s = [math.sqrt(3 * d / (2 * rho))] * d + [math.sqrt(3 * (d - 1) / (2 * rho))] * (d - 1)
    np.testing.assert_allclose(rec.sigmas, expect_s, rtol=1e-12)
    np.testing.assert_allclose(rec.epsilons, [math.sqrt(8 * rho / 3 / (d - 1))] * (d - 1),
                               rtol=1e-12)
    assert acc.rho_spent == pytest.approx(rho, rel=1e-9)
    assert len(model.info["tree"]) == d - 1


def test_mst_compression_merges_rare_levels(data):
    frame = _frame(data).copy()
    sizes = {**DOMAIN, "x2": 9}            # levels 4..8 never occur: noise-level counts
    acc = Accountant(2.0, DELTA, "zcdp")
    model = run_mst(frame, sizes, acc, np.random.default_rng(3), FAST_MST)
    assert "x2" in model.compression
    m = model.marginal(("x2",))
    assert m.shape == (9,)
    # the merged level's mass is spread uniformly over its original levels
    merged = model.compression["x2"] == model.compression["x2"].max()
    assert np.allclose(m[merged], m[merged][0])
    assert model.marginal(("x1", "x2")).sum() == pytest.approx(model.total, rel=1e-9)


def test_aim_same_seed_same_model_different_seed_different(data):
    w = build_workload("all_pairs", list(DOMAIN))

    def fit(seed):
        return run_aim(_frame(data), DOMAIN, w, Accountant(1.0, DELTA, "zcdp"),
                       np.random.default_rng(seed), FAST_AIM)

    a, b, c = fit(5), fit(5), fit(6)
    assert a.cliques == b.cliques and a.info["measured"] == b.info["measured"]
    for ta, tb in zip(a.tables, b.tables, strict=True):
        np.testing.assert_array_equal(ta, tb)
    assert not np.array_equal(a.marginal(("x1", "y")), c.marginal(("x1", "y")))


def test_aim_rejects_bad_settings():
    with pytest.raises(ValueError, match="estimator"):
        AIMSettings(estimator="gibbs")
    with pytest.raises(ValueError, match="max_model_size"):
        AIMSettings(max_model_size=0)
    with pytest.raises(ValueError, match="alpha"):
        AIMSettings(alpha=1.0)


def test_aim_rounds_must_exceed_initial_measurements(data):
    with pytest.raises(ValueError, match="rounds=3"):
        run_aim(_frame(data), DOMAIN, build_workload("all_pairs", list(DOMAIN)),
                Accountant(1.0, DELTA, "zcdp"), np.random.default_rng(0),
                AIMSettings(rounds=3))


def test_calibrated_tree_matches_brute_force_joint():
    rng = np.random.default_rng(0)
    attrs = ["a", "b", "c", "d", "e"]
    sizes = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c"), ("e",)]
    tables = [rng.normal(size=[sizes[x] for x in cl]) for cl in cliques]
    tree = CalibratedTree(sizes, attrs, cliques, tables, total=100.0)
    logp = np.zeros([sizes[a] for a in attrs])
    for cl, t in zip(cliques, tables, strict=True):
        shape = [sizes[a] if a in cl else 1 for a in attrs]
        order = [a for a in attrs if a in cl]
        logp = logp + np.transpose(t, [cl.index(a) for a in order]).reshape(shape)
    p = np.exp(logp - logp.max())
    p *= 100.0 / p.sum()
    for i, a in enumerate(attrs):
        for j in range(i + 1, len(attrs)):
            axes = tuple(k for k in range(len(attrs)) if k not in (i, j))
            np.testing.assert_allclose(tree.marginal((a, attrs[j])), p.sum(axis=axes),
                                       rtol=1e-10, atol=1e-12)


DIGEST_SCRIPT = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {tests!r})
from marginal_fixtures import discrete_data
from dpbench.methods.marginals.aim import AIMSettings, run_aim
from dpbench.methods.marginals.mst import MSTSettings, run_mst
from dpbench.data.workloads import build_workload
from dpbench.privacy import Accountant, draws
dom = {{"x1": 3, "x2": 4, "y": 5}}
data = discrete_data(np.random.default_rng(0), 2000, dom, "y", categorical=("x2",))
frame = data.discrete[list(dom)]
h = hashlib.sha256()
aim = run_aim(frame, dom, build_workload("all_pairs", list(dom)), Accountant(1.0, 1e-5, "zcdp"),
              np.random.default_rng(5), AIMSettings(max_iters=100, max_model_size=1.0))
mst = run_mst(frame, dom, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(5),
              MSTSettings(max_iters=100, select_iters=50))
for m in (aim, mst):
    h.update(repr((m.cliques, [(c.label, c.rho) for c in m.charges])).encode())
    for t in m.tables:
        h.update(np.ascontiguousarray(t).tobytes())
    h.update(m.sample(500, np.random.default_rng(1)).to_numpy().tobytes())
print(h.hexdigest())
"""


@pytest.mark.slow
def test_aim_and_mst_are_bit_identical_across_processes_and_hash_seeds():
    # Nothing may depend on set/dict hash order: two interpreters with different
    # PYTHONHASHSEED must produce byte-identical models, charges and samples.
    tests = str(Path(__file__).resolve().parents[1])
    repo = str(Path(tests).parent)
    script = DIGEST_SCRIPT.format(tests=tests)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=repo,
                              env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": repo})
             for seed in ("1", "2")]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        out.append(stdout.strip().splitlines()[-1])
    assert out[0] == out[1]


def test_compiled_programs_are_released_near_the_map_count_limit(monkeypatch):
    # Each compiled XLA program holds hundreds of memory maps; past half of
    # vm.max_map_count the caches are cleared (a worker otherwise dies in LLVM, ENOMEM).
    import jax

    from dpbench.methods.marginals import _mbi
    if _mbi.MAP_COUNT_LIMIT <= 0:
        pytest.skip("no /proc/sys/vm/max_map_count on this platform")
    jax.jit(lambda v: v * 3.0)(1.0)                 # at least one cached program
    monkeypatch.setattr(_mbi, "MAP_COUNT_SHARE", 1e-9)
    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(1))
    from dpbench import program_store
    monkeypatch.setattr(program_store, "_loaded", {"key": ("program", "tree")})
    assert _mbi.release_compiled_programs_if_needed() is True and cleared
    assert program_store._loaded == {}              # exported programs are let go too
    monkeypatch.setattr(_mbi, "MAP_COUNT_SHARE", 1.0)
    assert _mbi.release_compiled_programs_if_needed() is False
