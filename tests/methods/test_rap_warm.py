"""A clean clone's first RAP fit loads RAP's Numba loop instead of compiling it (issue 59,
defect 9): ``make install`` runs scripts/warm_caches.py, which compiles the loop for the
argument types ``RAP._loop`` passes. Checked by Numba's own cache counters, not by time:
in a fresh cache a fit compiles (a miss); after the warm-up, the same fit in a new process
only loads (hits, no miss)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_FIT = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_query_release_methods import tiny_data
from dpbench.methods.query_release import _rap_loop
from dpbench.methods.query_release.rap import RAP
from dpbench.privacy.accountant import Accountant
for softmax, lr in ((False, 1e-3), (True, 0.1)):
    RAP(T=2, K=4, n_rows=100, softmax=softmax, lr=lr, max_iters=50, step="loop").fit(
        tiny_data(), Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(1))
stats = _rap_loop.descend.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def _fit_counts(cache: Path) -> tuple[int, int]:
    """(cache hits, cache misses) of ``descend`` over a RAP and a RAP-softmax fit (seed 1)
    in a new process whose Numba cache is ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _FIT.format(tests=str(Path(__file__).parent))],
                         env=env, capture_output=True, text=True, check=True).stdout
    hits, misses = map(int, out.split()[-2:])
    return hits, misses


def test_the_warm_up_compiles_what_the_first_fit_loads(tmp_path: Path) -> None:
    assert _fit_counts(tmp_path / "cold")[1] >= 1           # a fresh cache: the fit compiles
    warm = tmp_path / "warm"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(warm)}
    said = subprocess.run([sys.executable, str(REPO / "scripts" / "warm_caches.py")], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert "RAP's Numba loop compiled" in said, said
    hits, misses = _fit_counts(warm)
    assert (hits >= 1, misses) == (True, 0), (hits, misses)
