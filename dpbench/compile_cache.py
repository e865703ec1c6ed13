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

This module imports JAX only when JAX is already loaded or a method asks for it
(:func:`configure`), so the runner stays light.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT_ENV = "DPBENCH_CACHE_DIR"
SWITCH_ENV = "DPBENCH_JAX_CACHE"

#: every program is cached, however fast it compiled: AIM compiles one program per model
#: structure and many are under JAX's default 1 s threshold, yet together they dominate.
MIN_COMPILE_S = 0.0

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
    cc.reset_cache()                # the next compilation opens the cache at the new path


def use_root(root: str | Path) -> None:
    """Keep compiled programs under ``<root>/jax`` in this process and those it starts."""
    os.environ[ROOT_ENV] = str(Path(root).resolve())
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
    process); otherwise return at once. Called by ``dpbench.cli.main`` when it runs as the
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
