"""Content-addressed cache of expensive shared intermediates (e.g. one marginal release per
trial cell).

One mechanism run per (dataset cell, workload, eps, delta, settings) feeds every method
that consumes the same release, survives restarts, and is safe when several worker processes
ask for it at once: the builder runs under an exclusive file lock
(``fcntl.flock`` on ``<artifact>.lock``), re-checks the cache after acquiring
it, and publishes the artifact with an atomic rename, so a reader sees either
no file or a complete one.

An artifact is one ``.npz`` holding named arrays plus a JSON metadata entry
(no pickles). Its address is the sha256 of the canonical JSON of its key
fields, stored under ``<root>/<key[:2]>/<key>.npz``. The file is sealed
(dpbench/checksum.py: a header, the sha256 of the ``.npz`` bytes, the bytes; so it
is no longer a plain ``.npz``) and the seal is checked before any array is used: a file
that fails it (flipped bytes, cut short, an older unsealed file) or cannot be decoded is
deleted under the lock, with a warning naming it, and built again; its seed comes
from the cell, so the rebuilt artifact is the same and the trial goes on.

The runner opens an :func:`artifact_context` around each trial with the
trial's *cell* (the digest of what determines its data split: dataset, its
parameters and the trial index, shared by every method of that cell) and the
cache root. Methods read it with :func:`current_context`; outside a context
(tests, direct use) there is no cache and methods use their own generator.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpbench.checksum import BadSeal, canonical_json, digest, discard, replace_file, seal, unseal

_META = "__meta__"
_TAG = b"dpbench-artifact 1\n"
log = logging.getLogger(__name__)

Arrays = dict[str, np.ndarray]
Built = tuple[Arrays, dict[str, Any]]


def atomic_write_bytes(final: Path, data: bytes) -> None:
    """Write ``data`` to ``final`` durably, whole or not at all (:func:`checksum.replace_file`
    with fsync of the file and its folder): what the store and the artifacts write."""
    replace_file(final, data, durable=True)


class ArtifactBusy(Exception):
    """Another process holds the lock of an artifact this trial needs (it is building it),
    and the runner asked not to wait: the trial is deferred, the worker takes another."""


class ArtifactStore:
    """Directory of ``<key[:2]>/<key>.npz`` artifacts. With ``defer``, a missing artifact
    another process is building raises :class:`ArtifactBusy` instead of waiting for it."""

    def __init__(self, root: str | Path, *, defer: bool = False) -> None:
        self.root = Path(root)
        self.defer = defer

    @staticmethod
    def key(fields: Mapping[str, Any]) -> str:
        """The content address of an artifact described by ``fields`` (JSON-able)."""
        return digest(dict(fields))

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npz"

    def load(self, key: str) -> Built | None:
        """(arrays, meta) of a stored artifact, or None if absent or bad."""
        try:
            return self._read(key)
        except BadSeal:
            return None

    def _read(self, key: str) -> Built | None:
        """(arrays, meta), None if absent; :class:`BadSeal` if the file is bad (its seal, or
        what it holds)."""
        try:
            blob = self.path(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BadSeal(f"cannot be read: {exc.strerror or exc}") from None
        payload = unseal(_TAG, blob)
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
                arrays = {k: np.asarray(npz[k]) for k in npz.files}
            meta = json.loads(arrays.pop(_META).tobytes().decode())
        except Exception as exc:        # sealed yet undecodable: written so by a bug
            raise BadSeal(f"{type(exc).__name__}: {exc}") from None
        return arrays, meta

    def save(self, key: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Path:
        """Atomically publish an artifact (temporary file in the same directory + rename)."""
        if _META in arrays:
            raise ValueError(f"array name {_META!r} is reserved")
        final = self.path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        payload = {k: np.asarray(v) for k, v in arrays.items()}
        payload[_META] = np.frombuffer(canonical_json(dict(meta)).encode(), dtype=np.uint8)
        np.savez(buf, **payload)
        atomic_write_bytes(final, seal(_TAG, buf.getvalue()))
        return final

    def get_or_create(self, fields: Mapping[str, Any], build: Callable[[], Built]
                      ) -> tuple[Arrays, dict[str, Any], bool]:
        """(arrays, meta, hit): the cached artifact for ``fields``, building it at most once.

        ``build`` runs only if no readable artifact exists once the lock is held;
        concurrent callers wait on the lock and then read what the builder wrote (or, with
        ``defer``, raise :class:`ArtifactBusy` at once, so their worker does other work).
        """
        key = self.key(fields)
        found = self.load(key)
        if found is not None:
            return (*found, True)
        with self._locked(key):
            try:
                found = self._read(key)
            except BadSeal as why:        # under the lock: no builder is writing it now
                discard(self.path(key), why, log, "built again")
                found = None
            if found is not None:
                return (*found, True)
            arrays, meta = build()
            meta = {**meta, "artifact_fields": dict(fields), "artifact_key": key}
            self.save(key, arrays, meta)
            return arrays, json.loads(canonical_json(meta)), False

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        lock = self.path(key).with_suffix(".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a+b") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (fcntl.LOCK_NB if self.defer else 0))
            except BlockingIOError:
                raise ArtifactBusy(f"artifact {key[:12]} is being built by another "
                                   "process") from None
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class ArtifactContext:
    """What a method may know about the trial it runs in."""

    cell: str                      # digest of the trial's data identity (dataset, params, trial)
    store: ArtifactStore | None    # None: caching off

    def seed(self, fields: Mapping[str, Any]) -> np.random.SeedSequence:
        """A seed derived from the cell and ``fields`` only (never from the data itself:
        noise seeded by a function of the private data would not be independent of it)."""
        h = hashlib.sha256(canonical_json({"cell": self.cell, **dict(fields)}).encode())
        return np.random.SeedSequence(int(h.hexdigest()[:32], 16))


_CONTEXT: ContextVar[ArtifactContext | None] = ContextVar("dpbench_artifacts", default=None)


@contextmanager
def artifact_context(cell: str, root: str | Path | None, *, defer: bool = False
                     ) -> Iterator[ArtifactContext]:
    """Run the enclosed trial with cell ``cell`` and cache root ``root`` (None: no cache);
    ``defer``: an artifact another process is building raises :class:`ArtifactBusy`."""
    ctx = ArtifactContext(cell, ArtifactStore(root, defer=defer) if root is not None else None)
    token = _CONTEXT.set(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.reset(token)


def current_context() -> ArtifactContext | None:
    return _CONTEXT.get()


def default_root(results_dir: str | Path) -> Path:
    """The cache root for a results directory: ``<results_dir>/cache``."""
    return Path(results_dir) / "cache"
