"""scripts/bench_peers_qr.py refuses, in one line and before creating its virtual
environment, when it is not given the authors' checkout or given a folder that is not one,
or asked to run one side without a report of the same cells to take the other from.
(The benchmark itself is run by hand, ``make bench-peers-qr``; never as a test.)"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

SCRIPT = REPO / "scripts" / "bench_peers_qr.py"


def refusal(*args: str) -> str:
    """The script's stderr when it refuses (exit status 1, nothing on stdout)."""
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=30, cwd=REPO)
    assert done.returncode == 1, done
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_no_checkout_says_how_to_clone() -> None:
    line = refusal()
    assert "needs the authors' code" in line
    assert "git clone https://github.com/terranceliu/iterative-dp" in line
    assert "PEER_QR=" in line


@pytest.mark.parametrize("files", [[], ["mwem.py", "pep.py", "gem.py", "rap.py"]])
def test_a_folder_that_is_not_their_checkout(tmp_path, files) -> None:
    for name in files:
        (tmp_path / name).write_text("")
    line = refusal("--checkout", str(tmp_path), "--methods", "rap")
    assert f"{tmp_path} is not a checkout of terranceliu/iterative-dp" in line
    assert ("Util/qm.py" if files else "mwem.py") in line
    assert "git clone" in line


def _script():
    """The script as a module (its helpers, without running it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_peers_qr", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _checkout(tmp_path):
    """A folder the script takes for their checkout: its own list of telling files."""
    for name in _script().CHECKOUT_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    return tmp_path


def test_one_side_needs_a_report_of_the_same_cells(tmp_path) -> None:
    import json

    checkout = _checkout(tmp_path / "itdp")
    one = ("--checkout", str(checkout), "--methods", "rap", "--datasets", "qr_adult_reduced",
           "--eps", "1", "--sides", "dpbench")
    assert "needs --reuse REPORT" in refusal(*one)
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"settings": {"seed": 0, "methods": {"rap": {"T": 3}}},
                                  "runs": []}))
    assert "ran other settings or another seed" in refusal(*one, "--reuse", str(report))
    same = {"seed": 0, "methods": {"rap": _script().settings("rap", {})}}
    report.write_text(json.dumps({"settings": same, "runs": []}))
    line = refusal(*one, "--reuse", str(report))
    assert f"{report} has no run of ('authors', 'rap', 'qr_adult_reduced', 1.0)" in line
