"""A user's trials against the reference results, cell by cell (``dpbench compare``).

Per (dataset, method, epsilon) cell of an experiment's grid and per metric: the mean ± s.e.
of the local trials and of the reference's, and z = (local - reference) / sqrt(se_l^2 +
se_r^2), both sides' noise. Where a trial key is on both sides and the trial ran with the
same library versions, its metrics must be bit-identical (the seeds are in the key): the
count of identical and of differing such trials is given. The verdict of an experiment:

- ``agrees``: every compared cell within |z| <= Z_TOL (Bonferroni over the cells
  compared, at alpha 0.01: the tolerance grows slowly with the number of cells) and no
  trial that should be identical differs;
- ``differs``: the cells beyond the tolerance and the trials that are not identical, named;
- ``nothing to compare``: no cell has trials on both sides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpbench.runner.reference import Reference
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import OK, ResultStore

#: family-wise level of the z test over an experiment's compared cells
ALPHA = 0.01


@dataclass(frozen=True)
class CellComparison:
    """One cell's metric on both sides."""

    dataset: str
    method: str
    epsilon: float
    metric: str
    n_local: int
    n_reference: int
    mean_local: float | None
    se_local: float | None
    mean_reference: float | None
    se_reference: float | None
    z: float | None
    identical: int = 0           # trials on both sides, same versions, equal metrics
    different: int = 0           # trials on both sides, same versions, metrics not equal


@dataclass(frozen=True)
class Verdict:
    """An experiment's comparison: its cells, the z tolerance used and the one-line verdict."""

    experiment: str
    cells: list[CellComparison]
    z_tol: float
    verdict: str
    problems: list[str] = field(default_factory=list)


def _mean_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=float)
    if v.size == 0:
        return None, None
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None)


def _metrics(record: Mapping[str, Any] | None) -> dict[str, float]:
    if record is None or record.get("status") != OK:
        return {}
    return {k: float(v) for k, v in (record.get("metrics") or {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def z_tolerance(cells: int, alpha: float = ALPHA) -> float:
    """The two-sided normal quantile at alpha / cells (Bonferroni)."""
    return float(stats.norm.isf(alpha / (2 * max(cells, 1))))


def compare(experiment: str, specs: Sequence[TrialSpec], local: ResultStore,
            reference: Reference, metrics: Sequence[str]) -> Verdict:
    """The comparison of ``experiment``'s grid ``specs`` on ``metrics``: the local store
    read alone (no reference behind it) against the reference."""
    groups: dict[tuple[str, str, float], list[TrialSpec]] = {}
    for s in specs:
        groups.setdefault((s.dataset, s.method, s.epsilon), []).append(s)
    rows: list[CellComparison] = []
    for (dataset, method, eps), cell in sorted(groups.items()):
        mine = {s.key: local.get(s.key) for s in cell}
        theirs = {s.key: reference.get(s.key) for s in cell}
        for metric in metrics:
            lv = [m[metric] for m in map(_metrics, mine.values()) if metric in m]
            rv = [m[metric] for m in map(_metrics, theirs.values()) if metric in m]
            same = diff = 0
            for key, a in mine.items():
                b = theirs.get(key)
                ma, mb = _metrics(a), _metrics(b)
                if metric in ma and metric in mb and a.get("versions") == b.get("versions"):
                    equal = ma[metric] == mb[metric] or (math.isnan(ma[metric])
                                                         and math.isnan(mb[metric]))
                    same, diff = same + equal, diff + (not equal)
            (ml, sl), (mr, sr) = _mean_se(lv), _mean_se(rv)
            z = None
            if ml is not None and mr is not None:
                var = (sl or 0.0) ** 2 + (sr or 0.0) ** 2
                z = (0.0 if ml == mr else math.copysign(math.inf, ml - mr)) if var == 0 \
                    else (ml - mr) / math.sqrt(var)
            rows.append(CellComparison(dataset, method, eps, metric, len(lv), len(rv), ml, sl,
                                       mr, sr, z, same, diff))
    compared = [r for r in rows if r.z is not None]
    tol = z_tolerance(len(compared))
    problems = [f"{r.dataset}/{r.method}/{r.epsilon:g} {r.metric}: z = {r.z:+.2f} "
                f"(local {r.mean_local:.4g}, reference {r.mean_reference:.4g})"
                for r in compared if abs(r.z) > tol]
    problems += [f"{r.dataset}/{r.method}/{r.epsilon:g} {r.metric}: {r.different} trial(s) "
                 "with the same key and library versions are not bit-identical"
                 for r in rows if r.different]
    if not compared:
        verdict = "nothing to compare: no cell has trials both here and in the reference"
    elif problems:
        verdict = f"differs in {len(problems)} place(s): " + "; ".join(problems[:3]) + \
            (" ..." if len(problems) > 3 else "")
    else:
        ident = sum(r.identical for r in rows)
        verdict = (f"agrees: {len(compared)} cell-metric(s) within |z| <= {tol:.2f}"
                   + (f", {ident} trial(s) bit-identical" if ident else ""))
    return Verdict(experiment, rows, tol, verdict, problems)


def lines(v: Verdict) -> list[str]:
    """The printed comparison: one line per compared cell, then the verdict."""
    out = []
    for r in v.cells:
        if r.z is None:
            continue
        ident = f"; identical {r.identical}/{r.identical + r.different}" \
            if r.identical + r.different else ""
        out.append(f"  {r.dataset}/{r.method}/{r.epsilon:g} {r.metric}: local "
                   f"{r.mean_local:.4g} (n {r.n_local}) vs reference {r.mean_reference:.4g} "
                   f"(n {r.n_reference}), z {r.z:+.2f}{ident}")
    return [*out, f"{v.experiment}: {v.verdict}"]
