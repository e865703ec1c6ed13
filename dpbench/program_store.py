"""Traced JAX programs kept across processes (``jax.export``), next to the compile cache.

JAX's persistent compilation cache (compile_cache.py) skips only the XLA backend compile:
before it can look a program up, every process traces the Python function to a jaxpr and
lowers it to StableHLO, and for AIM's small fits that is about 40% of a later process's
run (one program per model structure; docs/speed.md). :func:`call` skips those two steps
too: the first process that runs a program exports it (the lowered StableHLO, serialised
with ``jax.export``) to ``<cache_root>/jax-export/<key>``; any later process with the same
key deserialises it and calls it. The key is a sha256 of the program's description (the
caller's static arguments, the argument tree and every leaf's shape and dtype, the
compiler options, jax's version and x64 flag).

Results do not depend on the store: every call, in the first process or a later one, runs
the *exported* program (the first process exports, then calls what it exported), so
with or without the store, and before or after a reload, the same StableHLO is compiled
with the same options (tests/core/test_compile_cache.py checks bit-identity). The store is
switched with the compile cache (``DPBENCH_JAX_CACHE=off`` turns both off; then the
program is exported in memory only, still called the same way).

The store is capped with the compile cache (compile_cache.prune_if_grown, after every
trial: its share of ``DPBENCH_CACHE_MAX_MB``, least recently used first; a read here marks
a program used); a program deleted under a reader is traced again, with the same result.

A description that cannot be keyed across processes (a repr holding an object address,
e.g. a lambda) is exported in memory only. The output tree (mbi's dataclasses) is stored
with pickle next to the program: the store holds what this user's own runs wrote.

Every file is sealed (checksum.py: a header, the sha256 of the payload, the payload) and
the seal is checked before anything is unpickled or deserialised. A file that fails the
check, cannot be decoded, or whose program fails at its first call (where JAX compiles
it) is deleted with a warning naming it, and the program is traced and exported again,
so the call goes on with the same result and the next process finds a good file
(tests/core/test_program_store.py flips bytes in the header, the digest and the payload).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import logging
import os
import pickle
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
from jax import export

from dpbench import compile_cache
from dpbench.checksum import BadSeal, discard, replace_file, seal, unseal

#: bump when the file format or what goes into the key changes
FORMAT = 2
_TAG = b"dpbench-program %d\n" % FORMAT
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
log = logging.getLogger(__name__)

_loaded: dict[str, tuple[Callable[..., Any], Any]] = {}
stats = {"exported": 0, "loaded": 0}     # this process's counts (tests and benchmarks read them)


def store_dir() -> Path:
    """``<cache_root>/jax-export`` (compile_cache.cache_root: the runner's results cache)."""
    return compile_cache.cache_root() / "jax-export"


@functools.cache
def code_fingerprint(module: str, packages: tuple[str, ...]) -> str:
    """sha256 of ``module``'s source and every .py file of ``packages`` (e.g. mbi), so an
    edited or upgraded library never meets a program exported from its old code."""
    h = hashlib.sha256()
    files = [Path(inspect.getfile(importlib.import_module(module)))]
    for name in packages:
        pkg = importlib.import_module(name)
        files += sorted(Path(pkg.__file__).parent.rglob("*.py"))
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _describe(static: str, in_tree: object, leaves: list[Any],
              options: Mapping[str, object] | None) -> tuple[str, bool]:
    """(description, whether it is the same in every process)."""
    shapes = [(tuple(jax.numpy.shape(x)), str(jax.numpy.result_type(x)),
               bool(getattr(x, "weak_type", isinstance(x, (int, float))))) for x in leaves]
    text = repr((FORMAT, jax.__version__, bool(jax.config.jax_enable_x64), static, str(in_tree),
                 shapes, sorted((options or {}).items())))
    stable = "<lambda>" not in text and "<locals>" not in text
    return _ADDRESS.sub("", text), stable


def call(fn: Callable[..., Any], args: tuple[Any, ...], *, static: str,
         packages: tuple[str, ...] = (),
         compiler_options: Mapping[str, object] | None = None) -> Any:
    """``fn(*args)`` as one compiled program, traced once across processes.

    ``fn`` must be a pure JAX function of the pytree ``args`` whose other inputs are all
    described by ``static`` (e.g. the repr of the static arguments it closes over): two
    calls with equal ``static``, argument tree, shapes and dtypes must mean the same
    program. The key also holds the source of ``fn``'s module and of ``packages`` (the
    libraries ``fn`` calls), so editing either never reuses an old program.
    ``compiler_options`` are XLA options for the compile.
    """
    leaves, in_tree = jax.tree_util.tree_flatten(args)
    base = fn.func if isinstance(fn, functools.partial) else fn
    code = code_fingerprint(base.__module__, tuple(packages))
    text, stable = _describe(f"{base.__module__}.{base.__qualname__}:{code}:{static}", in_tree,
                             leaves, compiler_options)
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    options = dict(compiler_options or {})
    entry = _loaded.get(key)
    if entry is None:
        path = store_dir() / key if stable and compile_cache.enabled() else None
        stored = _read(path) if path is not None else None
        if stored is not None:
            _loaded[key] = entry = _jitted(stored, options)
            try:
                out = _apply(entry, leaves)
            except Exception as exc:     # decoded but unusable (e.g. XLA refuses it)
                del _loaded[key]
                discard(path, f"{type(exc).__name__}: {exc}", log, "traced again")
            else:
                stats["loaded"] += 1
                return out
        try:
            stored = _export(fn, in_tree, leaves)
        except Exception as exc:   # not exportable (e.g. a host callback): plain jit,
            log.warning("program_store: %s not exported (%s); traced in every process",
                        base.__qualname__, exc)   # the same program in every process
            _loaded[key] = (jax.jit(fn, compiler_options=options), None)
            return _loaded[key][0](*args)
        if path is not None:
            _write(path, stored)
        _loaded[key] = entry = _jitted(stored, options)
    if entry[1] is None:                                    # the plain-jit fallback
        return entry[0](*args)
    return _apply(entry, leaves)


def _jitted(stored: tuple[Any, Any], options: dict[str, object]) -> tuple[Callable[..., Any], Any]:
    """(the jitted call of an Exported, its output tree)."""
    exported, out_tree = stored
    return jax.jit(exported.call, compiler_options=options), out_tree


def _apply(entry: tuple[Callable[..., Any], Any], leaves: list[Any]) -> Any:
    run, out_tree = entry
    return jax.tree_util.tree_unflatten(out_tree, run(*leaves))


def forget() -> None:
    """Drop this process's loaded programs (they stay in the store; e.g. when JAX's caches
    are cleared to free memory, marginals/_mbi.release_compiled_programs_if_needed)."""
    _loaded.clear()


def _export(fn: Callable[..., Any], in_tree: object, leaves: list[Any]) -> tuple[Any, Any]:
    trees: list[object] = []

    def flat(*xs: Any) -> list[Any]:
        out, out_tree = jax.tree_util.tree_flatten(fn(*jax.tree_util.tree_unflatten(in_tree, xs)))
        trees.append(out_tree)
        return out

    exported = export.export(jax.jit(flat))(*leaves)
    stats["exported"] += 1
    return exported, trees[-1]


def _read(path: Path) -> tuple[Any, Any] | None:
    """(Exported, output tree) from the store, or None when absent or bad (a bad file is
    deleted, with a warning naming it: the caller traces the program again)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None                     # absent (or unreadable: traced, not replaced)
    try:
        program, out_tree = pickle.loads(unseal(_TAG, blob))   # sealed: this user's own
        entry = export.deserialize(bytearray(program)), out_tree
    except Exception as exc:            # any decode error means a bad file
        why = exc if isinstance(exc, BadSeal) else f"{type(exc).__name__}: {exc}"
        discard(path, why, log, "traced again")
        return None
    try:
        os.utime(path)                  # used now: the last to go when the store is pruned
    except OSError:
        pass                            # e.g. a read-only shared store: still used
    return entry


def _write(path: Path, entry: tuple[Any, Any]) -> None:
    """Write atomically (a crash leaves the old file or none, never half a file)."""
    exported, out_tree = entry
    try:
        blob = seal(_TAG, pickle.dumps((bytes(exported.serialize()), out_tree)))
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, blob)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass       # not stored: a later process traces again, results are the same


__all__ = ["call", "forget", "stats", "store_dir"]
