"""Fault injection with real processes, signals and files (issue 16, items 1 and 3).

Bad input of every kind listed in the issue is refused by a real ``dpbench`` process with exit
status 2 and exactly one line on stderr, before any trial starts. Killing the parent of a real
two-worker run (``kill -9``, SIGTERM) leaves no worker alive and loses no finished trial; the
rerun computes exactly the missing ones. Nothing here mocks the store or the workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, dpbench_cmd, run_cli

SMOKE = ["experiment=linreg_adult", "methods=[public]", "profile=smoke", "runner.progress=false"]


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _one_line_refusal(proc: subprocess.CompletedProcess[str], *must: str) -> str:
    """The refusal contract: exit status 2, one stderr line holding every string in ``must``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for text in must:
        assert text in lines[0], (text, lines[0])
    return lines[0]


# --- item 1: bad input -> exit 2, one line, nothing computed ------------------------------

@pytest.mark.parametrize(("override", "must"), [
    ("runner.n_jobs=0", ["runner.n_jobs=0", ">= 1", "-1 (one per core)"]),
    ("runner.n_jobs=abc", ["runner.n_jobs='abc'", ">= 1", "-1 (one per core)"]),
    ("runner.n_jobs=-5", ["runner.n_jobs=-5", ">= 1", "-1 (one per core)"]),
    ("runner.n_jobs=1.5", ["runner.n_jobs=1.5", "whole number"]),
    ("trials=abc", ["trials='abc'", "whole number >= 1"]),
    ("epsilons=[]", ["epsilons=[]", "at least one value"]),
    ("epsilonz=[1]", ["'epsilonz'", "valid top-level keys:", "epsilons, experiment"]),
    ("+epsilonz=[1]", ["'epsilonz'", "valid top-level keys:", "epsilons, experiment"]),
])
def test_bad_override_is_refused_before_any_trial(tmp_path: Path, override: str,
                                                  must: list[str]) -> None:
    results = tmp_path / "results"
    proc = run_cli("run", *SMOKE, override, f"results_dir={results}")
    _one_line_refusal(proc, *must)
    assert _files(results) == []  # no record, no cache, no folder: nothing started


@pytest.mark.parametrize("where", ["deflate stream", "middle", "crc trailer"])
def test_gzip_with_flipped_bytes_is_the_one_line_corruption_error(tmp_path: Path,
                                                                  where: str) -> None:
    """Flipped bytes early in the stream fail zlib's inflate, in the middle or the trailer
    gzip's CRC / length check; each must read like the sha256 mismatch of any other damage."""
    data = tmp_path / "data"
    shutil.copytree(REPO / "data" / "ddssp_adult", data / "ddssp_adult")
    target = data / "ddssp_adult" / "adult.csv.gz"
    blob = bytearray(target.read_bytes())
    pos = {"deflate stream": 20, "middle": len(blob) // 2, "crc trailer": len(blob) - 6}[where]
    for i in range(pos, pos + 3):
        blob[i] ^= 0xFF
    target.write_bytes(bytes(blob))
    results = tmp_path / "results"
    proc = run_cli("run", *SMOKE, f"results_dir={results}", env={"DPBENCH_DATA_DIR": str(data)})
    _one_line_refusal(proc, "checksum mismatch for", str(target), "restore it")
    assert _files(results) == []


def _file_in_the_way(tmp_path: Path) -> Path:
    """A results_dir no user can write: its parent is a regular file (ENOTDIR). Unlike a
    chmod'ed folder, this holds for root too (root ignores permission bits)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where a folder should be\n")
    return blocker / "results"


def test_unwritable_results_dir_is_refused_before_any_trial(tmp_path: Path) -> None:
    results = _file_in_the_way(tmp_path)
    proc = run_cli("run", *SMOKE, f"results_dir={results}")
    _one_line_refusal(proc, f"results_dir={results}", "not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits; the "
                    "path-under-a-file cases cover root")
def test_read_only_results_dir_is_refused_before_any_trial(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o555)
    try:
        proc = run_cli("run", *SMOKE, f"results_dir={results}")
    finally:
        results.chmod(0o755)
    _one_line_refusal(proc, f"results_dir={results}", "ermission denied")
    assert _files(results) == []


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding a finished 4-trial smoke run."""
    results = tmp_path_factory.mktemp("stored") / "results"
    run_cli("run", *SMOKE, f"results_dir={results}", check=True)
    return results


@pytest.mark.parametrize("blocked", ["figures", "figures/linreg_adult-smoke"])
def test_figures_into_an_unwritable_folder_is_refused(stored: Path, tmp_path: Path,
                                                      blocked: str) -> None:
    results = tmp_path / "results"
    shutil.copytree(stored, results)
    (results / blocked).parent.mkdir(parents=True, exist_ok=True)
    (results / blocked).write_text("a regular file where the figure folder should be\n")
    before = {p: p.read_bytes() for p in _files(results)}
    proc = run_cli("figures", "experiment=linreg_adult", "profile=smoke",
                   f"results_dir={results}")
    _one_line_refusal(proc, str(results / blocked), "not a directory", "results_dir=")
    assert {p: p.read_bytes() for p in _files(results)} == before


# --- item 3: the workers die with their parent ----------------------------------------

# 60 trials of fast methods on smoke data: two workers are busy for a few seconds
GRID = ["run", "experiment=linreg_adult", "methods=[public,ssp,adassp]", "profile=smoke",
        "profile.trials=null", "trials=10", "runner.progress=false", "runner.n_jobs=2"]
N_TRIALS = 3 * 2 * 10


def _records(results: Path) -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in (results / "store" / "trials").glob("*/*.json")
            if not p.name.startswith(".")}  # ".tmp-*": a write cut short by a kill


def _procs() -> dict[int, tuple[str, int, str]]:
    """Every process: pid -> (state, parent pid, start time), from /proc."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(d.name)] = (fields[0], int(fields[1]), fields[19])
    return out


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every descendant of ``root`` (workers, resource trackers)."""
    procs, found, todo = _procs(), {}, [root]
    while todo:
        parent = todo.pop()
        for pid, (_, ppid, start) in procs.items():
            if ppid == parent and pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def _alive(pids: dict[int, str]) -> list[int]:
    """Those of ``pids`` still running (same start time, so a reused pid does not count;
    a zombie waiting for init to reap it is dead)."""
    procs = _procs()
    return [p for p, start in pids.items()
            if p in procs and procs[p][2] == start and procs[p][0] not in "ZX"]


def _reap(proc: subprocess.Popen[bytes], pids: dict[int, str]) -> None:
    """Kill whatever of a run is left (its process group, then ``pids``): a failing test
    must not leave workers running on a shared machine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in _alive(pids):
        os.kill(pid, signal.SIGKILL)
    proc.wait()


def _start_and_wait_for_workers(results: Path, stderr: Path
                                ) -> tuple[subprocess.Popen[bytes], dict[int, str]]:
    """A real two-worker run in its own session, caught mid-sweep: >= 4 trials stored, both
    workers running. Returns it with its descendants, listed before any signal is sent.
    Its stderr goes to a file, not a pipe an orphaned worker could hold open."""
    with stderr.open("wb") as err:
        proc = subprocess.Popen(dpbench_cmd(*GRID, f"results_dir={results}"), cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    children: dict[int, str] = {}
    try:
        deadline = time.time() + 300
        while time.time() < deadline and len(_records(results)) < 4 and proc.poll() is None:
            time.sleep(0.05)
        children = _descendants(proc.pid)
        workers = [p for p in children if b"loky.backend.popen_loky_posix"
                   in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(workers) == 2, f"expected 2 loky workers among {children}"
        n = len(_records(results))
        assert 4 <= n < N_TRIALS, f"caught at {n} trials; the test needs a partial run"
    except BaseException:
        _reap(proc, children)
        raise
    return proc, children


def _wait_until_dead(pids: dict[int, str], timeout_s: float) -> list[int]:
    deadline = time.time() + timeout_s
    while _alive(pids) and time.time() < deadline:
        time.sleep(0.1)
    return _alive(pids)


@pytest.mark.slow
def test_kill_9_of_the_parent_stops_its_workers_and_rerun_adds_the_rest(tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc, children = _start_and_wait_for_workers(results, tmp_path / "stderr")
    try:
        os.kill(proc.pid, signal.SIGKILL)  # the parent alone, not its process group
        proc.wait()
        survivors = _wait_until_dead(children, timeout_s=5)
    finally:
        _reap(proc, children)
    assert not survivors, f"processes of the killed run still alive after 5 s: {survivors}"

    kept = _records(results)
    time.sleep(1)
    assert _records(results) == kept  # nobody writes any more
    assert all(json.loads(b)["status"] == "ok" for b in kept.values())
    out = run_cli(*GRID, f"results_dir={results}", check=True).stdout
    missing = N_TRIALS - len(kept)
    assert f"{N_TRIALS} trials, {len(kept)} already done, {missing} to run" in out, out
    assert f"ok {missing}" in out, out
    after = _records(results)
    assert len(after) == N_TRIALS and all(json.loads(b)["status"] == "ok" for b in after.values())
    assert {k: after[k] for k in kept} == kept  # finished trials untouched, not recomputed


def test_sigterm_to_the_parent_stops_its_workers_and_keeps_finished_trials(
        tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc, children = _start_and_wait_for_workers(results, tmp_path / "stderr")
    try:
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=60)
        survivors = _wait_until_dead(children, timeout_s=5)
    finally:
        _reap(proc, children)
    err = (tmp_path / "stderr").read_text()
    assert code == 128 + signal.SIGTERM, (code, err)
    assert "terminated (SIGTERM)" in err and "Traceback" not in err, err
    assert not survivors, f"processes of the terminated run still alive after 5 s: {survivors}"
    kept = _records(results)
    assert 4 <= len(kept) < N_TRIALS
    assert all(json.loads(b)["status"] == "ok" for b in kept.values())


# the portable fallback (a thread polling the parent pid) and the Linux parent-death signal,
# each in a real grandchild whose parent is killed with SIGKILL
_GRANDCHILD = """
import os, sys, time
from dpbench.runner.local import die_with_parent
die_with_parent(os.getppid() + int(sys.argv[2]), use_prctl=sys.argv[1] == "prctl")
print("ready", flush=True)
time.sleep(60)
"""
_PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]],
                         stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("mode", ["prctl", "watchdog"])
def test_worker_guard_kills_the_worker_when_its_parent_dies(mode: str) -> None:
    if mode == "prctl" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _GRANDCHILD, mode, "0"],
                              cwd=REPO, stdout=subprocess.PIPE, start_new_session=True)
    child: dict[int, str] = {}
    try:
        pid = int(parent.stdout.readline())
        child = {pid: _procs()[pid][2]}
        assert _alive(child), "the guard must not kill a worker whose parent lives"
        parent.kill()  # SIGKILL to the parent alone
        parent.wait()
        survivors = _wait_until_dead(child, timeout_s=5)
    finally:
        _reap(parent, child)
        parent.stdout.close()
    assert not survivors


def test_worker_guard_kills_a_worker_whose_parent_died_before_the_guard() -> None:
    """The race: the worker starts, its parent dies, then the initializer runs."""
    proc = subprocess.run([sys.executable, "-c", _GRANDCHILD, "prctl", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL and "ready" not in proc.stdout
