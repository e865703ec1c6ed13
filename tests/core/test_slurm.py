"""SLURM backend on a real single-node cluster (scripts/slurm-local), marker ``slurm``.

The session fixture runs scripts/slurm-local/start.sh with MaxArraySize=4 (a no-op apart
from the MaxArraySize reconfigure when the cluster is already up, e.g. started by .ci/run).
If the cluster cannot start, these tests fail; they never skip.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli, stored_metrics, stored_records

from dpbench.runner.grid import costliest_first, expand
from dpbench.runner.schema import ConfigError
from dpbench.runner.slurm import DELAY_ENV, SlurmSettings, submissions, trial_states
from dpbench.runner.slurm_queue import ACTIVE_STATES, _expand, max_array_size, task_states
from dpbench.runner.store import OK, ResultStore
from dpbench.workspace import compose_config

MAX_ARRAY = 4  # low MaxArraySize of the test cluster: the smoke grid needs several arrays
# the data-independent methods only: the AIM-based ones have their own tests
SMOKE = ["experiment=linreg_adult", "methods=[public,ssp,adassp]", "profile=smoke",
         "runner.progress=false"]
N_SMOKE = 12  # 1 dataset x 3 methods x 2 epsilons x 2 trials
SCRIPTS = REPO / "scripts" / "slurm-local"


def _ping() -> bool:
    try:
        out = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return "is UP" in out.stdout


def _start(max_array: int) -> None:
    env = {**os.environ, "DPBENCH_SLURM_MAX_ARRAY_SIZE": str(max_array)}
    proc = subprocess.run(["bash", str(SCRIPTS / "start.sh")], env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"the local SLURM cluster did not start (run scripts/slurm-local/install.sh "
                    f"as root first):\n{proc.stdout}\n{proc.stderr}", pytrace=False)


@pytest.fixture(scope="session")
def cluster():
    was_up = _ping()
    before = max_array_size() if was_up else None
    _start(MAX_ARRAY)
    assert max_array_size() == MAX_ARRAY
    yield
    if not was_up:
        subprocess.run(["bash", str(SCRIPTS / "stop.sh")], capture_output=True, timeout=300)
    elif before != MAX_ARRAY:
        _start(before)  # leave a cluster that was already up as we found it


@pytest.fixture(scope="session")
def local_metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The smoke grid run by the local backend: the reference for every SLURM run."""
    res = tmp_path_factory.mktemp("local") / "results"
    run_cli("run", *SMOKE, f"results_dir={res}", check=True)
    metrics = stored_metrics(res)
    assert len(metrics) == N_SMOKE
    return metrics


def _tasks(results: Path) -> list[dict]:
    """Every submitted task {id, keys}, in submission order."""
    return [t for sub in submissions(ResultStore(results / "store"))
            for arr in sub["arrays"] for t in arr["tasks"]]


def _settle(results: Path, timeout: float = 150.0) -> None:
    """Wait until Slurm knows every submitted task and none is queued or running."""
    deadline = time.time() + timeout
    while True:
        ids = {t["id"] for t in _tasks(results)}
        states = task_states({i.split("_")[0] for i in ids})
        if ids <= states.keys() and not any(states[i] in ACTIVE_STATES for i in ids):
            return
        assert time.time() < deadline, f"SLURM tasks still active after {timeout} s: {states}"
        time.sleep(0.5)


def _slurm_run(results: Path, *extra: str, env: dict[str, str] | None = None) -> str:
    return run_cli("run", *SMOKE, f"results_dir={results}", "runner=slurm", *extra,
                   env=env, check=True).stdout


@pytest.mark.slurm
def test_smoke_grid_returns_at_once_completes_and_matches_local(
        cluster, local_metrics, tmp_path: Path) -> None:
    res = tmp_path / "results"
    # each task sleeps 0.5 s after each trial: the jobs surely outlive the submitting command
    out = _slurm_run(res, "runner.trials_per_task=3", env={DELAY_ENV: "0.5"})
    assert "submitted SLURM job" in out, out
    keys = [k for t in _tasks(res) for k in t["keys"]]
    assert sorted(keys) == sorted(local_metrics) and len(_tasks(res)) == 4  # 12 trials / 3
    assert keys == [s.key for s in costliest_first(expand(compose_config(SMOKE)))]
    states = trial_states(ResultStore(res / "store"), keys)
    assert any(st.state in ("queued", "running") for st in states.values()), states

    _settle(res)
    assert stored_metrics(res) == local_metrics  # exact float equality with the local backend
    status = run_cli("status", *SMOKE, f"results_dir={res}", check=True).stdout
    assert f"total: ok {N_SMOKE}, failed 0, pending 0, queued 0, running 0, lost 0" in status
    again = _slurm_run(res)
    assert "0 to run" in again and "submitted" not in again, again
    assert len(submissions(ResultStore(res / "store"))) == 1


def _release_when_requeued(task_id: str, timeout: float = 60.0) -> None:
    """Slurm holds a requeued job ~2 minutes (BeginTime); start it now to keep the test short."""
    deadline = time.time() + timeout
    while task_states([task_id.split("_")[0]]).get(task_id) != "PENDING":
        assert time.time() < deadline, f"{task_id} was not requeued"
        time.sleep(0.2)
    subprocess.run(["scontrol", "update", f"JobId={task_id}", "StartTime=now"], check=True,
                   capture_output=True, timeout=30)


@pytest.mark.slurm
def test_scancel_is_lost_then_rerun_and_preemption_requeues(
        cluster, local_metrics, tmp_path: Path) -> None:
    res = tmp_path / "results"
    # 2 tasks of 6 trials, each sleeping 1.5 s after a trial: long enough to be hit mid-run
    _slurm_run(res, "runner.trials_per_task=6", env={DELAY_ENV: "1.5"})
    killed, preempted = _tasks(res)
    signals = {killed["id"]: ["scancel", killed["id"]],                       # hard kill
               preempted["id"]: ["scancel", "--signal=USR2", preempted["id"]]}  # preemption
    # each task is signalled as soon as it has stored its first trial: the two tasks may start
    # far apart on a loaded machine, so waiting for both could let the first one finish
    deadline = time.time() + 90
    while signals:
        assert time.time() < deadline, f"tasks {sorted(signals)} did not start storing trials"
        stored = set(stored_metrics(res))
        for task in (killed, preempted):
            if task["id"] in signals and set(task["keys"]) & stored:
                subprocess.run(signals.pop(task["id"]), check=True, capture_output=True,
                               timeout=30)
        time.sleep(0.1)
    _release_when_requeued(preempted["id"])
    _settle(res)

    done = stored_records(res)
    lost = [k for k in killed["keys"] if k not in done]
    assert 0 < len(lost) < 6, "scancel must have landed mid-task"
    assert set(preempted["keys"]) <= done.keys()  # requeued via checkpoint, finished by itself
    folder = Path(submissions(ResultStore(res / "store"))[0]["folder"])
    assert "this job is preempted" in (folder / f"{preempted['id']}_0_log.err").read_text()
    status = run_cli("status", *SMOKE, f"results_dir={res}", check=True).stdout
    assert f"lost {len(lost)}" in status, status
    assert status.count(f"{killed['id']} ended CANCELLED") == len(lost), status

    out = _slurm_run(res, "runner.wait=true", "runner.poll_s=0.5")
    assert f"{len(lost)} to run" in out, out
    resubmitted = [k for t in _tasks(res)[2:] for k in t["keys"]]
    assert sorted(resubmitted) == sorted(lost)  # exactly the lost trials, nothing else
    after = stored_records(res)
    for k, rec in done.items():  # nothing stored before was run again
        assert after[k]["started_at"] == rec["started_at"] and after[k]["pid"] == rec["pid"]
    assert stored_metrics(res) == local_metrics


@pytest.mark.slurm
def test_grid_larger_than_max_array_size_is_split(cluster, local_metrics, tmp_path: Path) -> None:
    res = tmp_path / "results"
    out = _slurm_run(res, "runner.trials_per_task=2", "runner.array_parallelism=2",
                     "runner.wait=true", "runner.poll_s=0.5")
    (sub,) = submissions(ResultStore(res / "store"))
    sizes = [len(a["tasks"]) for a in sub["arrays"]]
    assert sizes == [MAX_ARRAY, N_SMOKE // 2 - MAX_ARRAY], sizes  # 6 tasks of 2 trials
    assert len({a["job_id"] for a in sub["arrays"]}) == len(sizes)
    assert out.count("submitted SLURM job") == len(sizes)
    assert stored_metrics(res) == local_metrics


# --- no cluster needed ---------------------------------------------------------------------------

def test_array_ids_expand() -> None:
    assert _expand("12_[0-2,5%2]") == ["12_0", "12_1", "12_2", "12_5"]
    assert _expand("12_[7]") == ["12_7"]
    assert _expand("12_3") == ["12_3"] and _expand("13") == ["13"]


@pytest.mark.parametrize("override,bad", [("runner.trials_per_task=0", "trials_per_task=0"),
                                          ("runner.mem_gb=-1", "mem_gb=-1"),
                                          ("runner.timeout_min=1.5", "timeout_min=1.5")])
def test_bad_runner_settings_are_one_line_errors(override: str, bad: str) -> None:
    cfg = compose_config(["runner=slurm", override])
    with pytest.raises(ConfigError, match=bad):
        SlurmSettings.from_cfg(cfg.runner)


def test_trial_states_join_store_log_and_slurm(tmp_path: Path, monkeypatch) -> None:
    """Classification rules, with squeue/sacct answers given (monkeypatched task_states)."""
    import dpbench.runner.slurm as slurm

    store = ResultStore(tmp_path / "store")
    keys = [f"{c}" * 64 for c in "abcdef"]
    now = time.time()
    tasks = [{"id": "7_0", "keys": keys[:2]}, {"id": "7_1", "keys": keys[2:4]},
             {"id": "7_2", "keys": keys[4:5]}]
    slurm._write_log(store, {"id": "old", "created_unix": now - 1000, "folder": "/f",
                             "arrays": [{"job_id": "7", "tasks": tasks}]})
    resubmitted = [{"id": "9", "keys": keys[4:5]}]  # a one-task submission is a plain job
    slurm._write_log(store, {"id": "new", "created_unix": now - 10, "folder": "/g",
                             "arrays": [{"job_id": "9", "tasks": resubmitted}]})
    store.put({"key": keys[0], "status": OK, "spec": {}, "metrics": {"mse": 0.5},
               "timing": {"fit_s": 0}, "privacy": {"target_delta": 1e-5}})  # a complete record
    store.put({"key": keys[2], "status": "failed", "spec": {}, "error": "simulated"})
    answers = {"7_0": "CANCELLED", "7_1": "OUT_OF_MEMORY", "7_2": "RUNNING"}  # 9: not yet known
    monkeypatch.setattr(slurm, "task_states", lambda jobs: answers)
    st = trial_states(store, keys)
    assert [st[k].state for k in keys] == ["ok", "lost", "failed", "lost", "queued", "pending"]
    assert st[keys[1]].slurm_state == "CANCELLED" and st[keys[3]].slurm_state == "OUT_OF_MEMORY"
    assert st[keys[4]].task == "9"  # the latest submission holds it, not the older task 7_2
    monkeypatch.setattr(slurm, "UNKNOWN_GRACE_S", 5.0)  # unknown 10 s after submission: lost
    assert trial_states(store, keys)[keys[4]].state == "lost"
