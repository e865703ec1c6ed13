"""The cost in the plan (dpbench/runner/cost.py): per-trial estimates from stored trials of
the same cell, else a per-method log-linear model, else unknown; the SLURM verdicts; and
the estimate against a real run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dpbench.entry import main
from dpbench.runner.cost import (
    INTERPOLATED,
    MEDIAN,
    MODEL,
    SAME_CELL,
    UNKNOWN,
    Estimator,
    SlurmLimits,
    Stored,
    array_tasks,
    cost_lines,
    grid_cost,
    makespan,
    record_cpu_seconds,
    stored_trials,
)
from dpbench.runner.reference import Reference, write_reference
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import ResultStore, record_problem


def spec(dataset: str, method: str, eps: float, trial: int = 0, **params: float) -> TrialSpec:
    return TrialSpec(dataset=dataset, dataset_target="toy.load", dataset_params={"name": dataset},
                     method=method, method_target=f"toy.{method}", method_params=params,
                     task="regression", epsilon=eps, delta=1e-5, budget_unit="epsilon",
                     trial=trial)


def put(store: ResultStore, s: TrialSpec, seconds: float, n: int = 1000, d: int = 5,
        mem: float = 100.0, cpu: float | None = -1.0) -> None:
    """Store a valid ok record of ``s`` that took ``seconds`` (fit 90%, data and eval 5%)
    of wall time and ``cpu`` CPU seconds (-1: as many as wall seconds; None: no ``cpu_s``,
    as records written before dpbench kept it)."""
    rec = {"key": s.key, "status": "ok", "spec": s.to_dict(), "metrics": {"mse": 0.5},
           "privacy": {"target_delta": 1e-5, "target_epsilon": s.epsilon},
           "timing": {"data_s": 0.05 * seconds, "fit_s": 0.9 * seconds,
                      "eval_s": 0.05 * seconds},
           "n_train": n, "d": d, "peak_rss_mb": mem, "maxrss_mb": 2 * mem}
    if cpu is not None:
        rec["cpu_s"] = seconds if cpu == -1.0 else cpu
    assert record_problem(rec, s.key) is None
    store.put(rec)


def test_the_stores_cost_index_keeps_each_trials_identities(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan reads every stored trial (any grid's can price a cell); their three hashes
    (cell, cell without budget, data) are kept in the store's cost index with the trial, so
    a later command hashes none of them again, and they are the hashes computed afresh."""
    from dpbench.runner import cost
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store = ResultStore(tmp_path / "store")
    specs = [spec("a", "m", e, t) for e in (0.5, 1.0) for t in range(2)]
    for s in specs:
        put(store, s, 2.0)
    stored_trials(store)                                  # the index is written
    fresh = {s.key: (cost.cell_of(s), cost.budgets_of(s), cost.data_of(s)) for s in specs}
    monkeypatch.setattr(cost, "IDENTITIES", {})          # a later command, nothing hashed
    hashed: list[str] = []
    real = cost.cell_and_budgets
    monkeypatch.setattr(cost, "cell_and_budgets", lambda s: hashed.append(s.key) or real(s))
    trials = stored_trials(store)
    Estimator(trials).estimate(spec("a", "m", 2.0, 0))
    assert {t.spec.key: cost.identities(t.spec) for t in trials} == fresh
    assert hashed == [spec("a", "m", 2.0, 0).key]        # only the trial being priced


def test_same_cell_gives_the_stored_mean_longest_and_peak(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 1.0, 0, k=3), 2.0, mem=300.0)
    put(store, spec("a", "m", 1.0, 1, k=3), 4.0, mem=200.0)
    put(store, spec("a", "m", 1.0, 0, k=4), 50.0)          # another cell (a parameter)
    est = Estimator(stored_trials(store)).estimate(spec("a", "m", 1.0, 7, k=3))
    assert est.source == SAME_CELL
    assert est.seconds == pytest.approx(3.0) and est.longest == pytest.approx(4.0)
    assert est.mem_mb == 300.0 and est.beyond == ()


def test_interpolated_between_the_nearest_budgets_of_the_same_cell(tmp_path: Path) -> None:
    """A cell measured at neither its budget nor any other of its own trials takes the line in
    log-log between the nearest smaller and larger measured budgets of its dataset and
    method: the geometric mean at the midpoint in log budget (means 3 s at eps 0.5, stored,
    and 72 s at eps 2, reference fits; longest 4 and 96), the larger memory, a stored cell
    preferred to a reference fit at the same budget (the 999 s one is not used), the
    nearest budget above (not eps 4), and exact for a power law between its ends; a budget
    beyond every measured one, or another parameter, takes the model."""
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 0.5, 0, k=3), 2.0, mem=100.0)
    put(store, spec("a", "m", 0.5, 1, k=3), 4.0, mem=100.0)      # mean 3, longest 4
    put(store, spec("a", "m", 4.0, 0, k=3), 1e6, mem=900.0)      # not the nearest above
    for eps, secs in ((0.25, 1.0), (2.0, 48.0), (2.0, 48.0)):
        put(store, spec("b", "m", eps, k=3), secs)
    reference = [Stored(spec("a", "m", 2.0, 0, k=3), 48.0, 300.0, (1000, 5)),
                 Stored(spec("a", "m", 2.0, 1, k=3), 96.0, 300.0, (1000, 5)),
                 Stored(spec("a", "m", 0.5, 0, k=3), 999.0, 5000.0, (1000, 5))]
    est = Estimator(stored_trials(store), reference=reference)
    got = est.estimate(spec("a", "m", 1.0, 5, k=3))
    assert got.source == INTERPOLATED
    assert got.seconds == pytest.approx(math.sqrt(3.0 * 72.0), rel=1e-12)   # means 3 and 72
    assert got.longest == pytest.approx(math.sqrt(4.0 * 96.0), rel=1e-12)
    assert got.mem_mb == 300.0
    assert est.estimate(spec("b", "m", 1.0, k=3)).seconds == pytest.approx(
        4.0 ** (math.log(48) / math.log(8)), rel=1e-12)      # 1 s x (eps / 0.25)^(log 48 / log 8)
    assert est.estimate(spec("a", "m", 8.0, k=3)).source == MODEL
    assert est.estimate(spec("a", "m", 1.0, k=5)).source == MODEL


def test_model_recovers_a_power_law_and_names_its_extrapolation(tmp_path: Path) -> None:
    """Times generated as 0.002 n^1.2 eps^-0.5 k^0.7: the fit is exact to rounding."""
    store = ResultStore(tmp_path)

    def law(n: int, eps: float, k: float) -> float:
        return 0.002 * n ** 1.2 * eps ** -0.5 * k ** 0.7

    sizes = {"d1": 1000, "d2": 2000, "d3": 8000}
    for ds, n in sizes.items():
        for eps in (0.5, 1.0, 2.0):
            for k in (2, 8):
                put(store, spec(ds, "m", eps, k=k), law(n, eps, k), n=n)
    put(store, spec("d4", "other", 1.0), 1.0, n=4000)       # only tells d4's size
    est = Estimator(stored_trials(store))
    inside = est.estimate(spec("d4", "m", 0.7, k=4))
    assert inside.source == MODEL and inside.beyond == ()
    assert inside.seconds == pytest.approx(law(4000, 0.7, 4), rel=1e-9)
    assert inside.longest == pytest.approx(inside.seconds, rel=1e-6)   # no residual
    beyond = est.estimate(spec("d2", "m", 4.0, k=4))      # held at the largest eps stored
    assert beyond.seconds == pytest.approx(law(2000, 2.0, 4), rel=1e-9)
    assert beyond.beyond == ("eps",)
    unsized = est.estimate(spec("d9", "m", 1.0, k=4))      # no stored trial of d9
    assert unsized.source == MODEL and "size" in unsized.beyond


def test_few_trials_give_the_median_and_an_unseen_method_is_unknown(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    for i, eps in enumerate((0.5, 1.0, 1.0)):   # 2 settings: too few for eps's 2 coefficients
        put(store, spec("a", "m", eps, i), [1.0, 2.0, 9.0][i])
    est = Estimator(stored_trials(store))
    med = est.estimate(spec("a", "m", 4.0))
    assert med.source == MEDIAN and med.seconds == 2.0 and med.longest == pytest.approx(9.0)
    blank = est.estimate(spec("a", "new", 1.0))
    assert blank.source == UNKNOWN and blank.seconds is None and blank.mem_mb is None
    todo = [spec("a", "m", 4.0), spec("a", "new", 1.0)]
    lines = cost_lines(grid_cost(todo, todo, store), workers=1)
    assert "at least 2 s of CPU time" in lines[0], lines
    assert "1 from the method's median, 1 unknown (methods new: no stored trial)" in lines[0]
    blind = cost_lines(grid_cost(todo[1:], todo[1:], store), workers=1)
    assert blind == ["cost: unknown for the 1 trial(s) to do: no stored trial of methods new "
                     "(a smoke run, e.g. profile=smoke, gives `plan` figures to use)"]


def test_a_stored_trial_counts_its_cpu_time_not_its_wall_time(tmp_path: Path) -> None:
    """Issue 59, defect 3: a trial that took 100 s of wall time on a loaded machine and
    10 CPU-s is priced at 10 s of CPU. Issue 60, item 7: CPU is never taken from wall
    time: a record without ``cpu_s`` (or a reference line of wall seconds) prices nothing,
    neither its own cell nor the done total, and the plan says how many were left out."""
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 1.0, 0), 100.0, cpu=10.0)
    todo = [spec("a", "m", 1.0, 1)]
    est = Estimator(stored_trials(store)).estimate(todo[0])
    assert est.source == SAME_CELL and est.seconds == pytest.approx(10.0)
    lines = cost_lines(grid_cost([spec("a", "m", 1.0, 0), *todo], todo, store), workers=1)
    assert "1 trial(s) to do, 10 s of CPU time (whole grid 20 s of CPU time)" in lines[0], lines
    assert not any("no CPU time" in ln for ln in lines)
    put(store, spec("a", "m", 2.0, 0), 50.0, cpu=None)
    store = ResultStore(tmp_path)
    wall_cell = spec("a", "m", 2.0, 1)
    est = Estimator(stored_trials(store)).estimate(wall_cell)
    assert est.source != SAME_CELL and est.seconds == pytest.approx(10.0)   # not 50
    done = [spec("a", "m", 2.0, 0)]
    lines = cost_lines(grid_cost([*done, *todo], todo, store), workers=1)
    assert "whole grid 10 s of CPU time" in lines[0], lines         # not 60: no wall time
    assert any("1 measured trial(s) recorded no CPU time" in ln and "left out" in ln
               for ln in lines), lines
    wall_ref = [Stored(wall_cell, 50.0, 100.0, (1000, 5), wall=True)]
    est = Estimator([], wall_ref).estimate(wall_cell)
    assert est.source == UNKNOWN and est.seconds is None


def _seconds(text: str) -> float:
    """``42 s`` / ``12 min`` / ``3.2 h`` / ``0.10 CPU-hours`` (cost.duration, cost.cpu)."""
    value, unit = text.split()[:2]
    return float(value) * {"s": 1, "min": 60, "h": 3600, "CPU-hours": 3600}[unit]


def test_the_cpu_total_is_never_below_the_longest_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 59, defect 3: on an empty store exrisk_table2's smoke grid is priced by a
    per-method model whose largest miss is several-fold; the plan's total CPU time holds
    every trial, so it is at least the longest trial's expected time, and the longest
    trial's bound (the model's largest miss) is named as a bound."""
    import re

    assert main(["plan", "experiment=exrisk_table2", "profile=smoke",
                 f"results_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    total = re.search(r"trial\(s\) to do, (?:at least )?([\d.]+ (?:s|min|h|CPU-hours))", out)
    longest = re.search(r"longest trial: \S+ ~([\d.]+ (?:s|min|h)) expected", out)
    assert total and longest, out
    assert _seconds(total.group(1)) >= _seconds(longest.group(1)), out
    assert "up to ~" in out


def shared(dataset: str, method: str, eps: float, **params: float) -> TrialSpec:
    """A trial of ``method``, one of several methods of the class ``toy.Shared``."""
    return TrialSpec(dataset=dataset, dataset_target="toy.load", dataset_params={"name": dataset},
                     method=method, method_target="toy.Shared", method_params=params,
                     task="regression", epsilon=eps, delta=1e-5, budget_unit="epsilon",
                     trial=0)


def test_the_model_is_the_methods_own_then_its_classes_and_stays_in_range(tmp_path: Path
                                                                         ) -> None:
    """A measured method's model is fitted on its own trials (not a cheaper sibling of its
    class); a method never measured borrows its class's; and no model figure leaves the
    range of the trials fitted, though each feature is within it (times 10^(log n + log k
    - 1) seconds, measured where n or k is small: the fitted corner n = 1000, k = 100 is
    10,000 s, 100x the slowest trial)."""
    store = ResultStore(tmp_path)
    for eps in (0.5, 1.0, 2.0):
        put(store, shared("a", "slow", eps), 100.0 / eps, n=1000)
        put(store, shared("a", "fast", eps), 1.0 / eps, n=1000)
    est = Estimator(stored_trials(store))
    slow = est.estimate(shared("a", "slow[x=1]", 0.7))       # a sweep point of slow
    assert slow.source == MODEL and slow.seconds == pytest.approx(100.0 / 0.7, rel=1e-9)
    sibling = est.estimate(shared("a", "other", 0.7))         # only its class was measured
    assert sibling.source == MODEL and 1.0 / 0.7 < sibling.seconds < 100.0 / 0.7
    assert sibling.beyond == ()
    other_oracle = est.estimate(shared("a", "slow", 0.7, oracle="mip"))   # never run
    assert other_oracle.source == MODEL and other_oracle.beyond == ("param.oracle",)

    store = ResultStore(tmp_path / "corner")
    for n, k in ((10, 1), (1000, 1), (10, 100), (100, 10)):
        put(store, shared(f"d{n}", "m", 1.0, k=k), 10.0 ** (math.log10(n * k) - 1), n=n)
    est = Estimator(stored_trials(store))
    inside = est.estimate(shared("d100", "m", 1.0, k=1))
    assert inside.source == MODEL and inside.seconds == pytest.approx(10.0, rel=1e-9)
    corner = est.estimate(shared("d1000", "m", 1.0, k=100))
    assert corner.source == MODEL and corner.beyond == ()
    assert corner.seconds == pytest.approx(100.0)   # the slowest trial fitted, not 10,000


def slurm_cost(tmp_path: Path) -> tuple:
    """Six trials to do of 20 s (eps 1) and 100 s (eps 2, the longest stored 130 s)."""
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 1.0, 0), 20.0, mem=3000.0)
    put(store, spec("a", "m", 2.0, 0), 70.0)
    put(store, spec("a", "m", 2.0, 1), 130.0)
    todo = [spec("a", "m", e, t) for e in (1.0, 2.0) for t in range(2, 5)]
    return grid_cost(todo, todo, store), todo


def test_slurm_tasks_and_verdicts(tmp_path: Path) -> None:
    cost, todo = slurm_cost(tmp_path)
    tasks = array_tasks(todo, 2)
    assert [[s.epsilon for s in t] for t in tasks] == [[2.0, 2.0], [2.0, 1.0], [1.0, 1.0]]
    fits = cost_lines(cost, slurm=SlurmLimits(timeout_min=60, mem_gb=4, trials_per_task=2,
                                              array_parallelism=2))
    text = "\n".join(fits)
    assert "3 array task(s) of up to 2 trial(s)" in text, text
    # longest task: two eps-2 trials at their longest, 2 x 130 s = 260 s = 4 min
    assert "runner.timeout_min=60 covers the longest task (~4 min; 7 min with a 1.5x margin)" \
        in text, text
    assert "runner.mem_gb=4 covers" in text and "WARNING" not in text
    short = "\n".join(cost_lines(cost, slurm=SlurmLimits(timeout_min=5, mem_gb=3,
                                                         trials_per_task=2,
                                                         array_parallelism=2)))
    assert "WARNING: runner.timeout_min=5 is short" in short and \
        "set runner.timeout_min=7" in short, short
    # 3000 MiB x 1.25 = 3.7 GB > 3 GB
    assert "WARNING: runner.mem_gb=3 is short" in short and "set runner.mem_gb=4" in short
    # CPU-hours: 3 x 20 + 3 x 100 s
    assert "6 trial(s) to do, 0.10 CPU-hours" in fits[0], fits[0]


def test_makespan_hands_each_job_to_the_first_free_worker() -> None:
    assert makespan([5, 1, 1, 1, 1, 1], 2) == 5
    assert makespan([3, 3, 3], 1) == 9 and makespan([], 4) == 0


def test_plan_states_the_slurm_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``dpbench plan runner=slurm`` on a store holding half a grid's cells (and no shipped
    fit: a measured fit of the same cells would price the other half, not these trials)."""
    from dpbench import workspace
    from dpbench.workspace import compose_config, grid

    monkeypatch.setattr(workspace, "reference_of", lambda cfg, specs=(): ([], None))
    args = ["experiment=linreg_adult", "methods=[ssp]", "profile=smoke",
            f"results_dir={tmp_path}"]
    specs = grid(compose_config(args))
    store = ResultStore(tmp_path / "store")
    for s in specs[: len(specs) // 2]:
        put(store, s, 600.0, n=40000, d=100, mem=5000.0)
    assert main(["plan", *args, "runner=slurm", "runner.trials_per_task=2"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: runner.timeout_min=60 is short of the longest task (~20 min" not in out
    assert "runner.timeout_min=60 covers the longest task (~20 min; 30 min" in out, out
    assert "WARNING: runner.mem_gb=4 is short" in out and "set runner.mem_gb=7" in out, out


def test_estimate_against_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run a tiny grid; a plan of the same cells states their recorded times exactly, and
    for a new budget between the stored ones the interpolated estimate is within a factor of
    3 of the run's time."""
    from dpbench.workspace import compose_config, grid

    base = ["experiment=linreg_adult", "methods=[ssp]", "profile=smoke", "trials=3",
            "profile.trials=3", "profile.max_epsilons=null", f"results_dir={tmp_path}"]
    run = ["runner.progress=false", "runner.n_jobs=1"]
    assert main(["run", *base, "epsilons=[0.1,1,2]", *run]) == 0
    store = ResultStore(tmp_path / "store")
    done = grid(compose_config([*base, "epsilons=[0.1,1,2]"]))
    recorded = {s.key: record_cpu_seconds(store.get(s.key))[0] for s in done}
    again = [s for s in grid(compose_config([*base, "epsilons=[0.1,1,2]", "trials=4",
                                             "profile.trials=4"])) if s.trial == 3]
    cost = grid_cost(again, again, store)
    for s in again:
        cell = [recorded[d.key] for d in done if d.epsilon == s.epsilon]
        assert cost.estimates[s.key].source == SAME_CELL
        assert cost.estimates[s.key].seconds == pytest.approx(sum(cell) / len(cell))
        assert cost.estimates[s.key].longest == pytest.approx(max(cell))

    new = grid(compose_config([*base, "epsilons=[0.3]"]))
    cost = grid_cost(new, new, store)
    assert {cost.estimates[s.key].source for s in new} == {INTERPOLATED}
    estimate = sum(cost.estimates[s.key].seconds for s in new)
    assert main(["run", *base, "epsilons=[0.3]", *run]) == 0
    actual = sum(record_cpu_seconds(store.get(s.key))[0] for s in new)
    assert abs(math.log(estimate / actual)) < math.log(3), (estimate, actual)
    capsys.readouterr()


def _used(s: TrialSpec, seconds: float, artifact: str, hit: bool) -> Stored:
    """A measured trial of ``s`` that used the shared fit ``artifact`` (``hit``: found it
    built by another trial)."""
    return Stored(s, seconds, 100.0, (1000, 5), False, artifact, hit)


def test_a_shared_fit_is_paid_once_by_a_grid_without_its_builder(tmp_path: Path) -> None:
    """Reference fits: a ``builder`` trial fits a model (100 s) that a ``user`` trial of
    the same budget and trial number then finds built (1 s). A grid of ``user`` alone pays
    the model in each of its trials (a fit per budget and trial), unless the builder's trial
    is stored; with ``builder`` in the grid nobody pays twice. A pre-training that one fit
    serves for every budget and trial (``pre`` built it, ``tuned`` found it at other
    trials and budgets) is paid once."""
    reference = [
        *(_used(spec("a", "builder", e), 100.0, f"fit{e}", False) for e in (1.0, 2.0)),
        *(_used(spec("a", "user", e), 1.0, f"fit{e}", True) for e in (1.0, 2.0)),
        _used(spec("a", "pre", 1.0), 300.0, "net", False),
        *(_used(spec("a", "tuned", e, t), 5.0, "net", True) for e in (1.0, 2.0) for t in (0, 1)),
    ]
    users = [spec("a", "user", e, t) for e in (1.0, 2.0) for t in range(3)]
    store = ResultStore(tmp_path)
    alone = grid_cost(users, users, store, reference)
    assert all(alone.estimates[s.key].seconds == 100.0 for s in users)
    assert all(alone.estimates[s.key].builds_shared for s in users)
    assert any(line.startswith("note: 2 cell(s) will build a shared fit")
               for line in cost_lines(alone, workers=1)), cost_lines(alone, workers=1)

    builders = [spec("a", "builder", e, t) for e in (1.0, 2.0) for t in range(3)]
    both = grid_cost(users + builders, users + builders, store, reference)
    assert [both.estimates[s.key].seconds for s in users] == [1.0] * 6
    assert both.seconds(users + builders) == pytest.approx(6 * 101.0)

    put(store, spec("a", "builder", 2.0, 1), 100.0)     # its fit is in the cache
    stored = grid_cost(users, users, store, reference)
    assert stored.estimates[spec("a", "user", 2.0, 1).key].seconds == 1.0
    assert stored.seconds(users) == pytest.approx(5 * 100.0 + 1.0)

    tuned = [spec("a", "tuned", e, t) for e in (0.5, 1.0, 2.0) for t in range(4)]
    once = grid_cost(tuned, tuned, ResultStore(tmp_path / "empty"), reference)
    paid = [s for s in tuned if once.estimates[s.key].builds_shared]
    assert len(paid) == 1 and once.estimates[paid[0].key].seconds == 300.0


def test_a_shared_fit_done_only_in_the_reference_is_paid_by_its_first_user(tmp_path: Path
                                                                             ) -> None:
    """A builder trial in the grid but done only in the shipped reference left no fit in
    this machine's cache: each user trial needing its fit pays the builder's cost (plan once
    priced linreg_adult's 25 AIM-synth trials at 21 s in all, each needing a 104-111 s fit).
    The same builder stored by a run here (its fit cached) leaves the user at its own 1 s."""
    reference = [
        *(_used(spec("a", "builder", e), 100.0, f"fit{e}", False) for e in (1.0, 2.0)),
        *(_used(spec("a", "user", e), 1.0, f"fit{e}", True) for e in (1.0, 2.0)),
    ]
    users = [spec("a", "user", e, t) for e in (1.0, 2.0) for t in range(3)]
    builders = [spec("a", "builder", e, t) for e in (1.0, 2.0) for t in range(3)]
    here = ResultStore(tmp_path / "here")
    for b in builders:
        put(here, b, 100.0)
    write_reference([here.get(b.key) for b in builders], tmp_path / "ref")
    shipped = ResultStore(tmp_path / "clean", reference=Reference(tmp_path / "ref"))
    assert all(shipped.get(b.key) is not None for b in builders)
    clean = grid_cost(users + builders, users, shipped, reference)
    assert [clean.estimates[s.key].seconds for s in users] == [100.0] * 6
    assert all(clean.estimates[s.key].builds_shared for s in users)
    ran = grid_cost(users + builders, users, here, reference)
    assert [ran.estimates[s.key].seconds for s in users] == [1.0] * 6


def test_memory_of_a_dataset_never_measured_comes_from_the_nearest_in_size() -> None:
    """Issue 60, item 7: a method measured on a large table (7 GB) and a small one (0.5 GB)
    is priced on a third small table, whose size a trial of another method tells, at the
    small table's peak, not the largest; with the size unknown, at the largest."""
    ref = [Stored(spec("big", "m", 1.0), 100.0, 7000.0, (50_000, 100)),
           Stored(spec("small", "m", 1.0), 1.0, 500.0, (6_000, 8)),
           Stored(spec("small", "m", 2.0), 1.5, 520.0, (6_000, 8)),
           Stored(spec("c", "other", 1.0), 0.1, 200.0, (5_000, 9))]
    est = Estimator([], ref)
    assert est.estimate(spec("c", "m", 1.0)).mem_mb == 520.0
    assert est.estimate(spec("unseen", "m", 1.0)).mem_mb == 7000.0


def test_the_stores_cost_index_parses_a_record_again_only_when_its_file_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``stored_trials`` reads through a sealed index of the store's records (plan <= 1 s):
    a second plan parses no record, a rewritten record is parsed again, a removed one
    leaves, a damaged index is rebuilt, and each answer is the records' own."""
    from dpbench.runner import cost
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store = ResultStore(tmp_path / "store")
    a, b = spec("a", "m", 1.0), spec("b", "m", 1.0)
    put(store, a, 3.0)
    put(store, b, 5.0)
    got: list[str] = []
    real = ResultStore.get
    monkeypatch.setattr(ResultStore, "get", lambda self, k: got.append(k) or real(self, k))

    def seconds() -> dict[str, float]:
        return {t.spec.key: t.seconds for t in stored_trials(ResultStore(tmp_path / "store"))}

    assert seconds() == {a.key: 3.0, b.key: 5.0} and sorted(got) == sorted([a.key, b.key])
    got.clear()
    assert seconds() == {a.key: 3.0, b.key: 5.0} and got == []
    put(store, a, 7.0, n=2000)                            # a re-run rewrites its record
    assert seconds() == {a.key: 7.0, b.key: 5.0} and got == [a.key]
    store.path(b.key).unlink()
    assert seconds() == {a.key: 7.0}
    (index,) = (tmp_path / "cache" / "store-costs").glob("*.pickle")
    index.write_bytes(index.read_bytes()[:-4] + b"oops")                  # seal fails
    got.clear()
    assert seconds() == {a.key: 7.0} and got == [a.key]
    assert [t.size for t in stored_trials(store)] == [(2000, 5)]
    assert cost.COSTS_TAG in index.read_bytes()[:40]
