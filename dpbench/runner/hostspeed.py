"""How fast this machine runs a fixed piece of work now: the CPU seconds of a probe.

CPU seconds are not a constant of the work on a virtual machine: the host's other tenants
and its clock slow the guest, and the guest is charged for the time (no steal shows). On
dpbench's own 2-core VM the same trial, bit-identical, took 3.4 CPU-s one day and 9.9 the
next, and a whole arena 0.81 and 1.88 CPU-hours. So a trial's ``cpu_s`` says what its work
cost only beside a measure of the machine's speed when it ran.

That measure is :func:`probe`: the CPU seconds of one pass of a fixed, single-threaded
workload (interpreted Python and small numpy kernels, as the methods' fits mix them), the
fastest of :data:`ROUNDS` passes (a pass that an interrupt stretched is not the machine's
speed). Each worker process probes before a trial when its last probe is older than
:data:`MAX_AGE_S` (:func:`current`; ~0.15 s of CPU every five minutes) and the trial's record
keeps it as ``host_probe_s``, outside the trial's own ``cpu_s``.

``plan`` prices work, not seconds of another sitting: a stored trial's or reference fit's
seconds times ``target / host_probe_s``, where the target is this machine's probe now
(:func:`target`, measured at most every :data:`PLAN_MAX_AGE_S` and kept in the cache
folder), so trials measured on a slow day and on a fast one price a cell alike, and a
faster or slower machine than the one that measured them sees its own seconds. A trial
recorded without a probe keeps its seconds as they are (the plan says how many did).
``DPBENCH_HOST_PROBE`` sets the target: a number of seconds pins it (a cost at a stated
speed, e.g. another machine's), ``off`` turns the scaling off (the test suite's setting: its
plans read stored seconds as recorded).

An assumption, stated: a host that slows the probe slows every method's fit alike. The
probe mixes interpreted Python and BLAS as the fits do, but not in each method's proportion,
and it has not yet been measured beside a slow sitting (records began carrying it at
b8abe71, on a host at its usual speed: probes 0.038-0.046 CPU-s).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from dpbench.envnumber import positive

#: passes of the workload a probe times (the fastest is kept)
ROUNDS = 3
#: a worker probes again before a trial when its last probe is older than this
MAX_AGE_S = 300.0
#: ``plan`` measures this machine again when its kept probe is older than this
PLAN_MAX_AGE_S = 600.0
#: the environment variable that pins the target probe (seconds) or turns scaling ``off``
ENV = "DPBENCH_HOST_PROBE"
#: a record's field holding the probe its worker measured before the trial
FIELD = "host_probe_s"
#: where ``plan`` keeps this machine's last probe (under the cache folder)
CACHE_FILE = "host-probe.json"

_last: tuple[float, float] | None = None       # (monotonic time, probe) of this process


def _workload() -> float:
    """One pass: a pure-Python loop, then numpy matrix products, sorts and reductions on
    fixed data (no randomness, no allocation that grows); returns a value so that no part
    is skipped."""
    import numpy as np  # here: reading the setting (cli) needs no numpy
    acc = 0
    for i in range(600_000):
        acc += (i * 7) % 13
    a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) / (256 * 256)
    total = 0.0
    for k in range(36):
        b = a @ a.T
        if k % 3 == 0:
            total += float(np.sort(b, axis=None)[-1]) + float(np.exp(-b).sum())
    return acc + total


def probe(rounds: int = ROUNDS) -> float:
    """This process's CPU seconds for one pass of the workload, the fastest of ``rounds``
    (one BLAS thread: the cores' count does not change it)."""
    from threadpoolctl import threadpool_limits
    best = math.inf
    with threadpool_limits(limits=1):
        for _ in range(rounds):
            t0 = time.process_time()
            _workload()
            best = min(best, time.process_time() - t0)
    return round(best, 5)


def current() -> float:
    """This worker's probe, measured again when older than :data:`MAX_AGE_S`."""
    global _last
    now = time.monotonic()
    if _last is None or now - _last[0] > MAX_AGE_S:
        _last = (now, probe())
    return _last[1]


#: :func:`setting` when ``DPBENCH_HOST_PROBE`` is unset: measure this machine
MEASURE = "measure"


def setting() -> float | str | None:
    """``DPBENCH_HOST_PROBE`` read: a pinned probe (a positive number of seconds), None for
    ``off`` (no scaling), :data:`MEASURE` when unset; a malformed value is a ValueError
    naming it and the valid choices."""
    pinned = os.environ.get(ENV, "").strip()
    if pinned.lower() == "off":
        return None
    if pinned:
        return positive(ENV, pinned, "a positive number of seconds or 'off'")
    return MEASURE


def target(cache: Path | None = None) -> float | None:
    """The probe a plan scales seconds to: ``DPBENCH_HOST_PROBE``'s (:func:`setting`), else
    this machine's probe, kept in ``cache`` (a JSON file) for :data:`PLAN_MAX_AGE_S` so a
    plan run again soon does not measure again."""
    chosen = setting()
    if chosen != MEASURE:
        return chosen                                       # type: ignore[return-value]
    if cache is not None:
        try:
            kept = json.loads(cache.read_text())
            if 0 <= time.time() - float(kept["at"]) <= PLAN_MAX_AGE_S \
                    and float(kept["probe_s"]) > 0:
                return float(kept["probe_s"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    measured = probe()
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"probe_s": measured, "at": time.time()}))
        except OSError:
            pass                     # a read-only cache folder: measured again next time
    return measured


def of_record(record: object) -> float | None:
    """A record's (or reference line's) probe, None when it has none usable."""
    value = record.get(FIELD) if isinstance(record, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value > 0 else None


def scale(seconds: float, probe_s: float | None, to: float | None) -> float:
    """``seconds`` measured at ``probe_s`` as seconds at ``to`` (unchanged when either is
    unknown)."""
    return seconds if probe_s is None or to is None else seconds * to / probe_s
