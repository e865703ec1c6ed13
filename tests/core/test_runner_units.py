"""Grid expansion, spec identity and seeds, the atomic store."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import open_dict

from dpbench.runner import local
from dpbench.runner.execute import resolve_delta
from dpbench.runner.grid import costliest_first, expand, thin, thin_sweep
from dpbench.runner.schema import ConfigError
from dpbench.runner.store import ResultStore
from dpbench.workspace import compose_config


def test_grid_size_order_and_overrides() -> None:
    specs = expand(compose_config(["experiment=linreg_adult"]))
    assert len(specs) == 1 * 7 * 5 * 5   # dataset x methods x epsilons x trials
    assert len({s.key for s in specs}) == len(specs)
    specs = expand(compose_config(["experiment=linreg_adult", "epsilons=[0.1,1]", "trials=3",
                                   "method=adassp"]))
    assert [(s.method, s.epsilon, s.trial) for s in specs] == [
        ("adassp", e, t) for e in (0.1, 1.0) for t in range(3)]


def test_work_order_is_larger_budgets_first_within_each_block() -> None:
    specs = expand(compose_config(["experiment=linreg_adult", "epsilons=[0.1,2,1]", "trials=2",
                                   "methods=[ddssp,adassp]"]))
    order = [(s.method, s.epsilon, s.trial) for s in costliest_first(specs)]
    assert order == [(m, e, t) for m in ("ddssp", "adassp") for e in (2.0, 1.0, 0.1)
                     for t in range(2)]
    assert sorted(s.key for s in costliest_first(specs)) == sorted(s.key for s in specs)
    assert [s.epsilon for s in specs[:2]] == [0.1, 0.1]   # the grid's own order is unchanged


def test_run_local_dispatches_costliest_first(tmp_path: Path, monkeypatch) -> None:
    specs = expand(compose_config(["experiment=linreg_adult", "epsilons=[0.05,2]", "trials=2",
                                   "methods=[adassp]"]))
    ran: list[tuple[float, int]] = []

    def fake(key, spec, store_root, trace_memory, since):
        ran.append((spec["epsilon"], spec["trial"]))
        return key, "ok"

    monkeypatch.setattr(local, "run_keyed", fake)
    local.run_local(specs, str(tmp_path), n_jobs=1, progress=False)
    assert ran == [(2.0, 0), (2.0, 1), (0.05, 0), (0.05, 1)]


def test_profile_caps_and_dataset_profile_params() -> None:
    specs = expand(compose_config(["experiment=linreg_adult", "profile=smoke"]))
    assert {s.trial for s in specs} == {0, 1} and {s.epsilon for s in specs} == {0.05, 2.0}
    assert {s.dataset_params["n_train_max"] for s in specs} == {5000}


def test_seeds_depend_on_content_only() -> None:
    a = expand(compose_config(["experiment=linreg_adult"]))
    b = expand(compose_config(["experiment=linreg_adult", "methods=[adassp,public]",
                               "epsilons=[2.0,0.1]"]))
    by_key = {s.key: s for s in a}
    for s in b:
        assert s.key in by_key
        assert s.method_rng().random() == by_key[s.key].method_rng().random()
    # the data split is shared by all methods and epsilons of a (dataset, trial) cell
    cell = [s for s in a if s.trial == 2]
    draws = {s.data_rng().integers(1 << 62) for s in cell}
    assert len(draws) == 1
    assert a[0].method_rng().random() != a[1].method_rng().random()


def test_delta_rules() -> None:
    assert resolve_delta(1e-5, 10) == 1e-5
    assert resolve_delta("n**-1.1", 1000) == pytest.approx(1000**-1.1)
    assert resolve_delta("1/n**2", 100) == pytest.approx(1e-4)
    with pytest.raises(ValueError):
        resolve_delta("__import__('os')", 10)
    with pytest.raises(ConfigError, match="delta"):
        expand(compose_config(["experiment=linreg_adult", "delta=n"]))


def test_thin_keeps_ends() -> None:
    assert thin([1, 2, 3, 4, 5], 2) == [1, 5]
    assert thin([1, 2, 3, 4, 5], 3) == [1, 3, 5]
    assert thin([1, 2], None) == [1, 2]


def test_thin_sweep_keeps_the_middle_or_spread_points() -> None:
    sweep = {"T": [30, 40, 50, 60, 70, 80, 90, 100], "K": [5, 10, 25]}
    assert thin_sweep(sweep, 1) == {"T": [60], "K": [10]}          # lower middle if even
    assert thin_sweep(sweep, 2) == {"T": [30, 100], "K": [5, 25]}
    assert thin_sweep(sweep, None) is sweep
    assert thin_sweep({"T": 7}, 1) == {"T": [7]}


def test_profile_sweep_points_caps_all_or_named_method_sweeps() -> None:
    base = ["experiment=qr_adult_reduced", "profile=paper", "epsilons=[1.0]", "trials=1"]

    def points(*over: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in expand(compose_config([*base, *over])):
            out[s.method.split("[")[0]] = out.get(s.method.split("[")[0], 0) + 1
        return out

    whole = points()
    assert whole["gem"] == 12 and whole["rap"] == 35 and whole["mwem"] == 7
    named = points("profile.sweep_points={gem: 1, rap: 2}")
    assert named["gem"] == 1 and named["rap"] == 4 and named["mwem"] == whole["mwem"]
    every = points("profile.sweep_points=1")
    assert set(every.values()) == {1}
    keys = {s.method: s.key for s in expand(compose_config([*base]))}
    capped = {s.method: s.key for s in expand(compose_config(
        [*base, "profile.sweep_points=1"]))}
    assert all(keys[m] == k for m, k in capped.items())   # a kept point keeps its key
    with pytest.raises(ConfigError, match="sweep_points"):
        expand(compose_config([*base, "profile.sweep_points=0"]))


def record(key: str, status: str = "ok", **fields: object) -> dict:
    """A complete record (every field ResultStore requires), with ``fields`` on top."""
    base = {"key": key, "status": status, "spec": {}}
    base.update({"metrics": {"mse": 0.5}, "privacy": {"target_delta": 1e-5},
                 "timing": {"fit_s": 0.0}} if status == "ok" else {"error": "simulated"})
    return {**base, **fields}


def test_store_atomic_put_and_compact(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    for i in range(3):
        store.put(record(f"{i:064x}", metrics={"mse": i / 2}))
    (store.trials / "00" / ".tmp-leftover.json").write_text("{partial")  # a crashed write
    assert store.keys() == [f"{i:064x}" for i in range(3)]
    assert store.status(f"{1:064x}") == "ok" and store.status("f" * 64) is None
    frame = pd.read_parquet(store.compact())
    assert sorted(frame["metrics.mse"]) == [0, 0.5, 1.0]
    store.put(record(f"{1:064x}", "failed"))
    assert json.loads(store.path(f"{1:064x}").read_text())["status"] == "failed"


def test_stale_temp_files_are_removed_but_fresh_ones_kept(tmp_path: Path) -> None:
    import os
    import time

    store = ResultStore(tmp_path)
    store.put(record("ab" + "0" * 62))
    old, fresh = store.trials / "ab" / ".tmp-old.json", store.trials / "ab" / ".tmp-new.json"
    old.write_text("{")
    fresh.write_text("{")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert store.remove_stale_temp(3600) == 1
    assert not old.exists() and fresh.exists() and store.keys() == ["ab" + "0" * 62]


def test_dataset_and_method_sweeps_expand_in_order() -> None:
    cfg = compose_config(["experiment=linreg_adult", "datasets=[synthetic_linear]",
                          "methods=[ssp]", "epsilons=[1.0]", "trials=1",
                          "dataset_sweep={n: [100, 200], d: [1, 3]}",
                          "method_sweep={calibration: [analytic, classic]}"])
    specs = expand(cfg)
    got = [(s.dataset_params["n"], s.dataset_params["d"], s.method_params["calibration"])
           for s in specs]
    assert got == [(n, d, c) for n in (100, 200) for d in (1, 3)
                   for c in ("analytic", "classic")]
    assert specs[0].meta["dataset_label"].endswith("(n=100, d=1)")
    assert len({s.key for s in specs}) == 8


def test_experiment_profile_block_and_command_line_precedence(tmp_path: Path) -> None:
    exp = {"experiment": {"profiles": {"smoke": {"trials": 1}}}}
    from omegaconf import OmegaConf

    from dpbench.workspace import apply_experiment_profile

    cfg = compose_config(["experiment=linreg_adult", "profile=smoke"])
    with_block = OmegaConf.merge(cfg, exp)
    apply_experiment_profile(with_block, [])
    assert with_block.profile.trials == 1
    explicit = OmegaConf.merge(cfg, exp)
    apply_experiment_profile(explicit, ["profile.trials=2"])
    assert explicit.profile.trials == 2


def test_profile_datasets_and_per_dataset_task_params() -> None:
    from omegaconf import OmegaConf

    cfg = compose_config(["experiment=exrisk_table2", "profile=smoke"])
    assert {s.dataset for s in expand(cfg)} == {"mpdp_compas", "mpdp_heart"}
    by = {"experiment": {"task_params_by_dataset": {"mpdp_compas": {"targets": ["sex"]}}}}
    with open_dict(cfg):
        specs = expand(OmegaConf.merge(cfg, by))
    params = {s.dataset: s.task_params for s in specs}
    assert params["mpdp_compas"]["targets"] == ["sex"]
    assert "targets" not in params["mpdp_heart"]
    assert params["mpdp_heart"]["workload"] == "all_4way"          # the common ones stay
    stray = {"experiment": {"task_params_by_dataset": {"adult": {"targets": ["sex"]}}}}
    with pytest.raises(ConfigError, match="names 'adult', which is not among.*mpdp_compas"):
        expand(OmegaConf.merge(cfg, stray))
    with open_dict(cfg):
        cfg.profile.datasets = ["nope"]
    with pytest.raises(ConfigError, match=r"keeps datasets \['nope'\], none .*listed: mpdp_"):
        expand(cfg)


def test_profile_methods_subset() -> None:
    """A profile's ``methods`` keeps the listed entries (sweeps included) and nothing else;
    the kept points keep their keys; a subset that keeps nothing is refused in one line."""
    full = compose_config(["experiment=qr_adult_reduced", "profile=default",
                           "experiment.profiles.default.methods=null"])
    cut = compose_config(["experiment=qr_adult_reduced", "profile=default"])
    names = {s.method.split("[")[0] for s in expand(cut)}
    assert names == {"mwem", "mwem_vanilla", "pep", "dualquery"}
    kept = {s.key for s in expand(full) if s.method.split("[")[0] in names}
    assert {s.key for s in expand(cut)} == kept and len(kept) == 1380
    with open_dict(cut):
        cut.profile.methods = ["nope"]
    with pytest.raises(ConfigError, match=r"keeps methods \['nope'\], none .*listed: mwem"):
        expand(cut)


def test_method_params_by_dataset_set_and_sweep_per_dataset() -> None:
    from omegaconf import OmegaConf

    cfg = compose_config(["experiment=exrisk_baselines", "profile=smoke"])
    specs = [s for s in expand(cfg) if s.trial == 0]
    OmegaConf.set_struct(cfg, False)
    by = {(s.dataset, s.method): s for s in specs}
    # a fixed value keeps the method id and sets the parameter for that dataset only
    assert by["mpdp_heart", "dpsgd_iyengar"].method_params["B"] == 20
    assert by["mpdp_compas", "dpsgd_iyengar"].method_params["B"] == 200
    # a list is one point per value on that dataset, id name[k=v], label with the value
    pate = sorted(m for d, m in by if d == "mpdp_heart" and m.startswith("pate"))
    assert pate == ["pate[n_teachers=10]", "pate[n_teachers=15]", "pate[n_teachers=5]"]
    heart = by["mpdp_heart", "pate[n_teachers=5]"]
    assert heart.method_params == {"n_teachers": 5, "n_student": 20}
    assert heart.meta["method_label"] == "PATE (n_teachers=5)"
    assert by["mpdp_compas", "pate[n_teachers=300]"].method_params["n_student"] == 100
    # the smoke profile keeps two datasets; the others' entries are still checked
    bad = {"experiment": {"method_params_by_dataset": {"mpdp_adult": {"pate": {"n_teach": 3}}}}}
    with pytest.raises(ConfigError, match=r"mpdp_adult.pate: unknown parameter 'n_teach' "
                                          r"\(did you mean 'n_teachers'\?\); "
                                          "valid: n_student, n_teachers"):
        expand(OmegaConf.merge(cfg, bad))
    bad = {"experiment": {"method_params_by_dataset": {"mpdp_heart": {"mst": {"x": 1}}}}}
    with pytest.raises(ConfigError,
                       match="names 'mst', which is not among the experiment's methods.*pate"):
        expand(OmegaConf.merge(cfg, bad))
    bad = {"experiment": {"method_params_by_dataset": {"iris": {}}}}
    with pytest.raises(ConfigError, match="names 'iris', which is not among.*mpdp_law"):
        expand(OmegaConf.merge(cfg, bad))


def test_peak_rss_is_per_trial() -> None:
    # 400 MB touched after a reset must show in VmHWM; a new reset must drop it again.
    import numpy as np

    from dpbench.runner.execute import peak_rss_mb, reset_peak_rss

    if not reset_peak_rss():
        pytest.skip("kernel without /proc/self/clear_refs peak reset")
    base = peak_rss_mb()
    block = np.ones(50_000_000)  # 400 MB, touched
    high = peak_rss_mb()
    del block
    reset_peak_rss()
    assert high - base > 350 and peak_rss_mb() < high - 350


@pytest.mark.parametrize("seed", [None, "7"])
def test_slurm_tasks_get_the_submitters_hash_seed(tmp_path, monkeypatch, seed):
    """The sbatch script exports PYTHONHASHSEED: 0 unless the submitter set one (then that),
    so every task finds the JAX programs compiled by the others (compile_cache.py); and
    NPROC=1, so XLA runs one thread whatever the node's cores (same results)."""
    from dpbench.runner.slurm import SlurmSettings, _executor

    monkeypatch.setenv("PYTHONHASHSEED", seed or "")   # restored after the test: the
    if seed is None:                                   # executor pins it in os.environ
        monkeypatch.delenv("PYTHONHASHSEED")
    settings = SlurmSettings(partition=None, timeout_min=10, mem_gb=1.0, cpus_per_task=1,
                             trials_per_task=1, array_parallelism=1, signal_delay_s=30,
                             wait=False, folder=None, progress=False, trace_memory=False,
                             poll_s=1.0, sbatch={})
    monkeypatch.setenv("NPROC", "")                   # and one XLA thread per task (unset
    monkeypatch.delenv("NPROC")                       # here, restored after the test)
    script = _executor(settings, tmp_path, "x")._make_submission_file_text("true", "1")
    assert f"export PYTHONHASHSEED={seed or '0'}\n" in script
    assert "export NPROC=1\n" in script


@pytest.mark.parametrize("rule,why", [
    ("n**n", "OverflowError"),                 # once an OverflowError traceback
    ("9**9**9**9", "OverflowError"),           # once a hang (unbounded integer power)
    ("1/(n-n)", "ZeroDivisionError"),
    ("(-n)**0.5", "not a real number"),
    ("__import__('os')", "may only use n"),
    ("n if n else 1", "may only use n"),
    ("n**", "not an expression"),
    ("1/n" + "+0" * 200, "characters"),
])
def test_a_bad_delta_rule_is_a_value_error_at_once(rule: str, why: str) -> None:
    # bounded arithmetic: "9**9**9**9" once ran for ever (the test would hang)
    with pytest.raises(ValueError, match=why):
        resolve_delta(rule, 10**6)


def test_delta_rules_keep_their_exact_values() -> None:
    for n in (10, 1000, 48_842, 10**6):
        assert resolve_delta("1/n**2", n) == 1 / n**2
        assert resolve_delta("n**-1.1", n) == n**-1.1
        assert resolve_delta("1/(n*n*n)", n) == 1 / (n * n * n)
        assert resolve_delta("-(-1)/n", n) == 1 / n


def test_a_grid_too_large_to_expand_is_refused_before_expanding() -> None:
    from dpbench.runner.grid import MAX_GRID_TRIALS, expand
    from dpbench.runner.schema import ConfigError
    from dpbench.workspace import compose_config

    cfg = compose_config(["experiment=linreg_adult", "trials=1000000000"])
    with pytest.raises(ConfigError, match=r"the grid has 35,000,000,000 trials .* more than "
                                          rf"the {MAX_GRID_TRIALS:,}"):
        expand(cfg)


def test_sweep_points_naming_no_method_is_refused() -> None:
    from dpbench.runner.grid import expand
    from dpbench.runner.schema import ConfigError
    from dpbench.workspace import compose_config

    cfg = compose_config(["experiment=binagg_ablation", "+profile.sweep_points={binag: 1}"])
    with pytest.raises(ConfigError, match=r"sweep_points names 'binag', which is not among the "
                                          r"methods \(did you mean 'binagg'\?\)"):
        expand(cfg)


def test_a_swept_value_of_the_wrong_type_is_refused_before_any_trial() -> None:
    from dpbench.runner.grid import expand
    from dpbench.runner.schema import ConfigError
    from dpbench.workspace import compose_config

    cfg = compose_config(["experiment=binagg_ablation", "methods=[{binagg: {theta: [abc]}}]"])
    with pytest.raises(ConfigError, match=r"methods\.binagg\.theta='abc' is invalid: binagg's "
                                          r"theta is a (int|float) .*, not a str"):
        expand(cfg)
