"""The arena numbers quoted in README.md and docs/arena.md are the shipped reference's
(issue 61, item 4): ``scripts/arena_summary.py --check`` rebuilds both blocks from the
reference alone (an empty local store in front of it) and fails when a quoted line differs;
and the check is live: a changed quoted line is caught."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SCRIPT = REPO / "scripts" / "arena_summary.py"


def _check(env_reference: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPBENCH_REFERENCE": env_reference}
    return subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=900)


def test_the_quoted_arena_lines_are_the_references() -> None:
    proc = _check(str(REPO / "results" / "reference"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_changed_quoted_line_is_caught(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """On copies of the two files: a made-up line in the README's block fails --check;
    a rewrite restores exactly the shipped text."""
    sys.path.insert(0, str(REPO / "scripts"))
    import arena_summary

    monkeypatch.setenv("DPBENCH_REFERENCE", str(REPO / "results" / "reference"))
    files = {name: tmp_path / path.name for name, path in arena_summary.FILES.items()}
    for name, path in arena_summary.FILES.items():
        files[name].write_text(path.read_text())
    monkeypatch.setattr(arena_summary, "FILES", files)
    once = arena_summary.blocks(tmp_path / "results")  # the reference alone, built once
    monkeypatch.setattr(arena_summary, "blocks", lambda _results: once)  # for the 3 calls
    readme = files["readme"].read_text()
    files["readme"].write_text(arena_summary.replaced(readme, "readme", "| made up |\n"))
    assert arena_summary.main(["--check"]) == 1
    assert arena_summary.main([]) == 0
    assert files["readme"].read_text() == readme
    assert arena_summary.main(["--check"]) == 0
