"""The one place that configures JAX's persistent compilation cache.

XLA compilation is a large share of a JAX method's run on CPU (a third of an AIM fit at
the DD-SSP paper's settings, ~20 s per Bayesian sampler). JAX can keep compiled programs
on disk and load them in any later process that compiles the same program (same HLO,
compile options, jax/jaxlib version and flags), so trials, workers, SLURM tasks and later
runs share one cache. A loaded program is the same executable, so results do not depend
on the cache (tests/core/test_compile_cache.py checks bit-identity and that a second
process compiles nothing).

Where: ``<root>/jax`` with root = ``$DPBENCH_CACHE_DIR``, else the repository's
``results/cache``. The runner points it at ``<results_dir>/cache`` for every trial
(:func:`use_root`, called in ``execute.run_trial``), which sets the variable too, so
processes started from a worker inherit it. ``DPBENCH_JAX_CACHE=off`` turns the cache off.
``DPBENCH_PROGRAM_CACHE_DIR`` pins it: when set, the programs stay in that folder for every
trial whatever its results folder (one cache for several results folders, e.g. a test
session whose runs each write to their own temporary results folder: tests/conftest.py).

How much: at most ``DPBENCH_CACHE_MAX_MB`` (default :data:`DEFAULT_MAX_MB`; ``unlimited``
for no cap) for the compiled programs here and program_store.py's traced ones together
(:func:`max_bytes`). An AIM trial at the DD-SSP paper's settings adds ~7 MB of programs,
and a grid's trials mostly fit new model structures, so an uncapped cache grows with every
sweep until the disk fills and the sweep dies. After every trial that added programs
(``execute.run_trial`` calls :func:`prune_if_grown`), the least recently used go until
each store is within its share: last use is the file's access time where the filesystem
keeps one (Linux's default ``relatime``: at most once a day), else its write time; a read
from the traced store renews both. The programs used in every trial (flat.py's size
classes) are used most recently and stay. (JAX's own cap, ``jax_compilation_cache_max_size``,
scans the whole directory under a file lock at every write: ~0.1 s per compile at 5,000
entries, measured; this scan runs once per trial.) A program deleted under a reader is
compiled or traced again, with the same result.

A program's cache key is a hash of its traced program, and the programs that mbi
(AIM/MST) traces depend on Python's set iteration order, i.e. on the hash seed: with a
random seed per process a later process recompiles part of them (results do not depend on
it). So every process that runs trials runs with one hash seed, :data:`HASH_SEED`, unless
the user set ``PYTHONHASHSEED``: the ``dpbench`` command re-executes itself once with it
(:func:`reexec_with_hash_seed`), and :func:`pin_hash_seed` puts it in the environment that
loky workers and SLURM tasks inherit.

XLA's CPU runtime splits a large reduction across its thread pool, whose size is the
number of cores the process may use, so the same fit gives results that differ in the
last bits with 1 and 2 cores (AIM's default-profile fit on Adult: different digests), and
two workers on two cores each run a 2-thread pool and slow each other down. So every
process that runs trials runs XLA on :data:`XLA_THREADS` thread(s), as BLAS
(``threadpool_limits`` in ``execute.run_trial``), unless the user set ``NPROC``, the
variable XLA's CPU client reads for its pool size (:func:`pin_xla_threads`): results are
then the same whatever the worker count or the machine's core count, and n workers use
n cores.

Every entry is checked against its sha256 before JAX reads it, and a bad one is deleted
and written again (cache_check.py; JAX alone warns in every process and never rewrites it).

This module imports JAX only when JAX is already loaded or a method asks for it
(:func:`configure`), so the runner stays light.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from dpbench import cache_check
from dpbench.envnumber import positive

ROOT_ENV = "DPBENCH_CACHE_DIR"
SWITCH_ENV = "DPBENCH_JAX_CACHE"
#: a cache root that :func:`use_root` keeps whatever results folder a trial names
PIN_ENV = "DPBENCH_PROGRAM_CACHE_DIR"

#: every program is cached, however fast it compiled: AIM compiles one program per model
#: structure and many are under JAX's default 1 s threshold, yet together they dominate.
MIN_COMPILE_S = 0.0

MAX_MB_ENV = "DPBENCH_CACHE_MAX_MB"
#: the cache's default cap, MB: compiled (JAX) and traced (program_store) programs together
DEFAULT_MAX_MB = 4096
#: the cap's share of each store: JAX's compiled programs, and program_store's traced ones
#: (about a quarter of their size)
SHARES = {"compiled": 0.8, "traced": 0.2}

HASH_SEED_ENV = "PYTHONHASHSEED"
#: the hash seed of every process that runs trials unless the user set ``PYTHONHASHSEED``
HASH_SEED = "0"


def cache_root() -> Path:
    """``$DPBENCH_CACHE_DIR`` or the repository's ``results/cache``."""
    env = os.environ.get(ROOT_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[1] / "results" / "cache"


def jax_cache_dir() -> Path:
    """Where JAX's compiled programs are kept: ``<cache_root()>/jax``."""
    return cache_root() / "jax"


def enabled() -> bool:
    """False when ``DPBENCH_JAX_CACHE`` is off / 0 / false / no."""
    return os.environ.get(SWITCH_ENV, "on").strip().lower() not in {"off", "0", "false", "no"}


def max_bytes() -> int | None:
    """The cache's cap in bytes from ``DPBENCH_CACHE_MAX_MB`` (a positive number of MB,
    default :data:`DEFAULT_MAX_MB`), or None for ``unlimited``; anything else is a
    ValueError that names the value and the valid choices."""
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_MB * 2**20
    if raw.lower() == "unlimited":
        return None
    mb = positive(MAX_MB_ENV, raw, f"a positive number of MB (default {DEFAULT_MAX_MB}) or "
                  "'unlimited'")
    return max(1, int(mb * 2**20))


def share_bytes(store: Literal["compiled", "traced"]) -> int:
    """The cap in bytes (-1: no cap) of ``store``, ``"compiled"`` (JAX's programs) or
    ``"traced"`` (program_store's): its :data:`SHARES` of :func:`max_bytes`."""
    cap = max_bytes()
    if cap is None:
        return -1
    return max(1, int(cap * SHARES[store]))


def prune(folder: Path, cap: int) -> int:
    """Delete the least recently used files of ``folder`` (by the later of access and
    modification time) until the rest take at most ``cap`` bytes (-1: no cap), skipping
    other processes' half-written files (``.``-prefixed: JAX's and program_store's temporary
    files, JAX's lock); returns how many were deleted."""
    if cap < 0:
        return 0
    files = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.startswith(".") or not e.is_file():
                    continue
                st = e.stat()
                files.append((max(st.st_atime_ns, st.st_mtime_ns), e.name, st.st_size))
    except OSError:
        return 0
    total = sum(size for _, _, size in files)
    deleted = 0
    for _, name, size in sorted(files):
        if total <= cap:
            break
        try:
            (folder / name).unlink()
            deleted += 1
        except OSError:
            pass       # gone already: another process pruned it
        (folder / cache_check.SUMS / name.removesuffix("-cache")).unlink(missing_ok=True)
        total -= size
    return deleted


_seen: dict[Path, int] = {}   # folder -> its modification time at this process's last prune


def prune_if_grown() -> int:
    """Prune both stores of the cache root to their shares of :func:`max_bytes`, each only
    if files were added or removed since this process last pruned it (its directory's
    modification time changed), so a trial that compiled nothing costs two ``stat``
    calls; returns how many files were deleted."""
    if not enabled() or max_bytes() is None:
        return 0
    deleted = 0
    for folder, store in ((jax_cache_dir(), "compiled"), (cache_root() / "jax-export", "traced")):
        try:
            stamp = folder.stat().st_mtime_ns
        except OSError:
            continue
        if _seen.get(folder) == stamp:
            continue
        deleted += prune(folder, share_bytes(store))
        try:
            _seen[folder] = folder.stat().st_mtime_ns
        except OSError:
            _seen.pop(folder, None)
    return deleted


def configure() -> None:
    """Apply the cache settings to the (imported) JAX of this process; idempotent.

    Called by every module that uses JAX right after importing it, and again by
    :func:`use_root` when the runner moves the cache to a results directory.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    path = str(jax_cache_dir()) if enabled() else None
    current = jax.config.jax_compilation_cache_dir
    on = jax.config.jax_enable_compilation_cache
    if current == path and on == enabled():
        return
    jax.config.update("jax_enable_compilation_cache", enabled())
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_S)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    cache_check.install()           # entries checked against their sha256 (cache_check.py)
    cc.reset_cache()                # the next compilation opens the cache at the new path


def use_root(root: str | Path) -> None:
    """Keep compiled programs under ``<root>/jax`` in this process and those it starts, or
    under ``$DPBENCH_PROGRAM_CACHE_DIR/jax`` when that is set (a pinned cache)."""
    os.environ[ROOT_ENV] = str(Path(os.environ.get(PIN_ENV) or root).resolve())
    if "jax" in sys.modules:
        configure()


XLA_THREADS_ENV = "NPROC"
#: XLA's CPU thread-pool size in every process that runs trials unless the user set NPROC
XLA_THREADS = "1"


def pin_xla_threads() -> str:
    """Put ``NPROC`` = :data:`XLA_THREADS` in this process's environment unless the user set
    it; return the value this process and those started from it (workers, SLURM tasks) run
    XLA with. XLA reads it when the process's first JAX computation creates its CPU client,
    so call this before any."""
    return os.environ.setdefault(XLA_THREADS_ENV, XLA_THREADS)


def pin_hash_seed() -> str:
    """Put ``PYTHONHASHSEED`` = :data:`HASH_SEED` in this process's environment unless the
    user set one; return the value processes started from here (workers, SLURM tasks) get.

    Python reads the variable only at start-up: this process keeps its own seed, see
    :func:`reexec_with_hash_seed` for the ``dpbench`` command itself."""
    return os.environ.setdefault(HASH_SEED_ENV, HASH_SEED)


def reexec_with_hash_seed() -> None:
    """If ``PYTHONHASHSEED`` is unset, replace this process by the same command line run
    with ``PYTHONHASHSEED`` = :data:`HASH_SEED` (``os.execv``: same pid, same open files
    and terminal, so signals, exit status and stdin/stdout behave as for the first
    process); otherwise return at once. Called by ``dpbench.entry.main`` when it runs as the
    command, before it has printed or started anything."""
    if HASH_SEED_ENV in os.environ:     # the user's seed, or already re-executed
        return
    argv = list(getattr(sys, "orig_argv", []) or [sys.executable, *sys.argv])
    if not argv or not sys.executable:
        return
    os.environ[HASH_SEED_ENV] = HASH_SEED
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(sys.executable, [sys.executable, *argv[1:]])
    except OSError:   # cannot re-execute: go on with this process's random seed (workers
        pass          # and SLURM tasks still get HASH_SEED from the environment)
