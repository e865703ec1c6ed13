"""A full disk (or quota) as one line that names the folder and its free space.

A full disk is not a trial's failure: the trial is not recorded as failed (it would be
retried anyway) but the run stops, so a sweep does not grind through its grid writing
nothing. Every record already written stays as it was (each is written whole or not at
all: artifacts.atomic_write_bytes), and the rerun after space is freed computes exactly
the trials that are missing (tests/core/test_disk_full.py).
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

#: no space left on the device, or the user's quota exhausted
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the quota) is full (pyarrow's OSErrors carry no
    errno, only the message)."""
    if not isinstance(exc, OSError):
        return False
    return exc.errno in FULL or "No space left on device" in str(exc)


def free_mb(folder: Path) -> float | None:
    """Free space in MB on the file system of ``folder`` (or of its nearest existing
    ancestor); None if it cannot be told."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free / 2**20
    except OSError:
        return None


def full_folder(exc: OSError, fallback: Path) -> Path:
    """The folder the failed write was in (``exc.filename`` names the file, or the folder),
    else ``fallback``."""
    if not exc.filename:
        return fallback
    path = Path(str(exc.filename))
    return path if path.is_dir() else path.parent


def full_line(exc: OSError, fallback: Path, then: str) -> str:
    """``no space left on <folder> (free <n> MB); <then>``."""
    folder = full_folder(exc, fallback)
    free = free_mb(folder)
    room = "free unknown" if free is None else f"free {free:.1f} MB"
    return f"no space left on {folder} ({room}); {then}"


__all__ = ["FULL", "free_mb", "full_folder", "full_line", "is_full"]
