"""Sealed cache files: a header naming the format, then the sha256 of the payload, then
the payload. The caches (program_store.py's traced programs, runner/artifacts.py's
releases) check the seal before they decode a byte of the payload, so flipped bytes
anywhere in a file (header, digest or payload) are caught before a pickle is loaded or an
array is used; the caller then deletes the file and rebuilds it (:func:`discard`)."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

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


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file in the same folder,
    then a rename); no fsync: a cache file lost in a crash is rebuilt. OSError on failure."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["BadSeal", "discard", "replace_file", "seal", "unseal"]
