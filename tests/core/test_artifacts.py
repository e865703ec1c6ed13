"""The content-addressed artifact cache and the one-fit-per-cell sharing of AIM releases."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from marginal_fixtures import discrete_data

from dpbench.artifacts import ArtifactStore, artifact_context
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.regression.aim_synth import AIMSynth
from dpbench.methods.regression.ddssp import DDSSP
from dpbench.privacy import Accountant

REPO = Path(__file__).resolve().parents[2]
DOMAIN = {"x1": 3, "x2": 4, "y": 5}
FAST = {"max_iters": 100, "max_model_size": 1.0}


@pytest.fixture(scope="module")
def data():
    return discrete_data(np.random.default_rng(0), 2000, DOMAIN, "y", categorical=("x2",))


def test_get_or_create_builds_once_and_reloads(tmp_path):
    store = ArtifactStore(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(5.0), "b": np.eye(2)}, {"note": "x", "n": 3}

    fields = {"kind": "test", "eps": 1.0}
    a1, m1, hit1 = store.get_or_create(fields, build)
    a2, m2, hit2 = ArtifactStore(tmp_path).get_or_create(fields, build)   # "after a restart"
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    np.testing.assert_array_equal(a1["a"], a2["a"])
    assert m1 == m2 and m2["artifact_key"] == store.key(fields) and m2["n"] == 3
    assert store.get_or_create({"kind": "test", "eps": 2.0}, build)[2] is False   # new key


def test_failed_build_leaves_nothing_behind(tmp_path):
    store = ArtifactStore(tmp_path)

    def boom():
        raise RuntimeError("mechanism crashed")

    with pytest.raises(RuntimeError):
        store.get_or_create({"k": 1}, boom)
    assert store.load(store.key({"k": 1})) is None
    assert not list(tmp_path.rglob("*.npz"))
    _, _, hit = store.get_or_create({"k": 1}, lambda: ({"x": np.ones(1)}, {}))
    assert hit is False


def test_concurrent_processes_build_once(tmp_path):
    # Four processes ask for the same artifact at once; the builder sleeps so they overlap.
    counter = tmp_path / "builds.txt"
    code = textwrap.dedent(f"""
        import sys, time, numpy as np
        sys.path.insert(0, {str(REPO)!r})
        from dpbench.artifacts import ArtifactStore
        def build():
            with open({str(counter)!r}, "a") as fh:
                fh.write("built\\n")
            time.sleep(1.0)
            return {{"v": np.arange(1000.0)}}, {{"who": "builder"}}
        arrays, meta, hit = ArtifactStore({str(tmp_path / "cache")!r}).get_or_create(
            {{"shared": True}}, build)
        print(float(arrays["v"].sum()), hit)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert counter.read_text().count("built") == 1
    assert sorted(o[1] for o in outs) == ["False", "True", "True", "True"]
    assert {o[0] for o in outs} == {str(float(np.arange(1000.0).sum()))}


def test_ddssp_and_aim_synth_share_one_fit_and_pay_the_same(tmp_path, data):
    with artifact_context(cell="cell-0", root=tmp_path):
        acc_d, acc_s = Accountant(1.0, 1e-5, "zcdp"), Accountant(1.0, 1e-5, "zcdp")
        dd = DDSSP(**FAST).fit(data, acc_d, np.random.default_rng(1))
        sy = AIMSynth(**FAST).fit(data, acc_s, np.random.default_rng(2))
    assert dd.info()["cache_hit"] is False and sy.info()["cache_hit"] is True
    assert dd.info()["artifact_key"] == sy.info()["artifact_key"]
    assert [(c.label, c.rho) for c in acc_d.charges] == [(c.label, c.rho) for c in acc_s.charges]
    assert acc_d.rho_spent == pytest.approx(acc_d.rho_total, rel=1e-9)
    assert len(list(tmp_path.rglob("*.npz"))) == 1


def test_release_seed_comes_from_cell_not_from_method_rng(tmp_path, data):
    # Two empty caches, same cell, different method generators: both build, same fit.
    coefs = []
    for i, root in enumerate((tmp_path / "a", tmp_path / "b")):
        with artifact_context(cell="cell-7", root=root):
            m = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"),
                                  np.random.default_rng(100 + i))
        assert m.info()["cache_hit"] is False
        coefs.append(m.coef_)
    np.testing.assert_array_equal(coefs[0], coefs[1])
    # another cell (another trial) gets another fit
    with artifact_context(cell="cell-8", root=tmp_path / "a"):
        other = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    assert not np.array_equal(other.coef_, coefs[0])


def test_without_context_the_method_rng_drives_the_release(data):
    fits = [DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(s)).coef_
            for s in (1, 1, 2)]
    np.testing.assert_array_equal(fits[0], fits[1])
    assert not np.array_equal(fits[0], fits[2])


def test_noise_free_fits_never_enter_the_cache(tmp_path, data):
    with artifact_context(cell="cell-0", root=tmp_path), noise_disabled():
        m = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    assert m.info()["artifact_key"] is None
    assert not list(tmp_path.rglob("*.npz"))


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    start = offset % len(data)
    for i in range(start, min(start + 8, len(data))):          # 8 flipped bytes
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["header", "digest", "payload start", "middle", "last byte"])
def test_a_damaged_artifact_is_deleted_rebuilt_and_rewritten(tmp_path, caplog, where):
    from dpbench import artifacts

    store = ArtifactStore(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(50.0)}, {"n": 50}

    clean, _, _ = store.get_or_create({"k": 1}, build)
    path = store.path(store.key({"k": 1}))
    head = len(artifacts._TAG)
    offset = {"header": 0, "digest": head + 4, "payload start": head + 32,
              "middle": path.stat().st_size // 2, "last byte": -1}[where]
    _flip(path, offset)
    assert store.load(store.key({"k": 1})) is None              # never used as it is
    with caplog.at_level("WARNING", logger=artifacts.__name__):
        again, meta, hit = store.get_or_create({"k": 1}, build)
    assert hit is False and len(calls) == 2 and meta["n"] == 50
    np.testing.assert_array_equal(again["a"], clean["a"])
    assert str(path) in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger=artifacts.__name__):  # rewritten good: a hit
        assert ArtifactStore(tmp_path).get_or_create({"k": 1}, build)[2] is True
    assert len(calls) == 2 and not caplog.records


def test_a_damaged_release_is_rebuilt_and_the_fit_is_the_same(tmp_path, data):
    with artifact_context(cell="cell-0", root=tmp_path):
        clean = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    (path,) = tmp_path.rglob("*.npz")
    _flip(path, path.stat().st_size // 2)
    with artifact_context(cell="cell-0", root=tmp_path):
        again = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    assert again.info()["cache_hit"] is False
    np.testing.assert_array_equal(again.coef_, clean.coef_)
    with artifact_context(cell="cell-0", root=tmp_path):
        third = DDSSP(**FAST).fit(data, Accountant(1.0, 1e-5, "zcdp"), np.random.default_rng(1))
    assert third.info()["cache_hit"] is True


def test_with_defer_a_missing_artifact_being_built_elsewhere_is_busy_not_awaited(tmp_path):
    """The lock of an artifact held by another open file (another worker building it): a
    deferring store raises ArtifactBusy at once without building; a stored artifact is
    read whoever holds the lock; once the lock is free the deferring store builds it."""
    import fcntl

    from dpbench.artifacts import ArtifactBusy

    store = ArtifactStore(tmp_path, defer=True)
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(3.0)}, {}

    lock = store.path(store.key({"k": 2})).with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    with open(lock, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)          # "another worker" builds {"k": 2}
        with pytest.raises(ArtifactBusy):
            store.get_or_create({"k": 2}, build)
        assert calls == []
        ArtifactStore(tmp_path).save(store.key({"k": 2}), {"a": np.arange(3.0)}, {})
        assert store.get_or_create({"k": 2}, build)[2] is True   # stored: read, no lock
    assert store.get_or_create({"k": 3}, build)[2] is False and calls == [1]


def test_a_deferred_trial_is_held_stores_nothing_and_runs_when_asked_again(tmp_path,
                                                                            monkeypatch):
    """run_trial(defer=True) of a DD-SSP trial whose release another process is building:
    outcome HELD, no record, no lease left; asked again once it is free: computed, ok."""
    from dpbench import artifacts
    from dpbench.runner.execute import HELD, run_trial
    from dpbench.runner.store import ResultStore
    from dpbench.workspace import compose_config, grid

    (spec,) = grid(compose_config(["experiment=linreg_adult", "profile=smoke",
                                   "methods=[ddssp]", "epsilons=[1.0]", "trials=1"]))
    store_root = tmp_path / "results" / "store"
    locked = artifacts.ArtifactStore._locked

    def busy(self, key):
        if self.defer:
            raise artifacts.ArtifactBusy("being built elsewhere")
        return locked(self, key)

    monkeypatch.setattr(artifacts.ArtifactStore, "_locked", busy)
    assert run_trial(spec, str(store_root), defer=True) == HELD
    store = ResultStore(store_root)
    assert store.get(spec.key) is None
    lease = store.claim(spec.key)                       # the deferred trial left it free
    assert lease is not None
    store.release(lease)
    monkeypatch.undo()
    assert run_trial(spec, str(store_root), defer=True) == "ok"
    assert store.get(spec.key)["status"] == "ok"
