"""The shipped reference results (results/reference, docs/reference.md): loadable, within
the size cap, matching its manifest, every trial current (its key in a grid the manifest
names: a key that moved must be rebuilt, never read as current) and carrying its
provenance."""

from __future__ import annotations

import hashlib

import pytest

from dpbench.runner.reference import SIZE_CAP, Reference, default_dir, files_digest
from dpbench.workspace import compose_config, grid

#: what every shipped trial must say of where it ran
PROVENANCE = ("commit", "finished_at", "versions", "cpu_s", "host")


@pytest.fixture(scope="module")
def shipped() -> Reference:
    ref = Reference(default_dir())
    assert ref.exists(), f"{ref.folder} holds no trials: `make reference` builds it"
    return ref


def test_the_reference_is_within_its_cap_and_matches_its_manifest(shipped: Reference) -> None:
    manifest = shipped.manifest()
    files = {f.relative_to(shipped.folder).as_posix(): f.read_bytes() for f in shipped.files()}
    assert sum(len(d) for d in files.values()) == manifest["bytes"] <= SIZE_CAP
    assert {n: hashlib.sha256(d).hexdigest() for n, d in files.items()} == {
        n: f["sha256"] for n, f in manifest["files"].items()}
    assert manifest["sha256"] == files_digest(manifest["files"])
    assert manifest["trials"] == len(shipped) == sum(f["trials"] for f in
                                                     manifest["files"].values()) > 0
    assert sum(g["held"] for g in manifest["grids"].values()) >= len(shipped)


def test_every_shipped_trial_is_current_and_says_where_it_ran(shipped: Reference) -> None:
    current: set[str] = set()
    for name in shipped.manifest()["grids"]:
        experiment, profile = name.rsplit("@", 1)
        specs = grid(compose_config([f"experiment={experiment}", f"profile={profile}"]))
        current |= {s.key for s in specs}
    stale = [k for k in shipped.keys() if k not in current]
    assert not stale, (f"{len(stale)} shipped trial(s) whose key no grid has any more: "
                       "`make reference` rebuilds the reference")
    for key in shipped.keys():
        rec = shipped.get(key)
        assert rec["status"] == "ok" and rec["origin"] == "reference"
        missing = [f for f in PROVENANCE if f not in rec]
        assert not missing, (key, missing)
