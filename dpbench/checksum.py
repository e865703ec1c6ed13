"""Sealed cache files: a header naming the format, then the sha256 of the payload, then
the payload. The caches (program_store.py's traced programs, artifacts.py's
releases) check the seal before they decode a byte of the payload, so flipped bytes
anywhere in a file (header, digest or payload) are caught before a pickle is loaded or an
array is used; the caller then deletes the file and rebuilds it (:func:`discard`)."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def digest(obj: Any) -> str:
    """sha256 hex digest of ``canonical_json(obj)`` (a trial's key, an artifact's key)."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


_DIGEST = hashlib.sha256().digest_size


class BadSeal(ValueError):
    """A sealed file that is not what was written: why, in a few words."""


def seal(tag: bytes, payload: bytes) -> bytes:
    """``tag`` (the format, e.g. ``b"dpbench-program 2\\n"``) + sha256(payload) + payload."""
    return tag + hashlib.sha256(payload).digest() + payload


def unseal(tag: bytes, blob: bytes) -> bytes:
    """The payload of a :func:`seal`-ed ``blob``; :class:`BadSeal` unless its header is
    ``tag`` and its digest matches."""
    if not blob.startswith(tag):
        raise BadSeal(f"header is not {tag!r} (another format, or damaged)")
    start = len(tag) + _DIGEST
    if len(blob) < start:
        raise BadSeal(f"cut short ({len(blob)} bytes)")
    payload = blob[start:]
    if hashlib.sha256(payload).digest() != blob[len(tag):start]:
        raise BadSeal(f"sha256 mismatch ({len(blob)} bytes)")
    return payload


def discard(path: Path, why: object, log: logging.Logger, then: str) -> None:
    """Delete the bad cache file ``path`` (gone already: nothing to do) and warn, naming it,
    why, and what happens ``then`` (e.g. "traced again")."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:              # e.g. a read-only shared cache: rebuilt, not kept
        log.warning("%s is damaged (%s) and cannot be deleted (%s): %s", path, why,
                    exc.strerror or exc, then)
        return
    log.warning("%s is damaged (%s): deleted, %s", path, why, then)


def replace_file(path: Path, data: bytes, durable: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all, so readers see the old file or the new
    one, never a part: a temporary file in the same folder, then a rename. ``durable``: fsync
    the file before the rename and the folder after it (a store's records); without, a file
    lost in a crash is rebuilt (caches). An OSError of a write names the folder."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:   # a write or fsync: name where
            exc.filename = str(path.parent)
        raise
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@functools.cache
def code_digest() -> str:
    """sha256 of dpbench's version and of every module's source (read once per process):
    what a cache built by dpbench's code depends on besides its own inputs."""
    from importlib import metadata

    try:
        version = metadata.version("dpbench")
    except metadata.PackageNotFoundError:
        version = "unknown"
    code = Path(__file__).resolve().parent
    h = hashlib.sha256(version.encode())
    for f in sorted(code.rglob("*.py")):
        h.update(f.relative_to(code).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def read_kept(path: Path, tag: bytes, inputs: str) -> object | None:
    """What :func:`write_kept` kept in ``path`` from ``inputs`` (a digest of everything it
    was built from), else None: absent, built from other inputs (stale: never unpickled,
    e.g. written by another library version), or damaged (the seal is checked before
    anything is unpickled). A cache's reader then builds it again."""
    try:
        built_from, _, kept = unseal(tag, path.read_bytes()).partition(b"\n")
    except (OSError, BadSeal):
        return None
    if built_from.decode(errors="replace") != inputs:
        return None
    try:
        return pickle.loads(kept)
    except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError,
            ImportError, IndexError):
        return None


def write_kept(path: Path, tag: bytes, inputs: str, obj: object, quiet: bool = False) -> None:
    """Keep ``obj``, built from ``inputs``, in ``path`` (whole or not at all, sealed);
    ``quiet``: a cache that cannot be written (a read-only checkout, a full disk) is left
    unwritten, and built again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, seal(tag, inputs.encode() + b"\n" + pickle.dumps(obj)))
    except OSError:
        if not quiet:
            raise


__all__ = ["BadSeal", "code_digest", "discard", "read_kept", "replace_file", "seal", "unseal",
           "write_kept"]
