"""Datasets prepared locally from raw downloads, cached under data/cache/<name>/.

A prepared dataset has the vendored format (``data.csv.gz`` of level codes,
``domain.json``, ``MANIFEST.json`` with sha256 of each file), so it is loaded
and checksum-verified by :func:`dpbench.data.discrete.load_discrete` like any
vendored one. Raw downloads are pinned too: their sha256 is recorded on first
download (``<file>.sha256``) and checked before every preparation.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpbench.data.base import Split
from dpbench.data.discrete import load_discrete
from dpbench.data.files import DataError, MissingDownload, data_root

if TYPE_CHECKING:
    import pandas as pd

PREPARE_CMD = "python scripts/prepare_ddssp_data.py"


def cache_path(*parts: str) -> Path:
    return data_root().joinpath("cache", *parts)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def missing_raw(name: str, what: str, url: str, path: Path) -> MissingDownload:
    """One-line error: what to download and where to put it."""
    return MissingDownload(f"dataset {name!r} is not vendored: put {what} from {url} at {path}, or "
                     f"run `{PREPARE_CMD} {name} --download` where the network is reachable")


def download(url: str, path: Path, *, timeout: float = 60.0) -> Path:
    """Stream ``url`` to ``path`` (via a .part file) and pin its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, part.open("wb") as out:  # noqa: S310
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise DataError(f"downloading {url} failed ({exc}); save it by hand as {path}") from None
    os.replace(part, path)
    path.with_name(path.name + ".sha256").write_text(sha256_file(path) + "\n")
    return path


def check_pinned(path: Path) -> str:
    """sha256 of a raw file, checked against its pin if one was recorded (else pinned now)."""
    digest = sha256_file(path)
    pin = path.with_name(path.name + ".sha256")
    if pin.exists() and pin.read_text().strip() != digest:
        raise DataError(f"{path} changed since it was pinned (sha256 {digest[:12]}... != "
                        f"{pin.read_text().strip()[:12]}...); delete it and download again")
    if not pin.exists():
        pin.write_text(digest + "\n")
    return digest


def write_prepared(name: str, codes: pd.DataFrame, domain: dict[str, int],
                   provenance: dict[str, Any]) -> Path:
    """Write data/cache/<name>/ atomically (each file via a temporary name, MANIFEST last)."""
    out = cache_path(name)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    codes.astype(np.int64).to_csv(buf, index=False)
    blobs = {"data.csv.gz": buf.getvalue().encode(),
             "domain.json": (json.dumps(domain) + "\n").encode()}
    files = {}
    for fname, raw in blobs.items():
        stored = gzip.compress(raw, compresslevel=9, mtime=0) if fname.endswith(".gz") else raw
        tmp = out / f".{fname}.tmp{os.getpid()}"
        tmp.write_bytes(stored)
        os.replace(tmp, out / fname)
        files[fname] = {"sha256_uncompressed": hashlib.sha256(raw).hexdigest(),
                        "rows": len(codes) if fname.endswith(".gz") else None}
    manifest = {"name": name, "files": files, "provenance": provenance}
    tmp = out / f".MANIFEST.json.tmp{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, out / "MANIFEST.json")
    return out


def is_prepared(name: str) -> bool:
    return (cache_path(name) / "MANIFEST.json").exists()


def load_prepared(*, rng: np.random.Generator, name: str, **params: Any) -> Split:
    """Shuffle-split and encode a prepared dataset (see load_discrete for ``params``)."""
    return load_discrete(rng=rng, dataset_dir=f"cache/{name}", file="data.csv.gz",
                         domain_file="domain.json", **params)
