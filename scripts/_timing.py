"""Helpers shared by the benchmark scripts (run by hand, never as tests): timing, a
time-limited child run, the peer benchmarks' own virtual environments."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_limited(cmd: list[str], limit_s: float, env: dict[str, str],
                cwd: Path) -> tuple[dict[str, Any], str]:
    """Run ``cmd`` as its own process, killed after ``limit_s`` seconds.

    Returns the record (status ok / failed / timeout, wall seconds, CPU seconds and peak
    RSS in MB of that child from getrusage, and on success the fields of its last stdout
    line that is a JSON object) and its whole stderr."""
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
    while True:
        pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = "ok" if os.waitstatus_to_exitcode(code) == 0 else "failed"
            break
        if time.perf_counter() - t0 > limit_s:
            proc.kill()
            _, code, usage = os.wait4(proc.pid, 0)
            status = "timeout"
            break
        time.sleep(0.2)
    proc.returncode = os.waitstatus_to_exitcode(code)
    result: dict[str, Any] = {"status": status, "wall_s": time.perf_counter() - t0,
                              "cpu_s": usage.ru_utime + usage.ru_stime,
                              "peak_mb": usage.ru_maxrss / 1024}
    out.seek(0)
    err.seek(0)
    lines = [ln for ln in out.read().splitlines() if ln.startswith("{")]
    errors = err.read()
    if status == "ok" and lines:
        result.update(json.loads(lines[-1]))
    elif status == "failed":
        result["error"] = errors[-2000:]
    return result, errors


def ensure_venv(venv: Path, *installs: list[str]) -> Path:
    """``venv``'s python; the environment is created first if missing, with one ``pip
    install`` per argument list of ``installs`` (a few minutes, once)."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    print(f"creating {venv} (once; a few minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for args in installs:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], check=True)
    return python


def sitting() -> dict[str, Any]:
    """When and where a benchmark starts: UTC time, the machine, its load averages."""
    return {"started": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
            "load_avg_start": os.getloadavg()}


def write_report(out: Path, start: dict[str, Any], **fields: Any) -> None:
    """``out`` (JSON): the :func:`sitting`, when it finished and the load then, ``fields``."""
    report = {**start, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
              "load_avg_end": os.getloadavg(), **fields}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
