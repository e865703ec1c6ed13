"""What a grid costs before it runs: per-trial seconds and peak memory from the store, and
what they mean for a runner (CPU-hours, the longest trial, the wall time with the runner's
workers, a SLURM array's tasks against ``runner.timeout_min`` and ``runner.mem_gb``).

Each trial to run gets its figures from the first of these that has them:

1. **same cell**: the stored ok trials of its cell (its identity but the trial number):
   their mean seconds, the longest of them, their largest peak memory;
2. **reference**: the same from the reference fits that ship with dpbench (every paper's,
   the experiment's own first; :mod:`~dpbench.runner.reference_costs`: trials measured on
   another machine), for a cell the store has none of;
3. **interpolated**: for a cell none of whose own trials is known but whose dataset and
   method (every setting but the budget) were measured at a smaller and at a larger budget
   (stored trials, else reference fits, per budget as in 1 and 2): the seconds, and the
   longest, of the nearest budget on each side joined by a straight line in log seconds
   against log budget, memory the larger of the two: the dataset's own costs rather than
   the model's fit across datasets (checked against measured fits in docs/slurm.md);
4. **model**: a per-method cost model fitted on the stored ok trials and the reference fits
   of the same method (name, class and budget unit; a method never measured: of every method
   of its class in that unit), in any experiment: least squares of log seconds on the logs
   of the trial's features whose stored values span at least a factor of ``MIN_SPAN``
   (training rows ``n`` and columns ``d`` of its dataset, as stored trials of that dataset
   recorded them; the budget; numeric method parameters), features dropped last first until
   the distinct settings outnumber the coefficients by one and the fit is of full rank; with
   no feature left, the median of the method's trials (**median**). The model does not
   extrapolate: a feature beyond its stored values is held at the nearest one and the trial
   is named as reaching beyond them (an underestimate where the cost grows with it; a slope
   fitted on a narrow range, extrapolated, gave hours for seconds), and its figure is kept
   between the fastest and the slowest of the trials it was fitted on (features each within
   range can still combine as no trial did: one method class's fits from several papers,
   pooled, once gave an arena cell 1,200 hours). The longest to expect is the estimate times
   the largest ratio of actual to fitted time among the trials fitted; memory is the largest
   peak of the method's trials on the same dataset, else on the datasets nearest in size
   (training rows and columns, in logs; a 7.2 GB fit on a large table once priced a trial
   on a small one that peaks at 0.5 GB), else (the size unknown) on any;
5. **unknown**: counted and named, never given a number.

Shared fits: a trial whose measured trials found a shared fit (an artifact, e.g. one model
serving two methods, or a pre-trained network) built by a trial of another cell is cheap
only where that trial runs too. When the builder's trial (its cell at the same budget and
trial number; at the builder's own where a hit at another showed that one fit serves
several) neither runs in the grid nor was stored by a run on this store (a trial of the
shipped reference left no fit in this machine's cache), the first trial that needs the
fit is counted at the builder's cost (the larger of its own estimate and the builder
cell's longest measured trial, since that cell holds both the trial that built the fit and
trials that found it built), once per fit, and the plan says which cells do so.

Seconds are CPU seconds, never wall seconds: a stored trial's ``cpu_s`` (its worker's CPU
time over the trial, every thread, not stretched when other work shares the cores), a
reference fit's ``seconds`` when its ``seconds_are`` says ``cpu``. A record written before
dpbench kept ``cpu_s`` (or a reference line of wall seconds) is left out of every figure,
estimates and the done trials' total alike, and the plan says how many were. The longest trial is
stated at its expected time (the total holds it) and, where they differ, with the slowest
case its figures allow. Memory is the record's ``peak_rss_mb``: the worker process's peak
resident set during the trial (``execute`` resets the high-water mark as the trial starts),
so it includes what the process already held (libraries, compiled programs, data of earlier
trials): what a process running the trial needs, more than the trial alone allocates.
Records without it give ``maxrss_mb``, the process's peak over its whole life (an upper
bound).

Speed: CPU seconds of the same work vary with the machine and, on a virtual machine, with its
host's state (3x between two days for bit-identical trials here). A record keeps its worker's
``host_probe_s`` (:mod:`~dpbench.runner.hostspeed`: a fixed workload's CPU seconds, measured
every few minutes), and every seconds figure above, stored or reference, is first scaled to
one target probe (this machine's now, or ``DPBENCH_HOST_PROBE``): the plan prices work, and
says how many measured trials had no probe (their seconds are taken as recorded).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from heapq import heapify, heapreplace
from statistics import median
from typing import Any

import numpy as np

from dpbench.checksum import code_digest, read_kept, write_kept
from dpbench.compile_cache import cache_root
from dpbench.runner import hostspeed
from dpbench.runner.grid import costliest_first
from dpbench.runner.reference import REFERENCE as REFERENCE_ORIGIN
from dpbench.runner.spec import TrialSpec, digest
from dpbench.runner.store import OK, ResultStore, is_number

SAME_CELL, REFERENCE, INTERPOLATED, MODEL, MEDIAN, UNKNOWN = (
    "same cell", "reference", "interpolated", "model", "median", "unknown")
#: what each source is called in the plan
SOURCE_TEXT = {SAME_CELL: "from stored trials of the same cells",
               REFERENCE: "from reference fits of the same cells",
               INTERPOLATED: "interpolated between measured budgets of the same dataset and "
                             "method",
               MODEL: "from a per-method model", MEDIAN: "from the method's median",
               UNKNOWN: "unknown"}
#: headroom asked of runner.timeout_min over the longest task and of runner.mem_gb over
#: the largest peak memory (trial times vary between machines and sittings; memory less)
TIME_MARGIN, MEM_MARGIN = 1.5, 1.25
#: a feature enters a model only if its stored values span at least this factor
MIN_SPAN = 2.0
#: the features a model tries, in the order they are kept (numeric method parameters last)
BASE_FEATURES = ("n", "eps", "d")
FEATURE_TEXT = {"n": "training rows", "d": "columns", "eps": "budget",
                "size": "dataset never stored (size unknown)"}


def record_seconds(record: Mapping[str, Any]) -> float:
    """A trial's data + fit + evaluation seconds, as its record states them."""
    return float(sum(v for v in (record.get("timing") or {}).values() if is_number(v)))


def record_cpu_seconds(record: Mapping[str, Any]) -> tuple[float, bool]:
    """A trial's CPU seconds (its record's ``cpu_s``: the worker's CPU time over the trial,
    every thread) and True; a record written before dpbench kept it: its data + fit +
    evaluation wall seconds and False (never used as CPU time: the cost leaves it out)."""
    cpu = record.get("cpu_s")
    if is_number(cpu) and cpu >= 0:
        return float(cpu), True
    return record_seconds(record), False


def record_mem_mb(record: Mapping[str, Any]) -> float | None:
    """A trial's peak memory in MiB: ``peak_rss_mb``, else ``maxrss_mb``, else None."""
    for name in ("peak_rss_mb", "maxrss_mb"):
        if is_number(record.get(name)):
            return float(record[name])
    return None


def cell_of(spec: TrialSpec) -> str:
    """The trial's cell: a hash of its identity with the trial number left out."""
    return digest({**spec.identity(), "trial": None})


def budgets_of(spec: TrialSpec) -> str:
    """The trial's cell with its budget left out: the cells that differ in budget only."""
    return digest({**spec.identity(), "trial": None, "epsilon": None})


def cell_and_budgets(spec: TrialSpec) -> tuple[str, str]:
    """(:func:`cell_of`, :func:`budgets_of`) from one reading of the spec's identity."""
    ident = {**spec.identity(), "trial": None}
    return digest(ident), digest({**ident, "epsilon": None})


def data_of(spec: TrialSpec) -> str:
    """The trial's dataset (name, loader, parameters), whatever its trial number."""
    return digest({k: v for k, v in spec.data_identity().items() if k != "trial"})


#: a trial key's (cell, budgets, data): three hashes of its identity, computed once per
#: process (:func:`identities`) or read with a reference file (``read_reference``'s cache)
IDENTITIES: dict[str, tuple[str, str, str]] = {}


def identities(spec: TrialSpec) -> tuple[str, str, str]:
    """(:func:`cell_of`, :func:`budgets_of`, :func:`data_of`) of ``spec``, each hashed once
    per trial key: a plan prices a grid against every reference fit dpbench ships."""
    found = IDENTITIES.get(spec.key)
    if found is None:
        found = IDENTITIES[spec.key] = (*cell_and_budgets(spec), data_of(spec))
    return found


def group_of(spec: TrialSpec) -> tuple[str, ...]:
    """What one cost model covers: a method (its name without a sweep's ``[...]``) of one
    class with its budgets in one unit."""
    return spec.method_target, spec.budget_unit, spec.method.split("[", 1)[0]


def class_of(spec: TrialSpec) -> tuple[str, ...]:
    """What a cost model covers where the method itself was never measured: every method
    of its class with budgets in the same unit."""
    return spec.method_target, spec.budget_unit


def features_of(spec: TrialSpec, size: tuple[int, int] | None) -> dict[str, float]:
    """Log features of a trial: ``n``, ``d`` (when its dataset's size is known), ``eps``
    and each positive numeric method parameter (``param.<name>``)."""
    out: dict[str, float] = {}
    if size:
        out.update(n=math.log(size[0]), d=math.log(size[1]))
    if spec.epsilon > 0:
        out["eps"] = math.log(spec.epsilon)
    for name, value in spec.method_params.items():
        if is_number(value) and value > 0:
            out[f"param.{name}"] = math.log(value)
    return out


@dataclass(frozen=True)
class Stored:
    """One stored ok trial, reduced to what its cost tells."""

    spec: TrialSpec
    seconds: float
    mem_mb: float | None
    size: tuple[int, int] | None      # (training rows, columns) of its dataset
    lower_bound: bool = False         # a reference fit stopped unfinished after ``seconds``
    artifact: str | None = None       # the key of the shared fit (artifact) it used, if any
    artifact_hit: bool = False        # it found that fit built by another trial
    wall: bool = False                # no CPU time recorded: ``seconds`` are wall seconds
    probe: float | None = None        # the machine's speed when it ran (:mod:`hostspeed`)


@dataclass(frozen=True)
class Estimate:
    """The expected seconds of one trial, the longest to expect, its peak memory (MiB) and
    where they come from (a source above; all None when unknown). ``beyond``: for a model's
    estimate, the features whose value lies beyond those of the trials it was fitted on
    (``size``: the dataset's size is not known), an extrapolation. ``at_least``: the cell's
    reference fit was stopped unfinished, so its seconds are a lower bound."""

    seconds: float | None
    longest: float | None
    mem_mb: float | None
    source: str
    beyond: tuple[str, ...] = ()
    at_least: bool = False            # from a reference fit that did not finish
    builds_shared: bool = False       # pays for a shared fit its measured trials found built


def reference_trials(lines: Iterable[Mapping[str, Any]]) -> list[Stored]:
    """The lines of a reference file (:func:`~dpbench.runner.reference_costs.read_reference`)
    as stored trials."""
    return [Stored(TrialSpec.from_dict(ln["spec"], key=ln["key"]), float(ln["seconds"]),
                   float(ln["peak_rss_mb"]) if is_number(ln.get("peak_rss_mb")) else None,
                   (int(ln["n_train"]), int(ln["d"])), bool(ln.get("unfinished")),
                   *artifact_of(ln), wall=ln.get("seconds_are") != "cpu",
                   probe=hostspeed.of_record(ln))
            for ln in lines]


def artifact_of(record: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(artifact key, found built) of a store record (its ``info``) or a reference line."""
    info = record.get("info") if isinstance(record.get("info"), Mapping) else record
    key = info.get("artifact_key")
    return (key, bool(info.get("cache_hit"))) if isinstance(key, str) else (None, False)


def stored_trials(store: ResultStore) -> list[Stored]:
    """Every usable ok record of the store whose spec this dpbench reads.

    Read through the store's cost index (``<cache_root>/store-costs``, sealed): each
    record's few figures a plan needs, kept with its file's size, modification time and
    inode, so a record is parsed again only when its file changed (the records hold their
    privacy ledgers: a store of a paper grid is tens of MB of JSON, of which the plan needs
    a few fields per trial)."""
    stats = store.file_stats(inode=True)
    path = cache_root() / "store-costs" / f"{digest(str(store.trials.resolve()))[:24]}.pickle"
    kept = read_kept(path, COSTS_TAG, code_digest())
    old: dict[str, tuple[tuple[int, ...], Stored | None]] = kept if isinstance(kept, dict) \
        else {}
    index = {k: old[k] if k in old and old[k][0] == st else _indexed(st, store.get(k))
             for k, st in sorted(stats.items())}
    if index.keys() != old.keys() or any(index[k] is not old[k] for k in index):
        write_kept(path, COSTS_TAG, code_digest(), index, quiet=True)
    out = []
    for _, t, ids in index.values():
        if t is not None:
            IDENTITIES.setdefault(t.spec.key, ids)      # kept: not hashed again
            out.append(t)
    return out


#: the header of the store's cost index (:func:`stored_trials`)
COSTS_TAG = b"dpbench-store-costs 3\n"


def _indexed(stat: tuple[int, ...], rec: Mapping[str, Any] | None
             ) -> tuple[tuple[int, ...], Stored | None, tuple[str, str, str] | None]:
    """A record's entry in the store's cost index: its file's stat, the record as a stored
    trial (or None) and that trial's :func:`identities`."""
    t = _stored(rec)
    return stat, t, None if t is None else identities(t.spec)


def _stored(rec: Mapping[str, Any] | None) -> Stored | None:
    """A usable ok record as a stored trial; None for any other (failed, damaged, or of a
    spec layout this dpbench does not read)."""
    if rec is None or rec.get("status") != OK:
        return None
    try:
        spec = TrialSpec.from_dict(rec["spec"])
        _ = spec.key                    # kept with the spec: not hashed again
    except (TypeError, KeyError):       # a record of an older or newer spec layout
        return None
    n, d = rec.get("n_train"), rec.get("d")
    size = (int(n), int(d)) if is_number(n) and is_number(d) and n > 0 and d > 0 else None
    seconds, is_cpu = record_cpu_seconds(rec)
    return Stored(spec, seconds, record_mem_mb(rec), size, False, *artifact_of(rec),
                  wall=not is_cpu, probe=hostspeed.of_record(rec))


def shared_fit_builders(trials: Iterable[Stored]
                        ) -> dict[str, tuple[TrialSpec, bool, bool]]:
    """For the cells (budget left out) whose trials found a shared fit built by a trial of
    another cell: the spec of a trial that built it, and whether one fit served several
    trial numbers, and several budgets (a hit at another trial number, or budget, than its
    builder's)."""
    groups: dict[str, list[Stored]] = {}
    for t in trials:
        if t.artifact:
            groups.setdefault(t.artifact, []).append(t)
    out: dict[str, tuple[TrialSpec, bool, bool]] = {}
    for group in groups.values():
        built = [t for t in group if not t.artifact_hit]
        if not built:
            continue
        builder = built[0].spec
        for t in group:
            cells = identities(t.spec)[1]            # budgets_of, hashed once a key
            if t.artifact_hit and cells != identities(builder)[1]:
                _, trials_, budgets = out.get(cells, (builder, False, False))
                out[cells] = (builder, trials_ or t.spec.trial != builder.trial,
                              budgets or t.spec.epsilon != builder.epsilon)
    return out


@dataclass
class Estimator:
    """Per-trial estimates from stored trials and reference fits (the module's docstring)."""

    trials: Sequence[Stored]
    reference: Sequence[Stored] = ()
    _cells: dict[str, list[Stored]] = field(default_factory=dict, init=False)
    _groups: dict[tuple[str, ...], list[Stored]] = field(default_factory=dict, init=False)
    _sizes: dict[str, tuple[int, int]] = field(default_factory=dict, init=False)
    _fits: dict[tuple, tuple] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        # wall seconds are not CPU seconds: trials that recorded no CPU time price nothing
        self.left_out = sum(t.wall for t in [*self.trials, *self.reference])
        self.trials = [t for t in self.trials if not t.wall]
        self.reference = [t for t in self.reference if not t.wall]
        every = [*self.trials, *self.reference]
        keys = {id(t): identities(t.spec) for t in every}   # one identity a trial
        self._data = {id(t): keys[id(t)][2] for t in every}
        self._ref_cells: dict[str, list[Stored]] = {}
        for trials, cells in ((self.trials, self._cells), (self.reference, self._ref_cells)):
            for t in trials:
                cells.setdefault(keys[id(t)][0], []).append(t)
        self._budgets: dict[str, dict[float, str]] = {}   # cell without budget -> eps -> cell
        for t in every:
            cell, budgets, _ = keys[id(t)]
            self._budgets.setdefault(budgets, {})[t.spec.epsilon] = cell
        for t in every:
            if t.lower_bound:                # a bound, not a time: no model fits on it
                continue
            self._groups.setdefault(group_of(t.spec), []).append(t)
            self._groups.setdefault(class_of(t.spec), []).append(t)
            if t.size:
                self._sizes.setdefault(self._data[id(t)], t.size)
        self._features = {id(t): features_of(t.spec, t.size or self._sizes.get(self._data[id(t)]))
                          for t in every}
        self._builders = shared_fit_builders(every)
        self._ranges: dict[tuple[str, ...], dict[str, tuple[float, float]]] = {}
        for group, trials in self._groups.items():
            seen: dict[str, list[float]] = {}
            for t in trials:
                for k, v in self.features(t).items():
                    seen.setdefault(k, []).append(v)
            self._ranges[group] = {k: (min(v), max(v)) for k, v in seen.items()}

    def size(self, spec: TrialSpec) -> tuple[int, int] | None:
        """(training rows, columns) of the trial's dataset, as a stored trial of it says."""
        return self._sizes.get(data_of(spec))

    def features(self, t: Stored) -> dict[str, float]:
        return self._features[id(t)]

    def estimate(self, spec: TrialSpec) -> Estimate:
        """The figures of one trial, from the first source that has them."""
        known = self._measured(cell_of(spec))
        if known is not None:
            return known
        between = self._interpolate(spec)
        if between is not None:
            return between
        key = group_of(spec) if group_of(spec) in self._groups else class_of(spec)
        group = self._groups.get(key)
        if not group:
            return Estimate(None, None, None, UNKNOWN)
        want = features_of(spec, self.size(spec))
        names, coef, spread = self._fit(key, want)
        data = data_of(spec)
        mem = _max_mem(t for t in group if self._data[id(t)] == data)
        mem = self._nearest_mem(group, self.size(spec)) if mem is None else mem
        if names:
            ranges = self._ranges[key]
            x = np.array([1.0, *(min(max(want[k], ranges[k][0]), ranges[k][1])
                                 for k in names)])
            # within the group's fastest and slowest trial: a fit across settings that were
            # never varied together can put a product of in-range features far outside
            times = [t.seconds for t in group if t.seconds > 0]
            seconds = min(max(math.exp(float(x @ coef)), min(times)), max(times))
            source = MODEL
        else:
            seconds, source = float(coef[0]), MEDIAN
        return Estimate(seconds, seconds * spread, mem, source,
                        beyond=self._beyond(key, want, spec))

    def _nearest_mem(self, group: Sequence[Stored], size: tuple[int, int] | None
                     ) -> float | None:
        """The largest peak memory of ``group``'s trials on the datasets nearest to
        ``size`` (distance: |log n - log n'| + |log d - log d'|); of all its trials when
        ``size`` is unknown or none of them has a size."""
        sized = [(t, self.size(t.spec)) for t in group if t.mem_mb is not None]
        sized = [(t, z) for t, z in sized if z is not None]
        if size is None or not sized:
            return _max_mem(group)

        def far(z: tuple[int, int]) -> float:
            return round(sum(abs(math.log(a) - math.log(b)) for a, b in zip(z, size,
                                                                            strict=True)), 9)

        near = min(far(z) for _, z in sized)
        return _max_mem(t for t, z in sized if far(z) == near)

    def builder_of(self, spec: TrialSpec) -> TrialSpec | None:
        """The trial that, in the measured trials, built the shared fit (artifact) that
        ``spec``'s cells found built: the builder's cell at ``spec``'s budget and trial
        number (at the builder's own where one fit served several); None if its cells
        built their own or used none."""
        found = self._builders.get(identities(spec)[1])
        if found is None:
            return None
        builder, every_trial, every_budget = found
        return replace(builder, epsilon=builder.epsilon if every_budget else spec.epsilon,
                       trial=builder.trial if every_trial else spec.trial)

    def _measured(self, cell: str) -> Estimate | None:
        """The figures of a cell from its own stored trials, else its reference fits: their
        mean seconds (at least a stopped fit's), the longest, the largest peak memory."""
        for cells, source in ((self._cells, SAME_CELL), (self._ref_cells, REFERENCE)):
            same = cells.get(cell)
            if same:
                secs = [t.seconds for t in same if not t.lower_bound]
                bound = max((t.seconds for t in same if t.lower_bound), default=0.0)
                mean = sum(secs) / len(secs) if secs else 0.0
                return Estimate(max(mean, bound), max([*secs, bound]), _max_mem(same), source,
                                at_least=bound > mean)
        return None

    def _interpolate(self, spec: TrialSpec) -> Estimate | None:
        """The figures of a cell between the nearest measured budgets of its dataset and
        method on either side (the module's docstring, source 3), else None."""
        budgets = self._budgets.get(identities(spec)[1], {})
        below = max((e for e in budgets if e < spec.epsilon), default=None)
        above = min((e for e in budgets if e > spec.epsilon), default=None)
        if below is None or above is None or below <= 0:
            return None
        lo, hi = (self._measured(budgets[e]) for e in (below, above))
        if lo is None or hi is None or not (lo.seconds and hi.seconds and lo.longest
                                            and hi.longest):
            return None
        t = math.log(spec.epsilon / below) / math.log(above / below)

        def line(a: float, b: float) -> float:
            return math.exp((1 - t) * math.log(a) + t * math.log(b))

        mems = [m for m in (lo.mem_mb, hi.mem_mb) if m is not None]
        return Estimate(line(lo.seconds, hi.seconds), line(lo.longest, hi.longest),
                        max(mems) if mems else None, INTERPOLATED,
                        at_least=lo.at_least or hi.at_least)

    def _fit(self, group: tuple[str, ...], want: Mapping[str, float]
             ) -> tuple[tuple[str, ...], np.ndarray, float]:
        """(features kept, coefficients, spread) of ``group``'s model for a trial with the
        features ``want``; no feature kept: ``coef[0]`` is the group's median seconds."""
        ranges = self._ranges[group]
        order = [*BASE_FEATURES, *sorted(k for k in want if k not in BASE_FEATURES)]
        names = [k for k in order if k in want and k in ranges
                 and ranges[k][1] - ranges[k][0] >= math.log(MIN_SPAN) - 1e-12]
        cache_key = (group, tuple(names))
        if cache_key in self._fits:
            return self._fits[cache_key]
        trials = self._groups[group]
        rows = [(self.features(t), t.seconds) for t in trials if t.seconds > 0]
        while names:
            use = [(f, s) for f, s in rows if all(k in f for k in names)]
            x = np.array([[1.0, *(f[k] for k in names)] for f, _ in use])
            settings = len({tuple(np.round(row, 12)) for row in x})
            if settings >= len(names) + 2 and np.linalg.matrix_rank(x) == len(names) + 1:
                y = np.log([s for _, s in use])
                coef = np.linalg.lstsq(x, y, rcond=None)[0]
                fit = (tuple(names), coef, math.exp(max(0.0, float(np.max(y - x @ coef)))))
                break
            names.pop()
        else:
            secs = [s for _, s in rows] or [t.seconds for t in trials]
            mid = median(secs)
            fit = ((), np.array([mid]), max(secs) / mid if mid > 0 else 1.0)
        self._fits[cache_key] = fit
        return fit

    def _beyond(self, group: tuple[str, ...], want: Mapping[str, float],
                spec: TrialSpec) -> tuple[str, ...]:
        """The trial's features beyond the values the group's stored trials had (``size``
        when its dataset's size is unknown but theirs is known), and its other method
        settings (a name, a flag, a list: not features) that none of them had, whose cost
        the model cannot know (an exact solver where only enumeration was run)."""
        ranges = self._ranges[group]
        out = [k for k, v in want.items()
               if k not in ranges or not ranges[k][0] - 1e-9 <= v <= ranges[k][1] + 1e-9]
        if "n" in ranges and "n" not in want:
            out.append("size")
        out += [f"param.{k}" for k, v in spec.method_params.items() if not is_number(v)
                and all(t.spec.method_params.get(k) != v for t in self._groups[group])]
        return tuple(sorted(out))


def _max_mem(trials: Iterable[Stored]) -> float | None:
    mems = [t.mem_mb for t in trials if t.mem_mb is not None]
    return max(mems) if mems else None


def array_tasks(todo: Sequence[TrialSpec], per_task: int) -> list[list[TrialSpec]]:
    """The SLURM array tasks of ``todo``: its trials in dispatch order
    (``grid.costliest_first``), ``per_task`` to a task (what ``slurm.submit`` submits)."""
    order = costliest_first(todo)
    return [order[i:i + per_task] for i in range(0, len(order), per_task)]


def makespan(durations: Sequence[float], workers: int) -> float:
    """Wall time of running ``durations`` in this order on ``workers`` workers, each job
    taken by the first worker free (how the local runner and a SLURM array hand them out)."""
    free = [0.0] * max(1, min(workers, len(durations)))
    heapify(free)
    for d in durations:
        heapreplace(free, free[0] + d)
    return max(free)


def duration(seconds: float) -> str:
    """``42 s``, ``12 min`` or ``3.2 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def cpu(seconds: float) -> str:
    """``2.31 CPU-hours``, or under 0.1 of an hour ``12 min of CPU time``."""
    if seconds >= 360:
        return f"{seconds / 3600:.2f} CPU-hours"
    return f"{duration(seconds)} of CPU time"


def gigabytes(mib: float) -> str:
    return f"{mib / 1024:.1f} GB"


def trial_name(spec: TrialSpec) -> str:
    return f"{spec.dataset}/{spec.method}/{spec.epsilon:g}"


@dataclass(frozen=True)
class SlurmLimits:
    """What a SLURM submission is sized by (``conf/runner/slurm.yaml``)."""

    timeout_min: int
    mem_gb: float
    trials_per_task: int
    array_parallelism: int


@dataclass(frozen=True)
class Cost:
    """The cost of a grid's trials to do (``todo``, with an estimate each) and of its
    done trials (their recorded seconds)."""

    todo: Sequence[TrialSpec]
    estimates: Mapping[str, Estimate]
    done_seconds: float
    reference_note: str | None = None    # where the reference fits come from, if any
    wall_stand_ins: int = 0              # trials that recorded no CPU time, left out
    speed: float | None = None           # the probe the seconds are scaled to (None: not)
    probes: tuple[float, ...] = ()       # the probes of the measured trials that had one
    unprobed: int = 0                    # measured trials without one (seconds as recorded)

    @property
    def known(self) -> list[TrialSpec]:
        return [s for s in self.todo if self.estimates[s.key].seconds is not None]

    def seconds(self, specs: Iterable[TrialSpec], longest: bool = False) -> float:
        """Estimated seconds of ``specs`` (their longest with ``longest``), unknown as 0."""
        return sum((getattr(self.estimates[s.key], "longest" if longest else "seconds") or 0.0)
                   for s in specs)

    def unknown(self) -> list[TrialSpec]:
        return [s for s in self.todo if self.estimates[s.key].seconds is None]


def at_speed(trials: Iterable[Stored], speed: float | None) -> list[Stored]:
    """``trials`` with their seconds scaled to the probe ``speed`` (each from its own
    probe; a trial without one, or ``speed`` None: as recorded)."""
    return [t if t.probe is None or speed is None
            else replace(t, seconds=hostspeed.scale(t.seconds, t.probe, speed))
            for t in trials]


def grid_cost(specs: Sequence[TrialSpec], todo: Sequence[TrialSpec],
              store: ResultStore, reference: Sequence[Stored] = (),
              reference_note: str | None = None,
              speed: float | Callable[[], float | None] | None = None) -> Cost:
    """Estimate each trial of ``todo`` from the store and the ``reference`` fits (described
    by ``reference_note``); sum the recorded seconds of the grid's other trials (stored ok).
    ``speed``: the probe (:mod:`~dpbench.runner.hostspeed`) every seconds figure is scaled
    to, from each trial's own, or what gives it (called only when a measured trial recorded
    a probe: nothing to scale, nothing measured); None keeps them as recorded."""
    local = stored_trials(store)
    measured = [t for t in [*local, *reference] if not t.wall]
    probes = tuple(t.probe for t in measured if t.probe is not None)
    if callable(speed):
        speed = speed() if probes else None
    stored, reference = at_speed(local, speed), at_speed(reference, speed)
    est = Estimator(stored, reference)
    pending = {s.key for s in todo}
    done = 0.0
    wall = {t.spec.key for t in [*stored, *reference] if t.wall}
    for key in {s.key for s in specs} - pending:
        rec = store.brief(key)               # a reference trial's cost, its record unparsed
        if isinstance(rec, dict) and rec.get("status") == OK:
            seconds, is_cpu = record_cpu_seconds(rec)
            if is_cpu:
                done += hostspeed.scale(seconds, hostspeed.of_record(rec), speed)
            else:
                wall.add(key)
    estimates = {s.key: est.estimate(s) for s in todo}
    charged: set[str] = set()
    for s in todo:
        # its measured trials found a shared fit built by a trial of another cell: unless
        # that trial runs now or ran here (its fit in this machine's cache), the first
        # trial needing the fit builds it (a builder done only in the shipped reference
        # left no fit here: it once priced a grid's 25 fit-sharing trials at 21 s in all)
        builder = est.builder_of(s)
        if (builder is None or builder.key in pending or builder.key in charged
                or _ran_here(store, builder)):
            continue
        own, alone = estimates[s.key], est.estimate(builder)
        if own.seconds is None or alone.seconds is None:
            continue
        charged.add(builder.key)
        mems = [m for m in (own.mem_mb, alone.mem_mb) if m is not None]
        # the builder's cell holds trials that built the fit and trials that found it
        # built (whichever ran first built it): its longest trial is the fit's cost
        estimates[s.key] = replace(
            own, seconds=max(own.seconds, alone.longest or alone.seconds),
            longest=max(own.longest or 0.0, alone.longest or 0.0),
            mem_mb=max(mems) if mems else None, builds_shared=True)
    return Cost(todo, estimates, done, reference_note if reference else None, len(wall),
                speed, probes, len(measured) - len(probes))


def _ran_here(store: ResultStore, spec: TrialSpec) -> bool:
    """Is ``spec`` stored ok by a run on this store (not only in the reference behind it)?"""
    rec = store.brief(spec.key)         # a trial only the reference holds: not parsed
    return isinstance(rec, dict) and rec.get("status") == OK \
        and rec.get("origin") != REFERENCE_ORIGIN


def cost_lines(cost: Cost, *, workers: int | None = None,
               slurm: SlurmLimits | None = None, brief: bool = False) -> list[str]:
    """The plan's cost: CPU-hours and where the figures come from; the longest trial and
    the largest peak memory; the wall time with ``workers`` local workers, or the SLURM
    array and whether its limits cover the longest task and the largest peak (``brief``:
    the first line, the runner's line and the limits that fall short)."""
    todo = cost.todo
    if not todo:
        return [f"cost: nothing to do; the grid's trials took {cpu(cost.done_seconds)} as "
                "recorded"]
    unknown = cost.unknown()
    unseen = f"methods {', '.join(sorted({s.method for s in unknown}))}"
    if len(unknown) == len(todo):
        return [f"cost: unknown for the {len(todo)} trial(s) to do: no stored trial of "
                f"{unseen} (a smoke run, e.g. profile=smoke, gives `plan` figures to use)"]
    sources = {k: sum(cost.estimates[s.key].source == k for s in todo) for k in SOURCE_TEXT}
    bounds = [s for s in todo if cost.estimates[s.key].at_least]
    at_least = "at least " if unknown or bounds else ""
    seconds = cost.seconds(todo)
    out = [f"cost: {len(todo)} trial(s) to do, {at_least}{cpu(seconds)} (whole grid "
           f"{at_least}{cpu(seconds + cost.done_seconds)}); figures per trial: "
           + ", ".join(f"{n} {SOURCE_TEXT[k]}" for k, n in sources.items() if n)
           + (f" ({unseen}: no stored trial)" if unknown else "")]
    if cost.reference_note and any(n for k, n in sources.items() if k != SAME_CELL):
        out.append(cost.reference_note)
    if cost.speed is not None and cost.probes:
        out.append(speed_line(cost))
    if cost.wall_stand_ins:
        out.append(f"note: {cost.wall_stand_ins} measured trial(s) recorded no CPU time "
                   "(written before dpbench kept it): left out of every CPU figure (a wall "
                   "time is not a CPU time)")
    if bounds:
        out.append(f"note: {len(bounds)} estimate(s) are lower bounds: their cells' reference "
                   "fits were stopped unfinished ("
                   + ", ".join(sorted({trial_name(s) for s in bounds})) + ")")
    beyond = Counter(k for s in todo for k in cost.estimates[s.key].beyond)
    if beyond:
        n = sum(bool(cost.estimates[s.key].beyond) for s in todo)
        out.append(f"note: {n} estimate(s) reach beyond the method's stored trials (trials "
                   "per feature: "
                   + ", ".join(f"{FEATURE_TEXT.get(k, k.removeprefix('param.'))} {c}"
                               for k, c in sorted(beyond.items()))
                   + "); a feature the stored trials never varied is taken not to matter: "
                   "rough figures")
    shared = sorted({trial_name(s) for s in todo if cost.estimates[s.key].builds_shared})
    if shared:
        out.append(f"note: {len(shared)} cell(s) will build a shared fit (an artifact) that "
                   "their measured trials found built by a trial of another cell that does "
                   "not run here (outside this grid, or done only in the shipped reference, "
                   "which leaves no fit in this machine's cache): counted at that trial's "
                   "cost ("
                   + ", ".join(shared[:3]) + (", ..." if len(shared) > 3 else "") + ")")
    known = cost.known
    longest = max(known, key=lambda s: cost.estimates[s.key].longest, default=None)
    expected = max(known, key=lambda s: cost.estimates[s.key].seconds, default=None)
    mems = [s for s in known if cost.estimates[s.key].mem_mb is not None]
    peak = max(mems, key=lambda s: cost.estimates[s.key].mem_mb, default=None)
    if longest and not brief:
        e = cost.estimates[longest.key]
        # the trial whose expected time is largest, at that time (the total holds it), and
        # the longest any trial may take (the figures' spread: a model's largest miss)
        most = cost.estimates[expected.key]
        line = (f"longest trial: {trial_name(expected)} ~{duration(most.seconds)} expected "
                f"({SOURCE_TEXT[most.source]})")
        if duration(e.longest) != duration(most.seconds) or longest.key != expected.key:
            line += (f"; up to ~{duration(e.longest)} ({trial_name(longest)}, the "
                     "slowest case its figures allow)")
        if peak:
            line += (f"; peak memory per trial: {gigabytes(cost.estimates[peak.key].mem_mb)} "
                     f"({trial_name(peak)}; the worker process's peak during a trial)")
        out.append(line)
    peak_mb = cost.estimates[peak.key].mem_mb if peak else None
    if slurm is None:
        n = max(1, workers or 1)
        wall = makespan([cost.estimates[s.key].seconds or 0.0 for s in costliest_first(known)], n)
        mem = f", up to {n} x {gigabytes(peak_mb)} of memory at once" if peak_mb and n > 1 else ""
        out.append(f"local: {n} worker(s) (runner.n_jobs), ~{duration(wall)} wall{mem}")
        return out
    return out + _slurm_lines(cost, slurm, peak_mb, brief)


def speed_line(cost: Cost) -> str:
    """What the seconds were scaled to: this machine's probe, and how many measured trials
    carried one (their range)."""
    n = len(cost.probes) + cost.unprobed
    return (f"speed: seconds scaled to a probe of {cost.speed:.3f} CPU-s (this machine's, or "
            f"{hostspeed.ENV}; a fixed workload's time, dpbench.runner.hostspeed) from each "
            f"measured trial's own: {len(cost.probes)} of {n} recorded one "
            f"({min(cost.probes):.3f}-{max(cost.probes):.3f} CPU-s)"
            + (f"; {cost.unprobed} did not and count as recorded" if cost.unprobed else ""))


def _slurm_lines(cost: Cost, slurm: SlurmLimits, peak_mb: float | None,
                 brief: bool) -> list[str]:
    """The array of the trials to do and the verdicts on ``timeout_min`` and ``mem_gb``."""
    tasks = array_tasks(cost.todo, slurm.trials_per_task)
    blind = sum(any(cost.estimates[s.key].seconds is None for s in t) for t in tasks)
    wall = makespan([cost.seconds(t) for t in tasks], slurm.array_parallelism)
    worst = max(cost.seconds(t, longest=True) for t in tasks)
    out = [f"slurm: {len(tasks)} array task(s) of up to {slurm.trials_per_task} trial(s) "
           f"(runner.trials_per_task), {slurm.array_parallelism} at once "
           f"(runner.array_parallelism; arrays split at the cluster's MaxArraySize): "
           f"~{duration(wall)} wall at the expected times, the longest task up to "
           f"~{duration(worst)}"]
    known = "" if not blind else f" whose cost is known ({blind} hold trials of unknown cost)"
    need_min = math.ceil(worst * TIME_MARGIN / 60)
    if need_min <= slurm.timeout_min:
        if not brief:
            out.append(f"runner.timeout_min={slurm.timeout_min} covers the longest task{known} "
                       f"(~{duration(worst)}; {need_min} min with a {TIME_MARGIN:g}x margin)")
    else:
        out.append(f"WARNING: runner.timeout_min={slurm.timeout_min} is short of the longest "
                   f"task{known} (~{duration(worst)}; {need_min} min with a {TIME_MARGIN:g}x "
                   f"margin): set runner.timeout_min={need_min}, or fewer "
                   "runner.trials_per_task")
    if peak_mb is None:
        out.append(f"runner.mem_gb={slurm.mem_gb:g}: no stored trial tells the memory needed")
        return out
    need_gb = math.ceil(peak_mb * MEM_MARGIN / 1024)
    if peak_mb * MEM_MARGIN <= slurm.mem_gb * 1024:
        if not brief:
            out.append(f"runner.mem_gb={slurm.mem_gb:g} covers the largest peak memory of a "
                       f"trial ({gigabytes(peak_mb)}; {gigabytes(peak_mb * MEM_MARGIN)} with a "
                       f"{MEM_MARGIN:g}x margin)")
    else:
        out.append(f"WARNING: runner.mem_gb={slurm.mem_gb:g} is short of the largest peak "
                   f"memory of a trial ({gigabytes(peak_mb)}; {gigabytes(peak_mb * MEM_MARGIN)} "
                   f"with a {MEM_MARGIN:g}x margin): set runner.mem_gb={need_gb}")
    return out


def local_workers(n_jobs: int) -> int:
    """The local runner's worker count for ``runner.n_jobs`` (-1: one per core)."""
    return (os.cpu_count() or 1) if n_jobs == -1 else max(1, n_jobs)
