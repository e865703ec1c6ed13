"""JAX's persistent compilation cache (dpbench/compile_cache.py) and the store of exported
programs (dpbench/program_store.py): shared, and result-neutral.

A small AIM fit runs in fresh interpreters sharing one cache directory: the first
compiles, exports and fills both, the second must compile nothing and trace nothing
(every program is loaded; counted from JAX's monitoring events and the store's counts, not
timed), a third with the caches switched off must compile again, and a fourth after every
stored program was damaged must export again. All must produce byte-identical models,
charges and samples.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpbench import compile_cache

REPO = Path(__file__).resolve().parents[2]

FIT_SCRIPT = """
import hashlib, json, sys
import numpy as np
from jax import monitoring
sys.path.insert(0, {tests!r})
events = {{"backend": 0, "hits": 0, "traces": 0}}
def on_duration(name, _dur, **_):
    if name == "/jax/core/compile/backend_compile_duration":   # a compile or a cache load
        events["backend"] += 1
    if name == "/jax/core/compile/jaxpr_trace_duration":
        events["traces"] += 1
def on_event(name, **_):
    if name == "/jax/compilation_cache/cache_hits":
        events["hits"] += 1
monitoring.register_event_duration_secs_listener(on_duration)
monitoring.register_event_listener(on_event)
from marginal_fixtures import discrete_data
from dpbench.methods.marginals.aim import AIMSettings, run_aim
from dpbench.data.workloads import build_workload
from dpbench.privacy import Accountant
from dpbench import program_store
dom = {{"x1": 3, "x2": 4, "x3": 2, "y": 5}}
data = discrete_data(np.random.default_rng(0), 1500, dom, "y", categorical=("x2",))
frame = data.discrete[list(dom)]
m = run_aim(frame, dom, build_workload("all_pairs", list(dom)), Accountant(1.0, 1e-5, "zcdp"),
            np.random.default_rng(3), AIMSettings(max_iters=60, rounds=8, max_model_size=1.0))
h = hashlib.sha256(repr((m.cliques, [(c.label, c.rho) for c in m.charges])).encode())
for t in m.tables:
    h.update(np.ascontiguousarray(t).tobytes())
h.update(m.sample(300, np.random.default_rng(1)).to_numpy().tobytes())
compiles = events["backend"] - events["hits"]
print(json.dumps({{"compiles": compiles, "hits": events["hits"], "traces": events["traces"],
                  **program_store.stats, "digest": h.hexdigest()}}))
"""


def _fit(cache_root: Path, switch: str, **extra_env: str) -> dict[str, object]:
    script = FIT_SCRIPT.format(tests=str(REPO / "tests"))
    env = {**os.environ, "PYTHONPATH": str(REPO), compile_cache.ROOT_ENV: str(cache_root),
           compile_cache.SWITCH_ENV: switch, **extra_env}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_second_process_compiles_nothing_and_results_are_bit_identical(tmp_path):
    first = _fit(tmp_path, "on")
    assert first["compiles"] > 0
    assert any((tmp_path / "jax").iterdir())                  # programs were written
    assert first["exported"] > 0 and first["loaded"] == 0
    stored = sorted((tmp_path / "jax-export").iterdir())
    assert len(stored) == first["exported"]
    second = _fit(tmp_path, "on")
    assert second["compiles"] == 0, second                    # every program was loaded
    assert second["hits"] >= first["compiles"]
    # nothing traced again: one trace per program (the call of the loaded program) instead
    # of the two of the first process (the function itself, then the call)
    assert second["exported"] == 0 and second["loaded"] == first["exported"], second
    assert second["traces"] == first["traces"] - first["exported"], (first, second)
    off = _fit(tmp_path / "unused", "off")
    assert off["compiles"] > 0 and off["hits"] == 0
    assert off["exported"] == first["exported"] and off["loaded"] == 0
    assert not (tmp_path / "unused").exists()
    for path in stored:                                       # damaged: exported again
        path.write_bytes(b"not a program")
    damaged = _fit(tmp_path, "on")
    assert damaged["exported"] == first["exported"] and damaged["loaded"] == 0, damaged
    assert first["digest"] == second["digest"] == off["digest"] == damaged["digest"]


def _bytes(folder: Path) -> list[int]:
    return [f.stat().st_size for f in folder.iterdir() if not f.name.startswith(".")]


@pytest.mark.slow
def test_pruning_keeps_the_cache_under_its_cap_and_changes_no_result(tmp_path, monkeypatch):
    free = _fit(tmp_path, "on", **{compile_cache.MAX_MB_ENV: "unlimited"})
    compiled = _bytes(tmp_path / "jax")
    traced = _bytes(tmp_path / "jax-export")
    # a cap a third of what the fit stored: both stores must give up programs
    cap = (sum(compiled) + sum(traced)) / 3
    monkeypatch.setenv(compile_cache.ROOT_ENV, str(tmp_path))
    monkeypatch.setenv(compile_cache.SWITCH_ENV, "on")
    monkeypatch.setenv(compile_cache.MAX_MB_ENV, str(cap / 2**20))
    assert compile_cache.prune_if_grown() > 0
    kept_compiled = _bytes(tmp_path / "jax")
    kept_traced = _bytes(tmp_path / "jax-export")
    assert sum(kept_compiled) <= compile_cache.SHARES["compiled"] * cap
    assert sum(kept_traced) <= compile_cache.SHARES["traced"] * cap
    assert len(kept_compiled) < len(compiled)
    assert compile_cache.prune_if_grown() == 0                # nothing added since: no scan
    again = _fit(tmp_path, "on", **{compile_cache.MAX_MB_ENV: "unlimited"})
    assert again["compiles"] > 0                              # what was pruned is compiled,
    assert again["digest"] == free["digest"]                  # with the same result


def test_a_finished_trial_prunes_the_cache(tmp_path, monkeypatch):
    from dpbench.runner import execute

    calls: list[int] = []
    monkeypatch.setattr(compile_cache, "use_root", lambda root: None)
    monkeypatch.setattr(compile_cache, "prune_if_grown", lambda: calls.append(1) or 0)
    monkeypatch.setattr(execute, "execute", lambda spec, trace_memory=False: {
        "key": spec.key, "status": "ok"})
    monkeypatch.setattr(execute.ResultStore, "put", lambda self, record: None)
    execute.run_trial(_any_spec(), str(tmp_path / "results" / "store"))
    assert calls == [1]


@pytest.mark.parametrize(("raw", "expected"), [("", compile_cache.DEFAULT_MAX_MB * 2**20),
                                               ("512", 512 * 2**20), ("0.5", 2**19),
                                               ("unlimited", None), (" Unlimited ", None)])
def test_the_cap_is_read_from_the_environment(monkeypatch, raw, expected):
    monkeypatch.setenv(compile_cache.MAX_MB_ENV, raw)
    assert compile_cache.max_bytes() == expected
    shares = compile_cache.share_bytes("compiled"), compile_cache.share_bytes("traced")
    if expected is None:
        assert shares == (-1, -1)
    else:
        assert abs(sum(shares) - expected) <= 2 and shares[0] > shares[1]


@pytest.mark.parametrize("raw", ["0", "-3", "abc", "nan", "inf", "1e400"])
def test_a_bad_cap_is_one_line_naming_the_value_and_the_choices(monkeypatch, raw):
    monkeypatch.setenv(compile_cache.MAX_MB_ENV, raw)
    with pytest.raises(ValueError) as info:
        compile_cache.max_bytes()
    text = str(info.value)
    assert "\n" not in text and repr(raw) in text and "unlimited" in text


def test_a_bad_cap_stops_the_command_before_any_work(tmp_path, monkeypatch, capsys):
    from dpbench import entry
    monkeypatch.setenv(compile_cache.MAX_MB_ENV, "lots")
    results = tmp_path / "results"
    code = entry.main(["run", "experiment=linreg_adult", "profile=smoke",
                       f"results_dir={results}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "'lots'" in err, err
    assert not results.exists()                               # nothing started, nothing written


def test_prune_drops_the_least_recently_used_first(tmp_path):
    for i, name in enumerate(["a", "b", "c", "d"]):          # a least recently used
        (tmp_path / name).write_bytes(b"z" * 100)
        os.utime(tmp_path / name, ns=(10**9 * (i + 1),) * 2)
    os.utime(tmp_path / "a", ns=(10**10, 10**9))              # ... but a was read last
    (tmp_path / ".tmp-x").write_bytes(b"z" * 1000)            # another process's write
    assert compile_cache.prune(tmp_path, -1) == 0             # no cap: nothing goes
    assert compile_cache.prune(tmp_path, 250) == 2            # b and c go
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-x", "a", "d"]
    assert compile_cache.prune(tmp_path, 250) == 0


def _scaled_sine(x):
    import jax.numpy as jnp
    return jnp.sin(x) * 2.0


def test_a_traced_program_read_again_is_kept_over_an_older_one(tmp_path, monkeypatch):
    import jax.numpy as jnp
    import numpy as np

    from dpbench import program_store
    monkeypatch.setenv(compile_cache.ROOT_ENV, str(tmp_path))
    monkeypatch.setenv(compile_cache.SWITCH_ENV, "on")
    folder = tmp_path / "jax-export"

    def run(n: int) -> str:
        before = {p.name for p in folder.iterdir()} if folder.exists() else set()
        x = jnp.arange(float(n))
        out = program_store.call(_scaled_sine, (x,), static="cap-test")
        np.testing.assert_array_equal(np.asarray(out), np.asarray(_scaled_sine(x)))
        new = {p.name for p in folder.iterdir()} - before
        return new.pop() if new else ""

    keys = {n: run(n) for n in (2, 3)}
    os.utime(folder / keys[2], ns=(10**9, 10**9))             # 2 the older of the two
    os.utime(folder / keys[3], ns=(2 * 10**9, 2 * 10**9))
    program_store.forget()                                    # as a later process:
    loaded = program_store.stats["loaded"]
    run(2)                                                    # 2 read from the store,
    assert program_store.stats["loaded"] == loaded + 1        # which marks it used: both
    assert (folder / keys[2]).stat().st_mtime_ns > 2 * 10**9  # times now (relatime: atime)
    one = max(_bytes(folder))
    share = compile_cache.SHARES["traced"]
    monkeypatch.setenv(compile_cache.MAX_MB_ENV, str(1.5 * one / share / 2**20))
    assert compile_cache.prune_if_grown() >= 1                # room for one: 3 goes
    assert {p.name for p in folder.iterdir()} == {keys[2]}


def test_use_root_moves_the_cache_of_this_process(tmp_path, monkeypatch):
    import jax

    before = (os.environ.get(compile_cache.ROOT_ENV), os.environ.get(compile_cache.SWITCH_ENV))
    monkeypatch.delenv(compile_cache.SWITCH_ENV, raising=False)
    monkeypatch.delenv(compile_cache.PIN_ENV, raising=False)   # the test session pins one
    try:
        compile_cache.use_root(tmp_path / "results" / "cache")
        assert os.environ[compile_cache.ROOT_ENV] == str(tmp_path / "results" / "cache")
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "results" / "cache" / "jax")
        assert jax.config.jax_enable_compilation_cache
        monkeypatch.setenv(compile_cache.SWITCH_ENV, "off")
        compile_cache.configure()
        assert not jax.config.jax_enable_compilation_cache
        assert jax.config.jax_compilation_cache_dir is None
    finally:
        for name, value in zip((compile_cache.ROOT_ENV, compile_cache.SWITCH_ENV), before,
                               strict=True):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        compile_cache.configure()


def test_trials_use_the_results_directory_cache(tmp_path, monkeypatch):
    from dpbench.runner import execute

    seen: list[Path] = []
    monkeypatch.setattr(compile_cache, "use_root", lambda root: seen.append(Path(root)))

    def stop(spec: object, trace_memory: bool = False) -> None:
        raise RuntimeError("stop")

    monkeypatch.setattr(execute, "execute", stop)
    with pytest.raises(RuntimeError, match="stop"):
        execute.run_trial(_any_spec(), str(tmp_path / "results" / "store"))
    assert seen == [tmp_path / "results" / "cache"]


def _any_spec():
    from dpbench.runner.spec import TrialSpec

    return TrialSpec(dataset="ds", dataset_target="x.y", dataset_params={}, method="m",
                     method_target="x.z", method_params={}, task="t", epsilon=1.0, delta=1e-5,
                     budget_unit="epsilon", trial=0)


# Every interpreter started with this on its path (the CLI before and after it re-executes
# itself, its loky workers) appends its pid, PYTHONHASHSEED, the hash of a string and NPROC
# (XLA's CPU thread count).
_SITECUSTOMIZE = """
import json, os
with open({log!r}, "a") as f:
    f.write(json.dumps([os.getpid(), os.environ.get("PYTHONHASHSEED"), hash("dpbench"),
                        os.environ.get("NPROC")]) + "\\n")
"""
_AIM_GRID = ["run", "experiment=linreg_adult", "methods=[ddssp]", "profile=smoke", "trials=1",
             "epsilons=[1]", "runner.progress=false"]


def _programs(results: Path) -> set[str]:
    return {p.name for p in (results / "cache" / "jax").glob("*-cache")}


def _cli_run(results: Path, site: Path, n_jobs: int) -> list[list]:
    from conftest import run_cli

    log = site / "processes.jsonl"
    log.unlink(missing_ok=True)
    # the caller's environment without PYTHONHASHSEED: dpbench must choose one itself
    proc = run_cli(*_AIM_GRID, f"runner.n_jobs={n_jobs}", f"results_dir={results}",
                   env={"PYTHONHASHSEED": None, "PYTHONPATH": f"{site}:{REPO}",
                        compile_cache.ROOT_ENV: None, compile_cache.SWITCH_ENV: None,
                        compile_cache.PIN_ENV: None,        # its own results cache
                        compile_cache.XLA_THREADS_ENV: None})
    assert proc.returncode == 0 and "ok 1" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.slow
def test_cli_runs_with_unset_hash_seed_share_the_compiled_aim_programs(tmp_path):
    """Two ``dpbench run`` commands with PYTHONHASHSEED unset (one in-process, one with a
    loky worker) into one results_dir: the second compiles no AIM program the first did
    not (no new cache entry), because both run their trials with hash seed 0, and its
    record is the first's to the last bit (the fit depends on the hash seed at rounding)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(log=str(site / "processes.jsonl")))
    expected = subprocess.run([sys.executable, "-c", "print(hash('dpbench'))"], text=True,
                              capture_output=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": compile_cache.HASH_SEED})
    seed0_hash = int(expected.stdout)
    results = tmp_path / "results"

    first = _cli_run(results, site, n_jobs=1)
    from conftest import stored_metrics

    programs, metrics = _programs(results), stored_metrics(results)
    assert programs                                           # AIM compiled and stored them
    # the store and the cached AIM release go, the compiled programs stay: the trial and
    # its AIM fit are computed again
    shutil.rmtree(results / "store")
    for d in (results / "cache").iterdir():
        if d.name != "jax":
            shutil.rmtree(d)
    second = _cli_run(results, site, n_jobs=2)
    assert _programs(results) == programs                    # nothing compiled anew
    assert stored_metrics(results) == metrics and metrics          # the same fit, bit for bit

    for processes in (first, second):
        # the command started without a seed and re-executed itself (same pid) with seed 0
        assert processes[0][1] is None and processes[1][0] == processes[0][0]
        last = {pid: (seed, h, nproc) for pid, seed, h, nproc in processes}
        # ... and with one XLA thread, which its workers inherit
        assert all(v == (compile_cache.HASH_SEED, seed0_hash, compile_cache.XLA_THREADS)
                   for v in last.values()), last
    assert len({p[0] for p in second}) >= 2                    # the trial ran in a worker


@pytest.mark.parametrize("seed, command", [(None, "figures"), ("5", "figures"),
                                           ("random", "figures"), (None, "plan")])
def test_the_command_pins_the_hash_seed_only_when_unset(tmp_path, seed, command):
    """Unset: a command that may run a mechanism or draw (``figures`` here) re-executes
    itself once, same pid, with PYTHONHASHSEED=0; a user's seed (also ``random``) is kept
    and nothing is re-executed; ``plan`` (``entry.NO_HASH_SEED``) never re-executes."""
    from conftest import run_cli

    (tmp_path / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(log=str(tmp_path / "processes.jsonl")))
    proc = run_cli(command, "experiment=linreg_adult", "profile=smoke",
                   f"results_dir={tmp_path / 'results'}",
                   env={"PYTHONHASHSEED": seed, "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seeds = [(pid, s) for pid, s, *_ in map(json.loads,
                                           (tmp_path / "processes.jsonl").read_text().splitlines())]
    if command == "plan":
        assert [s for _, s in seeds] == [seed]
    elif seed is None:
        assert [s for _, s in seeds] == [None, compile_cache.HASH_SEED]
        assert seeds[0][0] == seeds[1][0]
    else:
        assert [s for _, s in seeds] == [seed]


@pytest.mark.parametrize("nproc", [None, "3"])
def test_the_command_runs_xla_on_one_thread_unless_nproc_is_set(tmp_path, nproc):
    from conftest import run_cli

    (tmp_path / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(log=str(tmp_path / "processes.jsonl")))
    proc = run_cli("figures", "experiment=linreg_adult", "profile=smoke",
                   f"results_dir={tmp_path / 'results'}",
                   env={"PYTHONHASHSEED": None, compile_cache.XLA_THREADS_ENV: nproc,
                        "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    logged = [json.loads(line) for line in (tmp_path / "processes.jsonl").read_text().splitlines()]
    assert [p[3] for p in logged] == [nproc, nproc or compile_cache.XLA_THREADS]


# A large float64 sum, run by XLA on the cores this process may use (``cores``: the first
# one only, as on a 1-core machine, or all), with or without dpbench's pin.
_XLA_PROBE = """
import os, sys
if {one_core}:
    os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
if {pinned}:
    sys.path.insert(0, {repo!r})
    from dpbench import compile_cache
    compile_cache.pin_xla_threads()
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
x = np.random.default_rng(0).normal(size=(2000, 3000))
print(np.asarray(jax.jit(jnp.sum)(x)).tobytes().hex())
"""


def _xla_sum(one_core: bool, pinned: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != compile_cache.XLA_THREADS_ENV}
    code = _XLA_PROBE.format(one_core=one_core, pinned=pinned, repo=str(REPO))
    return subprocess.run([sys.executable, "-c", code], env=env, text=True, check=True,
                          capture_output=True).stdout.strip()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_one_xla_thread_makes_results_independent_of_the_core_count():
    """Unpinned, XLA splits the sum by its thread count (= usable cores) and 1 and 2 cores
    give different bits (if this ever fails, XLA stopped doing so and the pin is moot);
    with compile_cache.pin_xla_threads, as in every trial process, the bits are equal."""
    assert _xla_sum(one_core=True, pinned=False) != _xla_sum(one_core=False, pinned=False)
    assert _xla_sum(one_core=True, pinned=True) == _xla_sum(one_core=False, pinned=True)


def test_a_pinned_cache_stays_whatever_the_results_folder(tmp_path, monkeypatch):
    """``DPBENCH_PROGRAM_CACHE_DIR`` set: use_root (every trial) keeps the programs there."""
    import jax

    before = os.environ.get(compile_cache.ROOT_ENV)
    monkeypatch.delenv(compile_cache.SWITCH_ENV, raising=False)
    monkeypatch.setenv(compile_cache.PIN_ENV, str(tmp_path / "pinned"))
    try:
        compile_cache.use_root(tmp_path / "results" / "cache")
        assert os.environ[compile_cache.ROOT_ENV] == str(tmp_path / "pinned")
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "pinned" / "jax")
        monkeypatch.setenv(compile_cache.PIN_ENV, "")              # empty: not pinned
        compile_cache.use_root(tmp_path / "results" / "cache")
        assert os.environ[compile_cache.ROOT_ENV] == str(tmp_path / "results" / "cache")
    finally:
        if before is None:
            os.environ.pop(compile_cache.ROOT_ENV, None)
        else:
            os.environ[compile_cache.ROOT_ENV] = before
        compile_cache.configure()
