"""SLURM backend: pending trials as submitit array jobs writing into the same result store.

``dpbench run ... runner=slurm`` packs the trials that are neither stored ok nor already
queued/running into tasks of ``runner.trials_per_task`` trials, splits the tasks into
arrays of at most the cluster's MaxArraySize, submits them with submitit (one fresh folder
per submission, so no stale result file is ever read) and returns at once, printing the
job ids (``runner.wait=true`` blocks with a progress bar instead).

Every task runs the local backend's ``run_trial``, which computes a trial only under its
lease in the store (so a local run beside an array splits the grid with it) and writes each
result atomically into the store on the shared filesystem. On preemption or time limit
submitit calls ``TrialBatch.checkpoint`` and requeues the task; the requeued task skips the
trials stored meanwhile. Which task holds which trial is recorded per submission in
``<store>/slurm/submissions/<id>.json``; ``dpbench status`` joins it with squeue/sacct to
tell queued, running and lost trials (task ended without storing them: scancel, out of
memory, time limit, node failure), and the next run resubmits exactly those.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import submitit
from omegaconf import DictConfig, OmegaConf

from dpbench import compile_cache
from dpbench.runner.cost import array_tasks
from dpbench.runner.execute import HELD, run_trial
from dpbench.runner.progress import progress_bar
from dpbench.runner.schema import COUNT, Interval, check, invalid
from dpbench.runner.slurm_queue import ACTIVE_STATES, SlurmError, max_array_size, task_states
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import FAILED, OK, ResultStore

#: a task that squeue and sacct still do not know this long after its submission is lost
UNKNOWN_GRACE_S = 120.0
#: test aid: seconds each task sleeps after each trial (to hit a task mid-run with scancel)
DELAY_ENV = "DPBENCH_SLURM_TRIAL_DELAY_S"


class TrialBatch(submitit.helpers.Checkpointable):
    """One array task: run its trials in order, each result straight into the store.

    Each trial goes through ``run_trial``, which computes it only under its lease, so a
    local run (or another submission) beside the array never computes a trial twice: a
    trial another live run holds is asked again after the others, every ``poll_s`` seconds,
    until it is stored or its holder died. Checkpointable: on preemption/timeout submitit
    requeues this same object; trials stored in the meantime are then skipped, and failed
    ones are not retried within the submission (``since`` is its creation time).
    """

    def __init__(self, specs: list[dict[str, Any]], store_root: str,
                 trace_memory: bool = False, poll_s: float = 5.0) -> None:
        self.specs = specs
        self.store_root = store_root
        self.trace_memory = trace_memory
        self.poll_s = poll_s
        self.since = time.time()

    def __call__(self) -> dict[str, int]:
        delay = float(os.environ.get(DELAY_ENV) or 0)
        since = getattr(self, "since", None)  # None: pickled by an older dpbench, requeued
        counts: Counter[str] = Counter()
        todo = list(self.specs)
        while todo:
            held = []
            for spec in todo:
                outcome = run_trial(spec, self.store_root, trace_memory=self.trace_memory,
                                    since=since)
                if outcome == HELD:
                    held.append(spec)
                    continue
                counts[outcome] += 1
                if delay and outcome in (OK, FAILED):
                    time.sleep(delay)
            todo = held
            if todo:
                time.sleep(getattr(self, "poll_s", 5.0))
        return dict(counts)


@dataclass(frozen=True)
class SlurmSettings:
    """``conf/runner/slurm.yaml``, validated."""

    partition: str | None
    timeout_min: int
    mem_gb: float
    cpus_per_task: int
    trials_per_task: int
    array_parallelism: int
    signal_delay_s: int
    wait: bool
    folder: str | None
    progress: bool
    trace_memory: bool
    poll_s: float
    sbatch: dict[str, Any]

    @classmethod
    def from_cfg(cls, runner: DictConfig) -> SlurmSettings:
        r = OmegaConf.to_container(runner, resolve=True)
        assert isinstance(r, dict)

        def integer(name: str) -> int:
            return int(check(f"runner.{name}", r.get(name), [COUNT]))

        positive = [Interval(float, 0, None, "neither")]
        mem = check("runner.mem_gb", r.get("mem_gb"), positive)
        poll = check("runner.poll_s", r.get("poll_s", 5), positive)
        sbatch = r.get("sbatch") or {}
        if not isinstance(sbatch, dict):
            raise invalid("runner.sbatch", sbatch, "it must be a mapping of extra sbatch "
                          "options, e.g. {account: myproj, qos: normal}")
        partition = r.get("partition")
        return cls(partition=None if partition in (None, "") else str(partition),
                   timeout_min=integer("timeout_min"), mem_gb=float(mem),
                   cpus_per_task=integer("cpus_per_task"),
                   trials_per_task=integer("trials_per_task"),
                   array_parallelism=integer("array_parallelism"),
                   signal_delay_s=integer("signal_delay_s"), wait=bool(r.get("wait", False)),
                   folder=r.get("folder") or None, progress=bool(r.get("progress", True)),
                   trace_memory=bool(r.get("trace_memory", False)), poll_s=float(poll),
                   sbatch=dict(sbatch))


# --- the submissions log -----------------------------------------------------------------------

def log_dir(store: ResultStore) -> Path:
    return store.root / "slurm" / "submissions"


def submissions(store: ResultStore) -> list[dict[str, Any]]:
    """Every recorded submission, oldest first."""
    d = log_dir(store)
    subs = [json.loads(p.read_text()) for p in d.glob("*.json")] if d.exists() else []
    return sorted(subs, key=lambda s: (s["created_unix"], s["id"]))


def _write_log(store: ResultStore, sub: dict[str, Any]) -> None:
    """Atomic (temp + rename) write of one submission's record."""
    d = log_dir(store)
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    with os.fdopen(fd, "w") as fh:
        json.dump(sub, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, d / f"{sub['id']}.json")


class TrialState(NamedTuple):
    """Where a trial stands: ok / failed (store), queued / running / lost (SLURM), pending."""

    state: str
    task: str | None = None        # SLURM task id "<job>_<index>" (or "<job>") last holding it
    slurm_state: str | None = None  # e.g. CANCELLED, OUT_OF_MEMORY, TIMEOUT; None if unknown
    folder: str | None = None       # the submission's submitit folder (task logs)


def trial_states(store: ResultStore, keys: Sequence[str]) -> dict[str, TrialState]:
    """Join the store, the submissions log and squeue/sacct for each trial key.

    A trial not stored ok whose latest task ended (any terminal Slurm state, or unknown to
    Slurm ``UNKNOWN_GRACE_S`` after submission) without storing it is ``lost``.
    """
    latest: dict[str, tuple[str, dict[str, Any]]] = {}
    for sub in submissions(store):
        for arr in sub["arrays"]:
            for task in arr["tasks"]:
                for k in task["keys"]:
                    latest[k] = (task["id"], sub)
    wanted = {k: latest[k] for k in keys if k in latest and store.status(k) != OK}
    slurm = task_states({t.split("_")[0] for t, _ in wanted.values()}) if wanted else {}
    now = time.time()
    out: dict[str, TrialState] = {}
    for k in keys:  # the store is read after Slurm: a task seen ended has written its trials
        status = store.status(k)
        if status == OK or k not in wanted:
            out[k] = TrialState(status or "pending")
            continue
        task, sub = wanted[k]
        s = slurm.get(task)
        if s in ACTIVE_STATES:
            out[k] = TrialState(ACTIVE_STATES[s], task, s, sub["folder"])
        elif status == FAILED:
            out[k] = TrialState(FAILED, task, s, sub["folder"])
        elif s is None and now - sub["created_unix"] < UNKNOWN_GRACE_S:
            out[k] = TrialState("queued", task, None, sub["folder"])
        else:
            out[k] = TrialState("lost", task, s, sub["folder"])
    return out


# --- run and status ----------------------------------------------------------------------------

def _chunks(items: Sequence[Any], n: int) -> list[list[Any]]:
    return [list(items[i:i + n]) for i in range(0, len(items), n)]


def _executor(settings: SlurmSettings, folder: Path, name: str) -> submitit.SlurmExecutor:
    executor = submitit.SlurmExecutor(folder=folder)
    pkg_parent = str(Path(__file__).resolve().parents[2])  # tasks import this same dpbench
    params: dict[str, Any] = dict(
        job_name=f"dpbench-{name}", time=settings.timeout_min,
        mem=f"{max(1, round(settings.mem_gb * 1024))}M", cpus_per_task=settings.cpus_per_task,
        array_parallelism=settings.array_parallelism,
        # the USR2 warning before the time limit, at most a quarter of the limit ahead
        signal_delay_s=min(settings.signal_delay_s, max(1, settings.timeout_min * 15)),
        # one hash seed in every task (the submitter's, else compile_cache.HASH_SEED): JAX
        # programs compiled by one task are loaded by the others and by later runs
        setup=[f"export PYTHONPATH={pkg_parent}${{PYTHONPATH:+:$PYTHONPATH}}",
               f"export PYTHONHASHSEED={shlex.quote(compile_cache.pin_hash_seed())}",
               # XLA on the submitter's thread count (one unless NPROC is set): results
               # do not depend on the node's cores
               f"export NPROC={shlex.quote(compile_cache.pin_xla_threads())}"],
        additional_parameters=settings.sbatch,
    )
    if settings.partition:
        params["partition"] = settings.partition
    executor.update_parameters(**params)
    return executor


def _fail(message: str) -> int:
    print(f"dpbench: error: {message}", file=sys.stderr)
    return 2


def submit(cfg: DictConfig, todo: Sequence[TrialSpec], store: ResultStore) -> int:
    """Submit the pending trials ``todo`` as array jobs; return the exit status.

    Trials already queued or running in an earlier submission are not submitted again.
    """
    settings = SlurmSettings.from_cfg(cfg.runner)
    name = cfg.experiment.name
    store = ResultStore(store.root.resolve())
    try:
        states = trial_states(store, [s.key for s in todo])
        limit = max_array_size()
    except SlurmError as exc:
        return _fail(str(exc))
    busy = [s for s in todo if states[s.key].state in ("queued", "running")]
    todo = [s for s in todo if states[s.key].state not in ("queued", "running")]
    if busy:
        jobs = sorted({states[s.key].task.split("_")[0] for s in busy}, key=int)
        print(f"{name}: {len(busy)} trial(s) already queued or running in SLURM job(s) "
              f"{', '.join(jobs)}: not submitted again")
    if todo:
        sub_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        base = Path(settings.folder) if settings.folder else store.root / "slurm" / "jobs"
        folder = base.resolve() / sub_id
        sub: dict[str, Any] = {"id": sub_id, "created_unix": time.time(),
                               "created_at": datetime.now(UTC).isoformat(), "experiment": name,
                               "store": str(store.root), "folder": str(folder), "arrays": []}
        try:
            executor = _executor(settings, folder, name)
        except (RuntimeError, ValueError) as exc:
            return _fail(f"cannot set up the SLURM executor: {exc}")
        tasks = array_tasks(todo, settings.trials_per_task)
        for array in _chunks(tasks, limit):
            try:
                with executor.batch():
                    jobs = [executor.submit(TrialBatch([s.to_dict() for s in t], str(store.root),
                                                       settings.trace_memory)) for t in array]
            except Exception as exc:  # sbatch refused: report what was submitted so far
                msg = " ".join(str(exc).split())[:400]
                return _fail(f"sbatch failed after {len(sub['arrays'])} array(s): {msg}")
            job_id = jobs[0].job_id.split("_")[0]
            sub["arrays"].append({"job_id": job_id, "tasks": [
                {"id": j.job_id, "keys": [s.key for s in t]}
                for j, t in zip(jobs, array, strict=True)]})
            _write_log(store, sub)  # at once: a crash after sbatch must not lose the job ids
            print(f"{name}: submitted SLURM job {job_id}: {len(array)} task(s) of up to "
                  f"{settings.trials_per_task} trial(s), at most {settings.array_parallelism} "
                  "at once")
        print(f"{name}: {len(todo)} trial(s) in {len(sub['arrays'])} array job(s) "
              f"(MaxArraySize {limit}); logs in {folder}")
    if not settings.wait:
        print(f"{name}: not waiting; `dpbench status` (same overrides) shows progress, "
              "and `dpbench run` again resubmits what is lost or failed")
        return 0
    return wait(store, [*todo, *busy], settings, name)


def wait(store: ResultStore, specs: Sequence[TrialSpec], settings: SlurmSettings,
         name: str) -> int:
    """Block until every trial is stored or its task has ended; 0 if all are ok."""
    keys = [s.key for s in specs]
    with progress_bar(disable=not settings.progress) as bar:
        task = bar.add_task(name, total=len(keys), status="")
        while True:
            try:
                states = trial_states(store, keys)
            except SlurmError as exc:
                return _fail(str(exc))
            counts = Counter(st.state for st in states.values())
            done = counts[OK] + counts[FAILED] + counts["lost"]
            bar.update(task, completed=done,
                       status=" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
            if done == len(keys):
                break
            time.sleep(settings.poll_s)
    print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    _print_lost(specs, states)
    if counts[OK] != len(keys):
        print(f"{name}: rerun the same command to retry the failed and lost trials",
              file=sys.stderr)
        return 1
    return 0


def _print_lost(specs: Sequence[TrialSpec], states: dict[str, TrialState]) -> None:
    for s in specs:
        st = states[s.key]
        if st.state == "lost":
            what = st.slurm_state or "unknown to squeue and sacct"
            print(f"lost {s.dataset}/{s.method}/{s.epsilon:g}/{s.trial}: SLURM task {st.task} "
                  f"ended {what} without storing it (log {st.folder}/{st.task}_0_log.err)")


def status(cfg: DictConfig, specs: Sequence[TrialSpec], store: ResultStore) -> dict[str, int]:
    """``dpbench status`` hook: counts of queued / running / lost trials (empty if never
    submitted to SLURM); prints one line per lost trial."""
    if not submissions(store):
        return {}
    try:
        states = trial_states(store, [s.key for s in specs])
    except SlurmError as exc:
        print(f"SLURM not reachable, cannot tell running from lost trials: {exc}")
        return {}
    _print_lost(specs, states)
    counts = Counter(st.state for st in states.values())
    return {k: counts[k] for k in ("queued", "running", "lost")}
