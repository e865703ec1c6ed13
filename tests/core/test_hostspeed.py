"""The machine's speed beside each trial's CPU seconds (dpbench/runner/hostspeed.py): the
probe, its caching in a worker and for a plan, and the plan's seconds scaled by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_plan_cost import put, spec

from dpbench.runner import hostspeed
from dpbench.runner.cost import cost_lines, grid_cost, reference_trials
from dpbench.runner.reference_costs import reference_line
from dpbench.runner.store import ResultStore


def test_the_probe_is_the_fastest_pass_of_cpu_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe times each pass by the process's CPU clock and keeps the fastest: a pass an
    interrupt stretched is not the machine's speed."""
    clock = iter([0.0, 0.30, 1.0, 1.10, 2.0, 2.20])           # passes of 0.3, 0.1, 0.2 s
    monkeypatch.setattr(hostspeed.time, "process_time", lambda: next(clock))
    monkeypatch.setattr(hostspeed, "_workload", lambda: 0.0)
    assert hostspeed.probe(rounds=3) == pytest.approx(0.10)


def test_the_workload_is_real_work() -> None:
    """The workload's value is fixed (no randomness) and one probe takes CPU time."""
    assert hostspeed._workload() == hostspeed._workload()
    assert hostspeed.probe(rounds=1) > 0


def test_a_worker_probes_again_only_when_its_probe_is_old(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    probes = iter([0.05, 0.07])
    monkeypatch.setattr(hostspeed, "_last", None)
    monkeypatch.setattr(hostspeed.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(hostspeed, "probe", lambda rounds=3: next(probes))
    assert hostspeed.current() == 0.05
    now[0] += hostspeed.MAX_AGE_S - 1
    assert hostspeed.current() == 0.05                    # kept
    now[0] += 2
    assert hostspeed.current() == 0.07                    # measured again


def test_the_plans_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DPBENCH_HOST_PROBE pins the target or turns it off, a malformed value is refused in
    one line naming it; unset, this machine's probe, kept for a while in the cache file."""
    cache = tmp_path / "probe.json"
    monkeypatch.setattr(hostspeed, "probe", lambda rounds=3: 0.042)
    monkeypatch.setenv(hostspeed.ENV, "off")
    assert hostspeed.target(cache) is None
    monkeypatch.setenv(hostspeed.ENV, "0.25")
    assert hostspeed.target(cache) == 0.25
    for bad in ("fast", "0", "-1", "nan"):
        monkeypatch.setenv(hostspeed.ENV, bad)
        with pytest.raises(ValueError, match=f"{hostspeed.ENV}='{bad}': valid values"):
            hostspeed.setting()
    monkeypatch.delenv(hostspeed.ENV)
    assert hostspeed.target(cache) == 0.042 and json.loads(cache.read_text())["probe_s"] == 0.042
    monkeypatch.setattr(hostspeed, "probe", lambda rounds=3: 0.09)
    assert hostspeed.target(cache) == 0.042                # kept, not measured again
    cache.write_text(json.dumps({"probe_s": 0.042, "at": 0}))
    assert hostspeed.target(cache) == 0.09                 # too old: measured again
    cache.write_text("{damaged")
    assert hostspeed.target(cache) == 0.09


def _probed(store: ResultStore, s, cpu: float, probe: float | None) -> None:
    put(store, s, cpu)
    rec = store.get(s.key)
    if probe is not None:
        rec[hostspeed.FIELD] = probe
    store.put(rec)


def test_a_plan_prices_work_not_the_seconds_of_a_sitting(tmp_path: Path) -> None:
    """The same work measured on a slow day (30 CPU-s at probe 0.3) and a fast one (10 at
    0.1) prices the cell alike at any target: 5 s each at probe 0.05; the grid's done trials
    are scaled too; a trial without a probe counts as recorded, and the plan says so."""
    store = ResultStore(tmp_path / "store")
    slow, fast, todo = (spec("a", "m", 1.0, t) for t in range(3))
    _probed(store, slow, 30.0, 0.3)
    _probed(store, fast, 10.0, 0.1)
    cost = grid_cost([slow, fast, todo], [todo], store, speed=0.05)
    assert cost.estimates[todo.key].seconds == pytest.approx(5.0)
    assert cost.estimates[todo.key].longest == pytest.approx(5.0)
    assert cost.done_seconds == pytest.approx(10.0)
    unscaled = grid_cost([slow, fast, todo], [todo], store, speed=None)
    assert unscaled.estimates[todo.key].seconds == pytest.approx(20.0)
    assert unscaled.done_seconds == pytest.approx(40.0)
    line = [ln for ln in cost_lines(cost) if ln.startswith("speed:")]
    assert line and "0.050" in line[0] and "2 of 2 recorded one" in line[0]
    assert not [ln for ln in cost_lines(unscaled) if ln.startswith("speed:")]
    asked: list[int] = []
    lazy = grid_cost([slow, fast, todo], [todo], store, speed=lambda: asked.append(1) or 0.05)
    assert asked == [1] and lazy.estimates[todo.key].seconds == pytest.approx(5.0)

    old = spec("a", "m", 1.0, 3)
    _probed(store, old, 7.0, None)                        # written before records had one
    mixed = grid_cost([slow, fast, old, todo], [todo], store, speed=0.05)
    assert mixed.estimates[todo.key].seconds == pytest.approx((5 + 5 + 7) / 3)
    line = [ln for ln in cost_lines(mixed) if ln.startswith("speed:")][0]
    assert "2 of 3" in line and "1 did not" in line


def test_no_probe_is_measured_when_no_trial_recorded_one(tmp_path: Path) -> None:
    """Stores and fits written before records had a probe: nothing to scale, so the plan
    neither measures this machine nor prints a speed line."""
    store = ResultStore(tmp_path / "store")
    done, todo = spec("a", "m", 1.0, 0), spec("a", "m", 1.0, 1)
    _probed(store, done, 8.0, None)

    def measure() -> float:
        raise AssertionError("measured for nothing")
    cost = grid_cost([done, todo], [todo], store, speed=measure)
    assert cost.estimates[todo.key].seconds == pytest.approx(8.0)
    assert not [ln for ln in cost_lines(cost) if ln.startswith("speed:")]


def test_reference_lines_carry_the_probe_and_price_by_it(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    s, todo = spec("a", "m", 1.0, 0), spec("a", "m", 1.0, 1)
    _probed(store, s, 12.0, 0.2)
    line = reference_line(store.get(s.key), "some machine")
    assert line[hostspeed.FIELD] == 0.2
    fits = reference_trials([json.loads(json.dumps(line))])
    assert fits[0].probe == 0.2
    empty = ResultStore(tmp_path / "empty")
    cost = grid_cost([todo], [todo], empty, fits, "note", speed=0.1)
    assert cost.estimates[todo.key].seconds == pytest.approx(6.0)


def test_each_trial_records_the_machines_speed(tmp_path: Path) -> None:
    """``execute`` stores the worker's probe with the trial, positive, beside its cpu_s."""
    from dpbench.runner.execute import execute
    from dpbench.runner.spec import TrialSpec
    s = TrialSpec(dataset="synthetic_linear",
                  dataset_target="dpbench.data.synthetic.linear_regression",
                  dataset_params={"n": 300, "d": 3, "noise_sd": 1.0, "n_test": 100},
                  method="ssp", method_target="dpbench.methods.regression.ssp.SSP",
                  method_params={"calibration": "analytic"}, task="regression", epsilon=1.0,
                  delta=1e-5, budget_unit="epsilon", trial=0)
    rec = execute(s)
    assert rec["status"] == "ok", rec.get("error")
    assert rec[hostspeed.FIELD] > 0 and rec["cpu_s"] >= 0


def test_the_shipped_reference_keeps_each_trials_probe_for_the_plan(tmp_path: Path) -> None:
    """A trial shipped in the reference keeps its probe through the build and the index a
    plan reads (its brief): a done trial the reference holds is scaled by it too."""
    from dpbench.runner.reference import Reference, write_reference
    local = ResultStore(tmp_path / "local")
    done, todo = spec("a", "m", 1.0, 0), spec("a", "m", 1.0, 1)
    _probed(local, done, 20.0, 0.2)
    write_reference([local.get(done.key)], tmp_path / "ref")
    reference = Reference(tmp_path / "ref")
    assert reference.brief(done.key)[hostspeed.FIELD] == 0.2
    store = ResultStore(tmp_path / "store", reference)
    cost = grid_cost([done, todo], [todo], store, speed=0.1)
    assert cost.done_seconds == pytest.approx(10.0)
