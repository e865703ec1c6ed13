"""Where dpbench finds configs and paper data: the repository, then ``DPBENCH_PATH``.

``DPBENCH_PATH`` (os.pathsep-separated directories) adds roots, each of which may hold
``conf/<group>/*.yaml`` (datasets, methods, experiments, figures) and
``papers/<paper>/`` (numbers.csv, claims.yaml, README.md, costs.jsonl). A paper, a method yaml or an
experiment can so live outside the repository with no change to dpbench's code (the toy
paper test does exactly that). The repository comes first: an extra root cannot shadow a
name that dpbench already ships.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def roots() -> list[Path]:
    """The repository, then each existing directory of ``DPBENCH_PATH``, in order."""
    extra = [Path(p) for p in os.environ.get("DPBENCH_PATH", "").split(os.pathsep) if p]
    return [REPO, *[p.resolve() for p in extra if p.is_dir()]]


def conf_dirs() -> list[Path]:
    """Every root's ``conf/`` folder that exists (the repository's always)."""
    return [REPO / "conf", *[r / "conf" for r in roots()[1:] if (r / "conf").is_dir()]]


def papers_dirs() -> list[Path]:
    """Every root's ``papers/`` folder that exists."""
    return [r / "papers" for r in roots() if (r / "papers").is_dir()]


def paper_dir(name: str) -> Path:
    """``papers/<name>/`` in the first root that has it (ValueError naming the valid ones)."""
    for base in papers_dirs():
        if (base / name).is_dir():
            return base / name
    valid = sorted({p.name for base in papers_dirs() for p in base.iterdir() if p.is_dir()})
    raise ValueError(f"unknown paper {name!r}; valid: {', '.join(valid) or '(none)'}")


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """The repository's ``git rev-parse HEAD`` (with ``-dirty`` when tracked files differ
    from it), or ``unknown`` outside a git checkout; read once per process."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                "--untracked-files=no"], check=True, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("-dirty" if dirty else "")) if head else "unknown"


def version_text() -> str:
    """``dpbench <version> (commit <sha>)``: what ``--version`` prints and every trial
    record keeps (``versions.dpbench``, ``commit``)."""
    from importlib import metadata

    try:
        ver = metadata.version("dpbench")
    except metadata.PackageNotFoundError:
        ver = "unknown"
    return f"dpbench {ver} (commit {commit()})"
