"""Local backend: joblib worker processes, a progress bar, results written by the workers.

Workers never outlive the run that started them. Each loky worker runs
:func:`die_with_parent` first: on Linux the kernel sends it SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)``, so even ``kill -9`` of the parent stops it), elsewhere a
thread polls the parent pid once a second. SIGTERM to the parent raises :class:`Terminated`
in its main thread, which makes joblib abort and kill the workers (``kill_workers=True``).
Either way only trials in flight are lost: finished ones are already in the store, written
atomically by the worker itself (runner/store.py), and the next run computes the rest.

Workers are started with ``PYTHONHASHSEED`` = ``compile_cache.HASH_SEED`` unless the user
set it (loky starts them with this process's environment): mbi's traced programs, hence
the keys of the persistent JAX compile cache, depend on the hash seed, so one seed lets
every worker and later run load the programs another one compiled.

Every trial runs through ``execute.run_trial``, which computes it only under its lease
(``ResultStore.claim``), so runs sharing a store split the grid: a trial another live run
holds is asked again after the others until that run has stored it (counted "done by
another run") or died (then computed here); a killed run's leases are stale at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from types import FrameType

from joblib import Parallel, delayed

from dpbench import compile_cache
from dpbench.runner.execute import HELD, run_trial
from dpbench.runner.grid import costliest_first
from dpbench.runner.progress import progress_bar
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import FAILED, OK

PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Terminated(BaseException):
    """SIGTERM reached the run (a BaseException, so no trial records it as its own failure)."""


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies; False if unsupported.

    The kernel tracks the thread that forked this process: loky forks workers from the
    main thread or its executor-manager thread, both of which outlive the workers."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_parent(parent_pid: int, interval_s: float = 1.0) -> None:
    """Kill this process as soon as its parent is no longer ``parent_pid`` (it died and the
    process was re-parented): the portable fallback of the parent-death signal."""
    while os.getppid() == parent_pid:
        time.sleep(interval_s)
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent(parent_pid: int, use_prctl: bool = True) -> None:
    """Worker initializer: end this worker when the run ``parent_pid`` dies.

    Uses the parent-death signal where the kernel has one (``use_prctl``), else a daemon
    thread running :func:`watch_parent`. A parent that died before this ran is caught by
    comparing the current parent pid with ``parent_pid``.
    """
    if not (use_prctl and set_parent_death_signal()):
        threading.Thread(target=watch_parent, args=(parent_pid,), daemon=True,
                         name="dpbench-watch-parent").start()
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (a no-op in
    other threads, which cannot set signal handlers); the old handler is restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_keyed(key: str, spec: dict, store_root: str, trace_memory: bool,
              since: float, defer: bool = False) -> tuple[str, str]:
    """:func:`run_trial` in a worker: (the trial's key, its outcome)."""
    return key, run_trial(spec, store_root, trace_memory=trace_memory, since=since,
                          defer=defer)


def summary(counts: Counter[str]) -> str:
    """``ok 40, done by another run 44``: the non-zero outcome counts, computed ones first."""
    first = [OK, FAILED]
    order = first + sorted(k for k in counts if k not in first)
    return ", ".join(f"{k} {counts[k]}" for k in order if counts[k])


def run_local(specs: Sequence[TrialSpec], store_root: str, *, n_jobs: int = 1,
              progress: bool = True, trace_memory: bool = False,
              description: str = "trials", poll_s: float = 2.0) -> Counter[str]:
    """Run ``specs`` (already filtered to pending ones) and return counts by outcome
    (``run_trial``'s: ok, failed, done by another run, failed in another run).

    With ``n_jobs == 1`` trials run in this process; otherwise in joblib's loky
    worker processes (``-1``: one per core), which die with this process (see the module
    docstring). Each worker writes its own result file, so killing this process at any
    point loses at most the trials in flight. SIGTERM raises :class:`Terminated`.

    Trials are dispatched in :func:`~dpbench.runner.grid.costliest_first` order. Trials
    held by another live run (its lease) are asked again every ``poll_s`` seconds after the
    others, until that run has stored them or died (then they are computed here): when this
    returns, every trial has an outcome.
    """
    counts: Counter[str] = Counter()
    since = time.time()
    by_key = {s.key: s for s in costliest_first(specs)}
    with sigterm_raises(), progress_bar(disable=not progress) as bar:
        task = bar.add_task(description, total=len(by_key), status="")
        todo = list(by_key.values())
        while todo:
            held = []
            with closing(_round(todo, store_root, n_jobs, trace_memory, since)) as outcomes:
                for key, outcome in outcomes:  # closed on Terminated: the workers are killed
                    if outcome == HELD:
                        held.append(by_key[key])
                        continue
                    counts[outcome] += 1
                    bar.update(task, advance=1, status=summary(counts))
            todo = held
            if todo:
                bar.update(task, status=f"{summary(counts)}; waiting for {len(todo)} "
                                        "trial(s) held by another run or awaiting a shared "
                                        "artifact")
                time.sleep(poll_s)
    return counts


#: a ``PYTHONWARNINGS`` entry for the notes loky's resource tracker (a process started with
#: this environment) prints at exit after workers were stopped abruptly (a full disk,
#: SIGTERM): "resource_tracker: There appear to be 1 leaked semlock objects to clean up",
#: which it then cleans up itself. Printed after the run's one-line message, they would
#: bury it (seen under load in tests/core/test_disk_full.py's real full tmpfs).
TRACKER_NOTES = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Add :data:`TRACKER_NOTES` to ``PYTHONWARNINGS`` (kept: whatever the user set there)."""
    current = os.environ.get("PYTHONWARNINGS", "")
    if TRACKER_NOTES not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [current, TRACKER_NOTES]))


def _round(specs: Sequence[TrialSpec], store_root: str, n_jobs: int, trace_memory: bool,
           since: float) -> Iterator[tuple[str, str]]:
    """One pass over ``specs``: (key, outcome) as each trial ends, in this process or in
    loky workers; interrupted (Terminated, KeyboardInterrupt), the workers are killed."""
    if n_jobs == 1:
        for s in specs:
            yield run_keyed(s.key, s.to_dict(), store_root, trace_memory, since)
        return
    compile_cache.pin_hash_seed()   # workers inherit it: one hash seed, cache keys found again
    compile_cache.pin_xla_threads()  # one XLA thread per worker: n workers, n cores
    quiet_resource_tracker()
    # defer: a worker that needs a shared artifact another worker is building (e.g. a
    # release or a public pre-training) takes the next trial instead of waiting on the lock
    results = Parallel(n_jobs=n_jobs, return_as="generator_unordered", batch_size=1,
                       initializer=die_with_parent, initargs=(os.getpid(),))(
        delayed(run_keyed)(s.key, s.to_dict(), store_root, trace_memory, since, True)
        for s in specs)
    try:
        yield from results
    except BaseException:  # Terminated, KeyboardInterrupt: closing makes joblib kill the
        with warnings.catch_warnings():  # workers; its "tasks not used" warning is moot,
            warnings.simplefilter("ignore")  # their results are in the store
            results.close()
        raise
