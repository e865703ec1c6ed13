"""Checked entries of JAX's persistent compilation cache (configured in compile_cache.py).

JAX's own cache keeps each compiled program as one file, ``<key>-cache``, with no
checksum. A damaged entry shows in one of two ways: its bytes no longer decompress or
deserialise, and JAX warns ("Error reading persistent compilation cache entry ...") and
compiles the program again, but its ``put`` skips a key whose file exists, so the bad
entry stays and every later process warns again; or (flipped bytes that still decode)
nothing is said at all.

:func:`install` wraps the cache JAX opens (jax._src.compilation_cache.get_file_cache) in
:class:`CheckedCache`: every ``put`` first writes the sha256 of the entry to
``<dir>/.sha256/<key>``, and every ``get`` checks it before JAX sees a byte, so a bad entry
is deleted, with a warning naming it, and reported as a miss: JAX compiles the program and
writes it again. An entry without a digest (written before this check) is given to JAX as
it is; if JAX cannot read it, it compiles and calls ``put``, which replaces it. Results do
not depend on it: a compiled program is the same executable, loaded or not.

The hook uses JAX internals (checked with jax 0.10): when they are missing, :func:`install`
returns False and the cache works as JAX alone makes it.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from dpbench.checksum import discard, replace_file

log = logging.getLogger(__name__)

#: the folder of the digests, inside the cache folder ('.'-prefixed: pruning skips it)
SUMS = ".sha256"
_SUFFIX = "-cache"       # JAX's name for an entry: <key>-cache (jax._src.lru_cache)


class CheckedCache:
    """A JAX cache whose entries are checked against their sha256 before JAX reads them."""

    def __init__(self, base: Any, folder: Path) -> None:
        self._base = base
        self._folder = folder

    def __getattr__(self, name: str) -> Any:   # _path, path, ...: those of the base cache
        return getattr(self._base, name)

    def get(self, key: str) -> bytes | None:
        """The entry of ``key``, or None when absent or bad (then deleted: JAX rewrites it)."""
        value = self._base.get(key)
        if value is None:
            return None
        try:
            want = (self._folder / SUMS / key).read_text().strip()
        except OSError:
            return value                 # no digest: written before the check, unverified
        if hashlib.sha256(value).hexdigest() == want:
            return value
        discard(self._folder / f"{key}{_SUFFIX}", "sha256 mismatch", log, "compiled again")
        return None

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` with its digest. JAX calls this only after a miss: an entry
        already there could not be read (or another process just wrote one), so it is
        replaced, where JAX's own ``put`` would keep it."""
        try:
            sums = self._folder / SUMS
            sums.mkdir(exist_ok=True)
            replace_file(sums / key, hashlib.sha256(value).hexdigest().encode())
            (self._folder / f"{key}{_SUFFIX}").unlink(missing_ok=True)
        except OSError:
            pass            # no digest: the entry is written, unverified (as JAX alone does)
        self._base.put(key, value)


def _folder_of(cache: Any) -> Path | None:
    where = getattr(cache, "_path", None) or getattr(cache, "path", None)
    if where is None:
        return None
    folder = Path(str(where))
    return folder if folder.is_dir() else None


def install() -> bool:
    """Make JAX open its persistent cache as a :class:`CheckedCache` (idempotent; takes
    effect when JAX next opens the cache, e.g. after ``reset_cache``); False if this JAX
    version has no such hook (the cache then stays unchecked)."""
    try:
        from jax._src import compilation_cache as cc
        opener = cc.get_file_cache
    except (ImportError, AttributeError):
        log.debug("cache_check: this jax has no get_file_cache; entries are not checked")
        return False
    if getattr(opener, "_dpbench_checked", False):
        return True

    def get_file_cache(path: str) -> Any:
        opened = opener(path)
        if not (isinstance(opened, tuple) and len(opened) == 2):
            return opened
        cache, where = opened
        folder = _folder_of(cache)
        return (cache if folder is None else CheckedCache(cache, folder)), where

    get_file_cache._dpbench_checked = True  # type: ignore[attr-defined]
    cc.get_file_cache = get_file_cache
    return True


__all__ = ["SUMS", "CheckedCache", "install"]
