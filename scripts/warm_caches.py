"""Compile ahead what a clean clone would otherwise compile inside its first trials: RAP's
Numba loop (``dpbench.methods.query_release._rap_loop.warm``), into Numba's on-disk cache
(``__pycache__`` beside the module, or ``$NUMBA_CACHE_DIR``). ``make install`` runs it; it
prints what it compiled and what was already cached. Safe to run again (a cached loop is
loaded, not rebuilt)."""

from __future__ import annotations

import sys
import time


def main() -> int:
    """Warm every compile cache dpbench keeps ahead of its first fit; exit 0."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        from dpbench.methods.query_release import _rap_loop
    except ImportError as exc:         # no Numba: RAP runs its torch steps instead
        print(f"warm caches: RAP's loop skipped ({exc})")
        return 0
    _rap_loop.warm()
    stats = _rap_loop.descend.stats
    print(f"warm caches: RAP's Numba loop {'compiled' if stats.cache_misses else 'cached'} "
          f"({time.process_time() - c0:.1f} CPU-s, {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
