"""Fault injection on the result store with real processes and real files (issue 16, items 2
and 4); nothing here mocks the store.

Item 2: every kind of damaged record (JSON that is not an object, bytes that are not UTF-8,
an object missing required fields, a truncated file, an empty file) is reported by
``dpbench status`` (path and why), moved to ``<store>/quarantine/`` with its bytes unchanged,
and recomputed by the next ``dpbench run`` with results identical to an uninterrupted run;
``dpbench figures`` on a store missing a trial marks the cell in the table, the caption and
the legend.

Item 4: two concurrent ``dpbench run`` of one grid (or a local run beside the SLURM task code)
compute each trial exactly once, counted by the computations themselves (every computation
appends a line to ``DPBENCH_COMPUTE_LOG``), not by the files; a lease left by a ``kill -9``'ed
run does not block the rerun, and another machine's lease blocks until its expiry only.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from conftest import REPO, dpbench_cmd, figure_folder, finished_run, run_cli, stored_records

from dpbench.runner.execute import COMPUTE_LOG_ENV, HOLD_ENV
from dpbench.runner.store import ResultStore, parse_record

# 1 dataset x 2 methods x 2 epsilons x 2 trials of the fast methods on smoke data
GRID = ["experiment=linreg_adult", "methods=[public,ssp]", "profile=smoke",
        "runner.progress=false"]
N = 8
#: what an uninterrupted run must reproduce (timings, pids and hosts may differ)
RESULT_FIELDS = ("key", "status", "spec", "metrics", "privacy", "info", "n_train", "n_test",
                 "d")


def _results(results: Path) -> dict[str, dict]:
    return {k: {f: r.get(f) for f in RESULT_FIELDS} for k, r in stored_records(results).items()}


def _computations(log: Path) -> list[tuple[str, str, int]]:
    """(key, host, pid) of every trial computation logged, in order."""
    if not log.exists():
        return []
    rows = [line.split() for line in log.read_text().splitlines()]
    return [(k, h, int(p)) for k, h, p in rows]


def _summary(out: str) -> tuple[int, Counter[str]]:
    """(trials to run, outcome counts) from a ``dpbench run``'s output."""
    to_run = int(re.search(r"(\d+) to run", out).group(1))
    last = [line for line in out.splitlines() if line.startswith("linreg_adult: ")][-1]
    counts: Counter[str] = Counter()
    if "to run" not in last:
        for part in last.removeprefix("linreg_adult: ").split(", "):
            what, _, n = part.rpartition(" ")
            counts[what] = int(n)
    return to_run, counts


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grid run once, uninterrupted: the reference for every test."""
    return finished_run(tmp_path_factory.mktemp("clean") / "results", GRID, N)


def _copy(clean: Path, tmp_path: Path) -> tuple[Path, str, Path]:
    """A copy of the clean results, one of its trial keys and that record's path."""
    results = tmp_path / "results"
    shutil.copytree(clean, results)
    key = sorted(stored_records(results))[3]
    return results, key, ResultStore(results / "store").path(key)


# --- item 2: damaged records ----------------------------------------------------------------

def _damage(path: Path, kind: str) -> bytes:
    """Overwrite the record at ``path`` with a damaged one of ``kind``; the bytes written."""
    good = path.read_bytes()
    record = json.loads(good)
    data = {
        "json list": b"[]",
        "not utf-8": b"\xff\xfe\x00{\"key\": \xe9}",
        "missing fields": json.dumps({k: v for k, v in record.items()
                                      if k not in ("metrics", "timing")}).encode(),
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "string metric": json.dumps({**record, "metrics": {
            **record["metrics"], "mse": str(record["metrics"]["mse"])}}).encode(),
    }[kind]
    path.write_bytes(data)
    return data


REASONS = {"json list": "valid JSON but a list", "not utf-8": "not UTF-8 text",
           "missing fields": "missing field(s) metrics, timing",
           "truncated": "not valid JSON", "empty": "empty file",
           "string metric": "not a number: metrics.mse is a string"}


def _good_record() -> dict:
    return {"key": "k" * 64, "status": "ok", "spec": {}, "metrics": {"mse": 0.5, "r2": 0.1},
            "privacy": {"target_delta": 1e-5}, "timing": {"fit_s": 1.0}}


# every kind of record that parses but lies about its numbers (each was once averaged)
LYING = {
    "string metric": ({"metrics": {"mse": "0.5"}}, "metrics.mse is a string"),
    "boolean metric": ({"metrics": {"mse": True}}, "metrics.mse is a boolean"),
    "list metric": ({"metrics": {"mse": [0.5]}}, "metrics.mse is a list"),
    "object metric": ({"metrics": {"mse": {"v": 0.5}}}, "metrics.mse is an object"),
    "empty metrics": ({"metrics": {}}, "without any metric"),
    "string delta": ({"privacy": {"target_delta": "1e-5"}}, "privacy.target_delta is a string"),
    "boolean delta": ({"privacy": {"target_delta": False}}, "privacy.target_delta is a boolean"),
    "null fit time": ({"timing": {"fit_s": None}}, "timing.fit_s is null"),
}


# every kind of parsed JSON that is not a usable record of its file's trial
NOT_A_RECORD = {
    "json number": (3, "valid JSON but a number"),
    "json string": ("ok", "valid JSON but a string"),
    "json null": (None, "valid JSON but null"),
    "unknown status": ({"status": "done"}, "status 'done' is neither"),
    "another trial's record": ({"key": "j" * 64}, "holds the record of trial jjjj"),
    "no key": ({"key": None}, "missing field(s) key"),
    "metrics a list": ({"metrics": [0.5]}, "metrics is a list"),
    "spec a string": ({"spec": "x"}, "spec is a string"),
    "no target_delta": ({"privacy": {}}, "missing field(s) privacy.target_delta"),
    "no fit time": ({"timing": {}}, "missing field(s) timing.fit_s"),
}


@pytest.mark.parametrize("kind", list(NOT_A_RECORD))
def test_json_that_is_not_a_usable_record_is_damaged(kind: str) -> None:
    """Together with REASONS and LYING: 23 kinds of damaged record, each refused with its
    reason (the store quarantines what parse_record refuses and run recomputes it)."""
    change, reason = NOT_A_RECORD[kind]
    good = _good_record()
    if isinstance(change, dict):
        record = {k: v for k, v in {**good, **change}.items() if v is not None}
    else:
        record = change
    parsed = parse_record(json.dumps(record).encode(), good["key"])
    assert isinstance(parsed, str) and reason in parsed, parsed


@pytest.mark.parametrize("kind", list(LYING))
def test_a_record_whose_numbers_are_not_numbers_is_damaged(kind: str) -> None:
    change, reason = LYING[kind]
    record = {**_good_record(), **change}
    parsed = parse_record(json.dumps(record).encode(), record["key"])
    assert isinstance(parsed, str) and reason in parsed, parsed


def test_nan_null_and_integer_metrics_are_accepted() -> None:
    # execute writes an undefined metric (nan, inf) as null; NaN / Infinity literals and
    # integers are numbers too
    record = {**_good_record(), "metrics": {"mse": float("nan"), "n": 3, "r2": float("inf"),
                                            "se_0": None}}
    parsed = parse_record(json.dumps(record).encode(), record["key"])
    assert isinstance(parsed, dict) and math.isnan(parsed["metrics"]["mse"])
    assert parsed["metrics"]["se_0"] is None


@pytest.mark.parametrize("kind", list(REASONS))
def test_damaged_record_is_reported_quarantined_and_recomputed(clean: Path, tmp_path: Path,
                                                               kind: str) -> None:
    results, key, path = _copy(clean, tmp_path)
    kept = [r for k, r in stored_records(results).items() if k != key]
    data = _damage(path, kind)

    status = run_cli("status", *GRID, f"results_dir={results}")
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    line = next(x for x in status.stdout.splitlines() if x.startswith("damaged record"))
    assert str(path) in line and REASONS[kind] in line, line
    assert f"total: ok {N - 1}, failed 0, pending 1" in status.stdout, status.stdout
    # the cost line sums the recorded timings of the ok trials only (not the damaged one)
    hours = sum(sum(r["timing"].values()) for r in kept) / 3600
    assert f"trial time of the ok trials: {hours:.2f} h in {N - 1} trials" in status.stdout
    assert not path.exists()  # moved aside, not deleted: the same bytes are in quarantine
    (entry,) = ResultStore(results / "store").quarantined()
    assert entry.key == key and entry.origin == str(path) and REASONS[kind] in entry.reason
    assert entry.path.read_bytes() == data and str(entry.path) in line
    again = run_cli("status", *GRID, f"results_dir={results}").stdout
    assert "quarantined " in again and "the next run recomputes it" in again, again

    log = tmp_path / "computations"
    run = run_cli("run", *GRID, f"results_dir={results}", env={COMPUTE_LOG_ENV: str(log)},
                  check=True)
    assert f"{N} trials, {N - 1} already done, 1 to run" in run.stdout, run.stdout
    assert _summary(run.stdout)[1] == Counter({"ok": 1})
    assert [k for k, _, _ in _computations(log)] == [key]
    assert _results(results) == _results(clean)
    assert entry.path.read_bytes() == data  # the quarantine keeps it after the rerun


@pytest.mark.parametrize("command", ["run", "figures"])
def test_run_and_figures_quarantine_a_damaged_record_without_status_first(
        clean: Path, tmp_path: Path, command: str) -> None:
    results, key, path = _copy(clean, tmp_path)
    data = _damage(path, "json list")
    proc = run_cli(command, *GRID, f"results_dir={results}")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"damaged record {path}" in proc.stdout + proc.stderr
    (entry,) = ResultStore(results / "store").quarantined()
    assert entry.path.read_bytes() == data
    if command == "run":
        assert _results(results) == _results(clean)


def test_figures_mark_a_cell_missing_a_trial(clean: Path, tmp_path: Path) -> None:
    results, key, path = _copy(clean, tmp_path)
    spec = json.loads(path.read_bytes())["spec"]
    path.unlink()  # a trial never stored (lost, failed or quarantined: the same to figures)
    proc = run_cli("figures", *GRID, f"results_dir={results}", check=True)
    assert "1 cell(s) hold fewer trials than the grid asks" in proc.stderr, proc.stderr
    out = figure_folder(*GRID, f"results_dir={results}")
    md = (out / "mse_vs_eps.md").read_text()
    cell = f"/ epsilon={spec['epsilon']:g}: 1 of 2 trials"
    assert "INCOMPLETE: 1 cell(s)" in md and cell in md, md
    assert md.count("[1/2 trials]") == 1, md  # the cell itself, and no other
    tex = (out / "mse_vs_eps.tex").read_text()
    assert "incomplete: some cells hold fewer trials" in tex and "[1/2 trials]" in tex
    assert "INCOMPLETE: 1 cell(s)" in (out / "claims.md").read_text()
    complete = results.parent / "complete"
    shutil.copytree(clean, complete)
    run_cli("figures", *GRID, f"results_dir={complete}", check=True)
    md_ok = (figure_folder(*GRID, f"results_dir={complete}") / "mse_vs_eps.md").read_text()
    assert "INCOMPLETE" not in md_ok and "trials]" not in md_ok


def test_the_figure_says_so_in_its_caption_and_legend(clean: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same store as above, drawn in this process to read the figure's texts."""
    import importlib

    from dpbench.workspace import build_figures, compose_config

    kind = importlib.import_module("dpbench.report.kinds.metric_vs_eps")

    results, key, path = _copy(clean, tmp_path)
    path.unlink()
    drawn = []

    def keep(fig, stem):  # the real save, keeping the figure to read its texts
        drawn.append(fig)
        return save(fig, stem)

    save = kind.save
    monkeypatch.setattr(kind, "save", keep)
    build_figures(compose_config([*GRID, f"results_dir={results}"]))
    (fig,) = drawn
    texts = [t.get_text() for t in fig.texts]
    assert any(t.startswith("INCOMPLETE: 1 cell(s)") and "1 of 2 trials" in t for t in texts)
    labels = [t.get_text() for ax in fig.axes if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    assert len(labels) == 2 and sum(x.endswith(" [incomplete]") for x in labels) == 1, labels


# --- item 4: concurrent runs and leases -----------------------------------------------------

def _start(results: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(dpbench_cmd("run", *GRID, f"results_dir={results}", *extra),
                            cwd=REPO, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, (out, err)
    return out


@pytest.mark.parametrize("n_jobs", ["1", "2"])
def test_two_concurrent_runs_compute_each_trial_exactly_once(clean: Path, tmp_path: Path,
                                                             n_jobs: str) -> None:
    results, log = tmp_path / "results", tmp_path / "computations"
    env = {COMPUTE_LOG_ENV: str(log), HOLD_ENV: "1.0"}  # each trial holds its lease 1 s
    runs = [_start(results, env, f"runner.n_jobs={n_jobs}") for _ in range(2)]
    outs = [_finish(p) for p in runs]

    done = _computations(log)
    assert sorted(k for k, _, _ in done) == sorted(stored_records(clean)), done  # once each
    oks = 0
    for out in outs:
        to_run, counts = _summary(out)
        assert set(counts) <= {"ok", "done by another run"}, out
        assert counts["ok"] + counts["done by another run"] == to_run, out
        assert counts["ok"] >= 1, f"the runs did not overlap, no contention was tested: {out}"
        oks += counts["ok"]
    assert oks == N  # the two summaries split the grid: no trial reported ok twice
    assert _results(results) == _results(clean)
    assert not list((results / "store" / "leases").glob("*.json"))  # every lease released


def test_local_run_beside_the_slurm_task_code_computes_each_trial_once(
        clean: Path, tmp_path: Path) -> None:
    """A SLURM array task runs ``slurm.TrialBatch``; here one runs in a real process beside a
    local run of the same grid (the cluster itself is tested in test_slurm.py)."""
    from dpbench.workspace import compose_config, grid

    results, log = tmp_path / "results", tmp_path / "computations"
    specs = grid(compose_config([*GRID, f"results_dir={results}"]))
    spec_file = tmp_path / "specs.json"
    spec_file.write_text(json.dumps([s.to_dict() for s in specs]))
    env = {COMPUTE_LOG_ENV: str(log), HOLD_ENV: "1.0"}
    task = subprocess.Popen(
        [sys.executable, "-c", "import json, sys\n"
         "from dpbench.runner.slurm import TrialBatch\n"
         "specs = json.load(open(sys.argv[1]))\n"
         "print(json.dumps(TrialBatch(specs, sys.argv[2], poll_s=0.5)()))",
         str(spec_file), str(results / "store")],
        cwd=REPO, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    local = _start(results, env)
    out_local = _finish(local)
    out_task = _finish(task)

    done = _computations(log)
    assert sorted(k for k, _, _ in done) == sorted(stored_records(clean)), done
    task_counts = json.loads(out_task.strip().splitlines()[-1])
    assert sum(task_counts.values()) == N and set(task_counts) <= {"ok", "done by another run"}
    to_run, counts = _summary(out_local)
    assert counts["ok"] + task_counts["ok"] == N and counts["ok"] + counts[
        "done by another run"] == to_run
    assert counts["ok"] >= 1 and task_counts["ok"] >= 1, "the task and the run did not overlap"
    assert _results(results) == _results(clean)


def test_lease_of_a_killed_run_does_not_block_the_rerun(clean: Path, tmp_path: Path) -> None:
    results, log = tmp_path / "results", tmp_path / "computations"
    run = _start(results, {COMPUTE_LOG_ENV: str(log), HOLD_ENV: "600"}, "runner.n_jobs=1")
    leases = results / "store" / "leases"
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not list(leases.glob("*.json")):
            time.sleep(0.05)
        (lease,) = list(leases.glob("*.json"))  # the run holds its first trial
        time.sleep(0.5)  # its contents written
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
    assert lease.exists() and json.loads(lease.read_text())["pid"] == run.pid
    assert not stored_records(results)

    status = run_cli("status", *GRID, f"results_dir={results}").stdout
    assert "computing" not in status, status  # a dead holder's lease is stale at once
    start = time.time()
    out = run_cli("run", *GRID, f"results_dir={results}", env={COMPUTE_LOG_ENV: str(log)},
                  check=True).stdout
    assert time.time() - start < 120  # far below the lease's 15-minute expiry
    assert _summary(out) == (N, Counter({"ok": N}))
    done = _computations(log)
    assert len(done) == N + 1 and done[0][0] == lease.stem  # the killed attempt, then N
    assert sorted(k for k, _, _ in done[1:]) == sorted(stored_records(clean))
    assert _results(results) == _results(clean)


def test_another_machines_lease_blocks_until_its_expiry(clean: Path, tmp_path: Path) -> None:
    """A lease from another host is not judged by its pid: it holds the trial until its
    expiry; ``status`` shows the trial as computing, and the run waits, then computes it."""
    results, log = tmp_path / "results", tmp_path / "computations"
    results.mkdir()
    (stale_key, live_key) = sorted(stored_records(clean))[:2]
    leases = results / "store" / "leases"
    leases.mkdir(parents=True)
    host = f"not-{socket.gethostname()}"

    def lease(key: str, ttl: float) -> float:
        expires = time.time() + ttl
        (leases / f"{key}.json").write_text(json.dumps({
            "key": key, "token": "elsewhere", "host": host, "boot_id": "x", "pid_ns": "y",
            "pid": 1, "expires_unix": expires}))
        return expires

    lease(stale_key, -60.0)
    lease(live_key, 600.0)
    status = run_cli("status", *GRID, f"results_dir={results}").stdout
    assert "computing 1" in status and f"on {host}" in status, status

    # the live lease expires 20 s after the run starts (written only now, so a slow
    # `status` under load does not eat into it); the run must not start that trial before
    expires = lease(live_key, 20.0)
    out = run_cli("run", *GRID, f"results_dir={results}", env={COMPUTE_LOG_ENV: str(log)},
                  check=True).stdout
    assert _summary(out) == (N, Counter({"ok": N}))
    keys = [k for k, _, _ in _computations(log)]
    assert sorted(keys) == sorted(stored_records(clean))
    started = datetime.fromisoformat(stored_records(results)[live_key]["started_at"]).timestamp()
    assert started >= expires, (started, expires)  # it waited for the live lease's expiry
    assert _results(results) == _results(clean)


ARENA = ["experiment=arena_regression", "profile=smoke", "methods=[mean,adassp]",
         "runner.progress=false"]


def test_leaderboard_names_and_quarantines_a_damaged_record(tmp_path: Path) -> None:
    """Issue 59, defect 8: ``leaderboard`` treats a damaged record as ``run`` and
    ``figures`` do (named, moved to the quarantine, its trial counted as missing), instead
    of skipping it silently."""
    results = tmp_path / "results"
    run_cli("run", *ARENA, f"results_dir={results}", check=True)
    store = ResultStore(results / "store")
    path = store.path(sorted(stored_records(results))[0])
    data = _damage(path, "json list")
    proc = run_cli("leaderboard", *ARENA, f"results_dir={results}")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"damaged record {path}" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    (entry,) = store.quarantined()
    assert entry.path.read_bytes() == data
