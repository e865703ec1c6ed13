"""``scripts/test_durations.py`` lists the slowest tests and modules of a durations file
(the one tests/conftest.py keeps), each with its share of the whole, slowest first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test_durations.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=60)


def test_the_slowest_tests_and_modules_with_their_shares(tmp_path: Path) -> None:
    f = tmp_path / "durations"
    f.write_text(json.dumps({"tests/a.py::t1": 30.0, "tests/a.py::t2": 15.0,
                             "tests/b.py::t3": 40.0, "tests/c.py::t4": 35.0}))
    proc = run("--file", str(f), "--top", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "4 tests, 2.0 worker-minutes in all"
    tests = lines[lines.index("slowest tests:") + 1:][:2]
    modules = lines[lines.index("slowest modules:") + 1:]
    assert [ln.split()[-1] for ln in tests] == ["tests/b.py::t3", "tests/c.py::t4"]
    assert [ln.split()[-1] for ln in modules] == ["tests/a.py", "tests/b.py"]
    assert modules[0].split()[:3] == ["45.0", "s", "37.5%"]


def test_no_durations_is_one_line(tmp_path: Path) -> None:
    proc = run("--file", str(tmp_path / "none"))
    assert proc.returncode == 1 and "run pytest first" in proc.stderr
