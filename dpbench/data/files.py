"""Locating vendored data files and verifying their checksums.

Each vendored dataset lives in ``data/<name>/`` with a ``MANIFEST.json`` giving
the sha256 of every file's uncompressed bytes (written by
``scripts/vendor_dataset.py``). Files are verified once per process.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


class DataError(ValueError):
    """A data file is missing, corrupted or malformed (message is one line)."""


def data_root() -> Path:
    """``$DPBENCH_DATA_DIR`` or the repository's ``data/`` folder."""
    env = os.environ.get("DPBENCH_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def read_bytes(path: Path) -> bytes:
    """File contents, transparently gunzipped for ``*.gz``."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DataError(f"{path} is not a valid gzip file ({exc}); re-vendor it") from None
    return raw


@functools.lru_cache(maxsize=256)
def _verified(path_str: str, expected: str) -> Path:
    path = Path(path_str)
    digest = hashlib.sha256(read_bytes(path)).hexdigest()
    if digest != expected:
        raise DataError(
            f"checksum mismatch for {path}: sha256 {digest[:12]}... != expected "
            f"{expected[:12]}...; "
            f"the file is corrupted, restore it with `git checkout -- {path.name}` or re-vendor it"
        )
    return path


def verified_path(dataset_dir: str, filename: str, *, root: Path | None = None) -> Path:
    """Path of ``data/<dataset_dir>/<filename>`` after checking it against MANIFEST.json."""
    base = (root or data_root()) / dataset_dir
    manifest_path = base / "MANIFEST.json"
    if not manifest_path.exists():
        raise DataError(f"dataset folder {base} has no MANIFEST.json; vendor it with "
                        f"`python scripts/vendor_dataset.py {dataset_dir}`")
    files = json.loads(manifest_path.read_text())["files"]
    if filename not in files:
        raise DataError(f"{filename!r} is not listed in {manifest_path}; valid: "
                        f"{', '.join(sorted(files))}")
    path = base / filename
    if not path.exists():
        raise DataError(f"missing data file {path}; restore it from git or re-vendor the dataset")
    return _verified(str(path), files[filename]["sha256_uncompressed"])


def read_csv(dataset_dir: str, filename: str, **kw: object) -> pd.DataFrame:
    """A vendored CSV (gzip or plain), checksum-verified, through ``pandas.read_csv(**kw)``."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(read_bytes(verified_path(dataset_dir, filename))), **kw)
