"""Commands that only plan import no heavy numerical library (issue 40, fast start).

``dpbench plan`` / ``status`` / ``site`` read each method's and dataset loader's
declarations (class attributes, signatures) but never fit: importing those classes must not
pull in torch, opacus, JAX, mbi, numpyro, scikit-learn, pandas (0.6 s) or Numba, which only
``fit`` (or a loader's body) needs. Checked in a fresh interpreter, since this test
process may already hold them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "opacus", "jax", "jaxlib", "mbi", "numpyro", "sklearn", "pandas", "numba")


def conf_targets() -> list[str]:
    """Every ``_target_`` named in ``conf/method/**`` and ``conf/dataset/**``."""
    found: set[str] = set()
    for group in ("method", "dataset"):
        for path in (ROOT / "conf" / group).rglob("*.yaml"):
            found.update(re.findall(r"^\s*_target_:\s*(\S+)", path.read_text(), re.M))
    return sorted(found)


_PROBE = """
import json, sys
from dpbench.workspace import arena_grid, compose_config, grid
from dpbench.runner.execute import import_object

for target in json.loads(sys.argv[1]):
    import_object(target)
assert grid(compose_config(["experiment=linreg_adult"]))
for arena in json.loads(sys.argv[3]):
    assert arena_grid(compose_config([f"experiment={arena}"]), data=False)[0]
heavy = set(json.loads(sys.argv[2]))  # the modules of these packages must be absent
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def test_planning_imports_no_heavy_library() -> None:
    targets = conf_targets()
    assert len(targets) > 30                 # the conf tree was found
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    arenas = sorted(p.stem for p in (ROOT / "conf" / "experiment" / "arena").glob("*.yaml"))
    assert arenas
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(targets), json.dumps(HEAVY),
                           json.dumps(arenas)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    tops = sorted({m.split(".")[0] for m in loaded})
    assert not loaded, f"heavy modules imported while planning: {tops} ({len(loaded)} modules)"


_LIST = """
import contextlib, io, json, sys
from dpbench.entry import main

with contextlib.redirect_stdout(io.StringIO()):
    assert main(["list"]) == 0
avoid = json.loads(sys.argv[1])  # packages or modules, with their submodules
print(json.dumps(sorted(m for m in sys.modules
                        if any(m == a or m.startswith(a + ".") for a in avoid))))
"""


def test_list_imports_no_heavy_library_nor_the_workspace() -> None:
    """``dpbench list`` reads every method class's contract (issue 59: it used to import
    scipy through them, 13x a numpy import): no scipy, no Hydra, no report (matplotlib)
    and no workspace either (dpbench/listing.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    avoid = [*HEAVY, "scipy", "hydra", "matplotlib", "dpbench.workspace", "dpbench.cli",
             "dpbench.report"]
    proc = subprocess.run([sys.executable, "-c", _LIST, json.dumps(avoid)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not loaded, sorted({m.split(".")[0] for m in loaded} | {
        m for m in loaded if m.startswith("dpbench")})
