"""The per-trial time limit (``time_limit_s``): a trial running past it raises
:class:`TrialTimeout` (stored as a failed record), and the local runner's workers run trials
in their main thread, where the limit applies."""

from __future__ import annotations

import threading
import time

import pytest
from joblib import Parallel, delayed

from dpbench.runner.execute import TrialTimeout, time_limit


def test_a_trial_past_its_limit_is_stopped_and_none_means_no_limit() -> None:
    start = time.perf_counter()
    with pytest.raises(TrialTimeout, match="time limit of 0.2 s"), time_limit(0.2):
        time.sleep(5)
    assert time.perf_counter() - start < 2
    with time_limit(None):
        time.sleep(0.3)                 # no limit: nothing raised
    with time_limit(5):
        time.sleep(0.1)                 # within the limit: nothing raised, alarm cleared


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def test_local_workers_run_trials_in_their_main_thread() -> None:
    # joblib's process backend, as runner/local.py uses it
    assert all(Parallel(n_jobs=2, backend="loky")(delayed(_in_main_thread)() for _ in range(4)))
