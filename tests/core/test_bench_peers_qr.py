"""scripts/bench_peers_qr.py refuses, in one line and before creating its virtual
environment, when it is not given the authors' checkout or given a folder that is not one.
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
