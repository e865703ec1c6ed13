"""What a SLURM cluster says about its limits and its jobs (scontrol, squeue, sacct).

Only the cluster's own command-line tools are asked. squeue is the live truth while
slurmctld still holds a job (MinJobAge after it ends); sacct (slurmdbd) covers jobs it
has forgotten, including tasks that were killed hard (scancel, out of memory, time limit).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable

#: Slurm job states of a task that is still coming or going: queued or running.
ACTIVE_STATES = {
    "PENDING": "queued", "REQUEUED": "queued", "REQUEUE_HOLD": "queued",
    "REQUEUE_FED": "queued", "SUSPENDED": "queued", "RESV_DEL_HOLD": "queued",
    "CONFIGURING": "running", "RUNNING": "running", "COMPLETING": "running",
    "SIGNALING": "running", "STAGE_OUT": "running", "RESIZING": "running",
    "STOPPED": "running",
}


class SlurmError(RuntimeError):
    """The SLURM tools are missing or refused a request (one-line message)."""


def _run(cmd: list[str]) -> str | None:
    """stdout of ``cmd``, or None if the tool is missing, fails or hangs."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def max_array_size() -> int:
    """The cluster's MaxArraySize: an array may hold at most this many tasks (0..N-1)."""
    out = _run(["scontrol", "show", "config"])
    if out is None:
        raise SlurmError("`scontrol show config` failed: is this a SLURM cluster (scontrol "
                         "on PATH, slurmctld reachable)? For one machine see docs/slurm.md")
    m = re.search(r"^MaxArraySize\s*=\s*(\d+)", out, re.MULTILINE)
    if not m:
        raise SlurmError("MaxArraySize not found in `scontrol show config`")
    return int(m.group(1))


def _expand(job_id: str) -> list[str]:
    """``12_[0-2,5%2]`` -> ``12_0 12_1 12_2 12_5``; plain ids are returned as they are."""
    m = re.fullmatch(r"(\d+)_\[([0-9,\-]+)(?:%\d+)?\]", job_id)
    if not m:
        return [job_id]
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        out += [f"{m.group(1)}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def _parse(text: str | None) -> dict[str, str]:
    states: dict[str, str] = {}
    for line in (text or "").splitlines():
        job, _, state = line.strip().partition("|")
        if job and state:
            for task in _expand(job):
                states[task] = state.split()[0]  # "CANCELLED by 0" -> "CANCELLED"
    return states


def task_states(job_ids: Iterable[str]) -> dict[str, str]:
    """Slurm state of every task ``<job>_<index>`` of the given array jobs that Slurm knows.

    sacct first, then squeue on top (it is current; accounting lags by seconds).
    A task missing from the result is unknown to both (just submitted, or purged).
    """
    if shutil.which("squeue") is None:
        raise SlurmError("squeue not found: SLURM tools are not on PATH")
    ids = sorted({str(j) for j in job_ids}, key=int)
    states: dict[str, str] = {}
    for i in range(0, len(ids), 200):
        chunk = ",".join(ids[i:i + 200])
        states.update(_parse(_run(["sacct", "-X", "-n", "-P", "-o", "JobID,State",
                                   "-j", chunk])))
        states.update(_parse(_run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T",
                                   "-j", chunk])))
    return states
