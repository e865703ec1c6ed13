"""The shipped reference as a clean clone's site shows it (issue 61's acceptance, on the real
reference; tests/core/test_reference_cli.py does the same on a fixture): ``dpbench site``
over an empty results folder builds a page for every grid the reference tracks, each page
shows exactly the trials the manifest says it holds, all of them marked as the reference's,
and each arena page carries its board and its critical-difference diagrams. A grid the
reference holds none of is shown as not run (docs/reference.md, "What it holds", lists
them)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, run_cli

from dpbench.workspace import is_arena

REFERENCE = REPO / "results" / "reference"


def test_a_clean_clones_site_shows_every_trial_the_reference_holds(tmp_path: Path) -> None:
    grids = json.loads((REFERENCE / "MANIFEST.json").read_text())["grids"]
    run_cli("site", f"results_dir={tmp_path}", "runner.progress=false",
            env={"DPBENCH_REFERENCE": str(REFERENCE)}, check=True)
    site = tmp_path / "site"
    off = []
    for name, g in sorted(grids.items()):
        experiment, profile = name.rsplit("@", 1)
        folder = site / f"{experiment}-{profile}"
        page = json.loads((folder / "page.json").read_text())
        if page["trials_ok"] != g["held"]:
            off.append(f"{name}: page {page['trials_ok']}, reference {g['held']}")
        origins = page["provenance"].get("origins", {}) if g["held"] else {}
        if any(not o.startswith("reference, ") for o in origins):
            off.append(f"{name}: trials of another origin: {sorted(origins)}")
        if is_arena(experiment) and g["held"]:
            files = {p.name for p in folder.iterdir()}
            if not {"board.md", "board.json", "critical_difference-1.png"} <= files:
                off.append(f"{name}: board files missing ({sorted(files)[:8]}…)")
    assert not off, "\n".join(off)
    index = (site / "index.html").read_text()
    assert all(f"{n.rsplit('@', 1)[0]}-{n.rsplit('@', 1)[1]}/" in index for n in grids)
