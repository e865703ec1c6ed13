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
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


class DataError(ValueError):
    """A data file is missing, corrupted or malformed (message is one line)."""


class MissingDownload(DataError):
    """A dataset the user downloads (or supplies) is not there yet: the message says what to
    fetch and where to put it. ``plan`` prices such a dataset's cells unchecked; ``run``
    refuses them."""


def check_fits_memory(rows: int, columns: int, what: str) -> None:
    """Refuse (one-line ValueError) a table of ``rows`` x ``columns`` float64 values larger
    than this machine's memory, before it is allocated (an absurd ``n`` in a sweep would
    otherwise fail deep inside numpy or be killed by the kernel)."""
    need = rows * columns * 8
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if need > have:
        raise ValueError(f"{what}: {rows:,} rows x {columns} columns need {need / 2**30:,.1f} "
                         f"GiB, more than this machine's {have / 2**30:,.1f} GiB of memory; "
                         "lower the number of rows")


def data_root() -> Path:
    """``$DPBENCH_DATA_DIR`` or the repository's ``data/`` folder."""
    env = os.environ.get("DPBENCH_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def corrupted(path: Path, detail: str) -> DataError:
    """The one error for a damaged data file, whatever check caught it (sha256 of the
    contents, or the gzip stream's own CRC / deflate checks): one line naming the file."""
    return DataError(
        f"checksum mismatch for {path}: {detail}; "
        f"the file is corrupted, restore it with `git checkout -- {path.name}` or re-vendor it"
    )


def read_bytes(path: Path) -> bytes:
    """File contents, transparently gunzipped for ``*.gz``."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # header/CRC, truncation, bad deflate
            raise corrupted(path, f"the gzip stream does not decompress ({exc})") from None
    return raw


@functools.lru_cache(maxsize=256)
def _verified(path_str: str, expected: str, size: int, mtime_ns: int) -> Path:
    del size, mtime_ns             # the cache key: a file changed since is checked again
    path = Path(path_str)
    digest = hashlib.sha256(read_bytes(path)).hexdigest()
    if digest != expected:
        raise corrupted(path, f"sha256 {digest[:12]}... != expected {expected[:12]}...")
    return path


def verified_path(dataset_dir: str, filename: str, *, root: Path | None = None) -> Path:
    """Path of ``data/<dataset_dir>/<filename>`` after checking it against MANIFEST.json."""
    base = (root or data_root()) / dataset_dir
    manifest_path = base / "MANIFEST.json"
    if not manifest_path.exists():
        raise DataError(f"dataset folder {base} has no MANIFEST.json; vendor it with "
                        f"`python scripts/vendor_dataset.py {dataset_dir}`")
    files = manifest_files(manifest_path)
    if filename not in files:
        raise DataError(f"{filename!r} is not listed in {manifest_path}; valid: "
                        f"{', '.join(sorted(files))}")
    path = base / filename
    if not path.exists():
        raise DataError(f"missing data file {path}; restore it from git or re-vendor the dataset")
    if not path.is_file():
        raise DataError(f"data file {path} is not a file (a directory?); restore it from git "
                        "or re-vendor the dataset")
    try:
        digest = files[filename]["sha256_uncompressed"]
    except (TypeError, KeyError):
        raise DataError(f"{manifest_path}: the entry of {filename!r} has no "
                        "sha256_uncompressed; re-vendor the dataset") from None
    try:
        st = path.stat()
        return _verified(str(path), str(digest), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise DataError(f"cannot read data file {path}: {exc.strerror or exc}") from None


def manifest_files(path: Path) -> dict:
    """The ``files`` table of a MANIFEST.json; a one-line DataError naming the file when it
    is not readable JSON with such a table."""
    try:
        files = json.loads(path.read_text())["files"]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); restore "
                        "it from git or re-vendor the dataset") from None
    except (KeyError, TypeError):
        raise DataError(f"{path} has no \"files\" table; restore it from git or re-vendor "
                        "the dataset") from None
    if not isinstance(files, dict):
        raise DataError(f"{path}: \"files\" is not a table; re-vendor the dataset")
    return files


def read_csv(dataset_dir: str, filename: str, **kw: object) -> pd.DataFrame:
    """A vendored CSV (gzip or plain), checksum-verified, through ``pandas.read_csv(**kw)``."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(read_bytes(verified_path(dataset_dir, filename))), **kw)
