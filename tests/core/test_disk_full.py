"""A full disk during ``dpbench run``, ``figures`` and ``site`` (issue 39, item 3): one line
naming the folder and its free space, exit 2, every finished record kept byte for byte, and
after space is freed the rerun computes exactly the missing trials.

Two ways to fill a disk: a quota injected into the CLI's processes (a ``sitecustomize`` on
their path adds an audit hook that refuses, with ENOSPC, to open a file for writing under a
folder once it holds a given number of bytes: works anywhere, no root), and a real tmpfs
mounted in a user and mount namespace (``unshare -rm``), skipped where that is not allowed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, finished_run, run_cli, stored_records

from dpbench.runner.execute import COMPUTE_LOG_ENV

GRID = ["experiment=linreg_adult", "methods=[public,ssp]", "profile=smoke",
        "runner.progress=false"]
N = 8
RESULT_FIELDS = ("key", "status", "spec", "metrics", "privacy", "info", "n_train", "n_test")
QUOTA_ENV = "DPBENCH_TEST_QUOTA"       # "<folder>=<bytes>", read by the sitecustomize below

_SITECUSTOMIZE = '''
import errno, os, sys
_spec = os.environ.get("DPBENCH_TEST_QUOTA")
if _spec:
    _folder, _, _cap = _spec.rpartition("=")
    _cap = int(_cap)
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND

    def _used():
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(_folder)
                   for f in fs)

    def _quota(event, args):
        if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.path.abspath(os.fsdecode(args[0]))
        mode, flags = args[1] or "", args[2] or 0
        writing = any(c in mode for c in "wax+") or flags & _WRITE
        if writing and (path + "/").startswith(_folder + "/") and _used() >= _cap:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    sys.addaudithook(_quota)
'''


def _results(results: Path) -> dict[str, dict]:
    return {k: {f: r.get(f) for f in RESULT_FIELDS} for k, r in stored_records(results).items()}


def _record_bytes(results: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (results / "store" / "trials").glob("*/*.json")
            if not p.name.startswith(".")}


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(tmp_path_factory.mktemp("clean") / "results", GRID, N)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return folder


def _one_line(proc: subprocess.CompletedProcess[str], folder: Path, *must: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    err = proc.stderr.strip().splitlines()[-1]      # earlier lines: e.g. figures' own notes
    assert proc.stderr.count("dpbench: error:") == 1, proc.stderr
    assert err.startswith(f"dpbench: error: no space left on {folder}"), err
    assert " MB)" in err and "(free " in err, err
    for text in must:
        assert text in err, err
    return err


@pytest.mark.parametrize("n_jobs", ["1", "2"])
def test_a_full_disk_during_run_keeps_the_records_and_the_rerun_resumes(
        clean: Path, tmp_path: Path, site: Path, n_jobs: str) -> None:
    results = tmp_path / "results"
    shutil.copytree(clean, results)
    records = sorted((results / "store" / "trials").glob("*/*.json"))
    for p in records[:4]:                                     # four trials still to run
        p.unlink()
    kept = _record_bytes(results)
    trials = results / "store" / "trials"
    # room for one more record: the folder is full once it holds a byte more than now
    env = {"PYTHONPATH": f"{site}:{REPO}", QUOTA_ENV: f"{trials}={_size(trials) + 1}"}
    proc = run_cli("run", *GRID, f"results_dir={results}", f"runner.n_jobs={n_jobs}", env=env)
    _one_line(proc, trials, "finished records are kept", "rerun to resume")
    after = _record_bytes(results)
    assert {k: after[k] for k in kept} == kept                # byte for byte
    assert 1 <= len(after) - len(kept) < 4                    # it stopped part-way
    assert not list(trials.glob("*/.tmp-*"))                  # no half-written record
    log = tmp_path / "computed.log"
    proc = run_cli("run", *GRID, f"results_dir={results}", env={COMPUTE_LOG_ENV: str(log)})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    computed = sorted(line.split()[0] for line in log.read_text().splitlines())
    assert computed == sorted(set(_results(clean)) - {Path(k).stem for k in after})
    assert _results(results) == _results(clean)


def test_no_room_for_the_write_probe_is_one_line_before_any_work(tmp_path: Path,
                                                                 site: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    env = {"PYTHONPATH": f"{site}:{REPO}", QUOTA_ENV: f"{results}=0"}
    proc = run_cli("run", *GRID, f"results_dir={results}", env=env)
    _one_line(proc, results, "nothing was written; free space and rerun")
    assert not any(results.iterdir())


@pytest.mark.parametrize(("room", "says"), [(0, "nothing was written"),        # the probe
                                           (1, "stored records are untouched")])  # mid-way
def test_a_full_disk_during_figures_is_one_line_and_the_rerun_builds_them(
        clean: Path, tmp_path: Path, site: Path, room: int, says: str) -> None:
    results = tmp_path / "results"
    shutil.copytree(clean, results)
    shutil.rmtree(results / "figures", ignore_errors=True)
    (results / "figures").mkdir()
    kept = _record_bytes(results)
    figures = ["figures", "experiment=linreg_adult", "profile=smoke", f"results_dir={results}"]
    env = {"PYTHONPATH": f"{site}:{REPO}", QUOTA_ENV: f"{results / 'figures'}={room}"}
    proc = run_cli(*figures, env=env)
    _one_line(proc, results / "figures", says)
    assert _record_bytes(results) == kept
    proc = run_cli(*figures)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert any((results / "figures").rglob("*.md")) and _record_bytes(results) == kept


def test_a_full_disk_during_site_is_one_line_and_the_rerun_builds_it(
        clean: Path, tmp_path: Path, site: Path) -> None:
    """The site's first file is written, the next one finds the disk full (room 1 byte)."""
    results = tmp_path / "results"
    shutil.copytree(clean, results)
    shutil.rmtree(results / "site", ignore_errors=True)
    (results / "site").mkdir()
    kept = _record_bytes(results)
    cmd = ["site", f"results_dir={results}", "runner.progress=false"]
    env = {"PYTHONPATH": f"{site}:{REPO}", QUOTA_ENV: f"{results / 'site'}=1"}
    _one_line(run_cli(*cmd, env=env), results / "site", "stored records are untouched",
              "rerun `dpbench site`")
    assert _record_bytes(results) == kept
    proc = run_cli(*cmd)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert (results / "site" / "index.html").is_file() and _record_bytes(results) == kept


# Inside a user and mount namespace: a 16 MB tmpfs holds the results; once the run has
# stored two records (each trial is held 0.5 s), the tmpfs is filled to the last byte;
# then the filler is deleted ("space freed") and the run is started again.
_TMPFS_SCRIPT = """
import json, os, subprocess, sys, threading, time
from pathlib import Path
mnt = Path(sys.argv[1])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], check=True)
results, grid = mnt / "results", json.loads(sys.argv[2])
trials, filler = results / "store" / "trials", mnt / "filler"
cmd = [sys.executable, "-m", "dpbench.entry", "run", *grid, f"results_dir={results}"]

def records():
    return {p.name: p.read_bytes() for p in trials.glob("*/*.json") if not p.name.startswith(".")}

def fill():
    while len(records()) < 2:
        time.sleep(0.05)
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(bytes(65536))
                fh.flush()
        except OSError:
            pass
    while True:                         # the last few bytes too
        try:
            with open(filler, "ab") as fh:
                fh.write(b"x")
        except OSError:
            break

env = {**os.environ, "DPBENCH_TRIAL_HOLD_S": "0.5"}
thread = threading.Thread(target=fill)
thread.start()
full = subprocess.run(cmd, capture_output=True, text=True, env=env)
thread.join()
kept = records()
filler.unlink()
again = subprocess.run(cmd, capture_output=True, text=True)
final = records()
print(json.dumps({"full": [full.returncode, full.stderr], "kept": len(kept),
                  "intact": all(final[k] == v for k, v in kept.items()),
                  "again": [again.returncode, again.stderr], "final": len(final),
                  "trials": str(trials), "store": str(results / "store")}))
"""


def test_a_real_full_tmpfs_during_run(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    try:
        probe = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "tmpfs",
                                str(tmp_path)], capture_output=True, timeout=30)
    except OSError:
        probe = None
    if probe is None or probe.returncode != 0:
        pytest.skip("mounting a tmpfs in a user namespace is not permitted here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["unshare", "-rm", sys.executable, "-c", _TMPFS_SCRIPT, str(mnt),
                           json.dumps(GRID)], capture_output=True, text=True, cwd=REPO,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    code, err = out["full"]
    assert code == 2 and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"dpbench: error: no space left on {out['store']}"), err
    assert "(free 0.0 MB)" in line and "finished records are kept" in line, line
    assert 2 <= out["kept"] < N and out["intact"]
    assert out["again"][0] == 0, out["again"][1][-3000:]
    assert out["final"] == N
