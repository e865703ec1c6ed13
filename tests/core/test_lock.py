"""requirements.lock (what ``make install`` installs, with hashes) agrees with pyproject.toml.

Fails when a dependency is added, removed or re-ranged in pyproject.toml without
``make lock``, when a pin lacks a hash (pip --require-hashes would refuse it), and when
this environment's installed versions differ from the lock (the venv is stale: ``make
install`` reinstalls it).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def pins(text: str) -> dict[str, tuple[str, list[str], list[str]]]:
    """name -> (version, hashes, via) for every ``name==version`` entry of a pip-compile lock."""
    out: dict[str, tuple[str, list[str], list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", block)
        if not m:
            continue
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        comments = [ln.strip().lstrip("#").strip() for ln in block.splitlines()
                    if ln.strip().startswith("#")]
        via = [c.removeprefix("via ").strip() for c in comments if c not in ("", "via")]
        out[canonicalize_name(m[1])] = (m[2], hashes, via)
    return out


def direct() -> list[Requirement]:
    """pyproject.toml's dependencies and its dev extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in
            project["dependencies"] + project["optional-dependencies"]["dev"]]


def test_parser_reads_a_pip_compile_block() -> None:
    text = ("foo-bar==1.2.0+cpu \\\n    --hash=sha256:" + "a" * 64 + "\n"
            "    # via\n    #   dpbench (pyproject.toml)\n    #   baz\n"
            "baz==2 \\\n    --hash=sha256:" + "b" * 64 + "\n    # via dpbench (pyproject.toml)\n")
    got = pins(text)
    assert got["foo-bar"] == ("1.2.0+cpu", ["a" * 64], ["dpbench (pyproject.toml)", "baz"])
    assert got["baz"] == ("2", ["b" * 64], ["dpbench (pyproject.toml)"])


def test_every_dependency_is_pinned_within_its_range() -> None:
    locked = pins(LOCK.read_text())
    for req in direct():
        name = canonicalize_name(req.name)
        assert name in locked, f"{req} is in pyproject.toml but not in requirements.lock: make lock"
        version = locked[name][0]
        assert req.specifier.contains(Version(version), prereleases=True), (
            f"requirements.lock pins {name}=={version}, outside pyproject's {req}: make lock")


def test_lock_has_no_stale_direct_dependency() -> None:
    # a package pip-compile attributed to pyproject.toml that pyproject no longer lists
    wanted = {canonicalize_name(r.name) for r in direct()}
    locked = pins(LOCK.read_text())
    stale = [n for n, (_, _, via) in locked.items()
             if "dpbench (pyproject.toml)" in via and n not in wanted]
    assert not stale, f"requirements.lock lists {stale} as pyproject dependencies: make lock"


def test_every_pin_has_a_hash() -> None:
    bare = [n for n, (_, hashes, _) in pins(LOCK.read_text()).items() if not hashes]
    assert not bare, f"no --hash for {bare}: pip --require-hashes refuses the lock"


@pytest.mark.skipif(not (ROOT / ".venv").exists(), reason="not run from the project's venv")
def test_installed_versions_are_the_locked_ones() -> None:
    # `make install` installs exactly the lock; a difference means a stale or hand-edited venv
    diff = []
    for name, (version, _, _) in pins(LOCK.read_text()).items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have is None or Version(have) != Version(version):
            diff.append(f"{name} {have} (lock {version})")
    assert not diff, "installed versions differ from requirements.lock: " + ", ".join(diff)
