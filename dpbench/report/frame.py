"""From stored records to one tidy results frame, and the one mean +- s.e. (pandas).

Every figure kind and claim kind reads this frame (and, for histograms a method stores as
JSON counts, pools them here): one row per ok trial with the spec's
columns (dataset, method, epsilon, trial, labels, every scalar parameter as
``dataset.<p>`` / ``method.<p>``), the task's metrics, ``info.<k>`` and ``privacy.<k>``,
and ``trials_asked``: how many trials the grid asks for the row's (dataset, method, epsilon)
cell; ``frame.attrs["metrics"]`` names the metric columns. A cell holding fewer ok trials
(failed, missing or quarantined ones) is a :class:`Shortfall`; ``summarise`` gives each
cell's ``trials`` and ``asked`` so every kind can mark it, and the report names every such
cell in each caption (``render``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpbench.runner.grid import load_entry
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import OK, ResultStore

KEYS = ["dataset", "method", "epsilon"]
ASKED = "trials_asked"
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def results_frame(specs: Sequence[TrialSpec], store: ResultStore,
                  experiment: str = "") -> pd.DataFrame:
    """One row per ok trial of the grid: spec columns, metrics, info.*, privacy.*, timings,
    and the trials the grid asks for the row's cell (``trials_asked``)."""
    asked = {cell: len(keys) for cell, keys in _grid_cells(specs).items()}
    rows = []
    metrics: dict[str, None] = {}
    for s in specs:
        rec = store.get(s.key)
        if rec is None or rec.get("status") != OK:
            continue
        row = {"experiment": experiment, "key": s.key, "dataset": s.dataset,
               "dataset_label": s.meta.get("dataset_label", s.dataset), "method": s.method,
               "method_label": s.meta.get("method_label", s.method),
               "method_family": _family_label(s), "epsilon": s.epsilon,
               "budget_unit": s.budget_unit, "delta": rec["privacy"]["target_delta"],
               "trial": s.trial, "n_train": rec.get("n_train"), "fit_s": rec["timing"]["fit_s"],
               "wall_s": rec.get("wall_s"), "cpu_s": rec.get("cpu_s"),
               "peak_rss_mb": rec.get("peak_rss_mb"),
               "peak_mem_mb": rec.get("peak_mem_mb"),
               ASKED: asked[(s.dataset, s.method, s.epsilon)]}
        row.update(_scalars("dataset", s.dataset_params))
        row.update(_scalars("method", s.method_params))
        row.update(rec.get("metrics", {}))
        metrics.update(dict.fromkeys(rec.get("metrics", {})))
        row.update({f"info.{k}": v for k, v in (rec.get("info") or {}).items()
                    if isinstance(v, int | float | str | bool) or v is None})
        row.update({f"privacy.{k}": v for k, v in rec["privacy"].items() if k != "charges"})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["metrics"] = list(metrics)      # the task's metric columns, in record order
    return frame


def _family_label(spec: TrialSpec) -> str:
    """The method yaml's own label, without a sweep point's suffix (``Method (k=100)`` ->
    ``Method``): what a fact shared by every point of a sweep is said of."""
    return _yaml_label(spec.method.split("[", 1)[0]) or \
        str(spec.meta.get("method_label", spec.method))


@functools.lru_cache(maxsize=512)
def _yaml_label(name: str) -> str | None:
    """A method yaml's label (its name if it has none); None if no such yaml (renamed or
    gone since the trial ran)."""
    try:
        return str(load_entry("method", name).get("label", name))
    except ValueError:
        return None


@dataclass(frozen=True)
class Shortfall:
    """A cell of the grid holding fewer ok trials than the grid asks for."""

    dataset_label: str
    method: str
    method_label: str
    epsilon: float
    stored: int
    asked: int
    metric: str | None = None     # short of finite values of this metric, not of records

    def text(self, unit: str = "epsilon") -> str:
        """``<dataset> / <method> / epsilon=1: 1 of 2 trials`` (``... trials with a finite
        mse`` for a shortfall of values)."""
        return (f"{self.dataset_label} / {self.method_label} / {unit}={self.epsilon:g}: "
                f"{self.stored} of {self.asked} trials"
                + (f" with a finite {self.metric}" if self.metric else ""))


def missing_values(frame: pd.DataFrame, metrics: Sequence[str]) -> list[Shortfall]:
    """Per metric of ``metrics``, the cells whose ok trials hold fewer finite values of it
    than the grid asks while some trial of the cell holds a null or NaN (the cells short of
    records are :func:`shortfalls`'); only for methods that report the metric (a finite
    value in some trial of theirs: a metric a method never computes is not missing). A
    mean over such a cell averages fewer values than the grid asks, so it is marked."""
    out: list[Shortfall] = []
    if frame.empty or ASKED not in frame:
        return out
    for metric in metrics:
        if metric not in frame:
            continue
        finite = pd.Series(np.isfinite(pd.to_numeric(frame[metric], errors="coerce")
                                       .to_numpy(dtype=float)), index=frame.index)
        reports = finite.groupby(frame["method"]).transform("any")
        part = frame[reports].assign(_finite=finite[reports])
        cells = part.groupby([*KEYS, "dataset_label", "method_label"], sort=False).agg(
            n=("_finite", "sum"), rows=("_finite", "size"), asked=(ASKED, "max"))
        for (_d, m, e, dl, ml), c in cells.iterrows():
            if c["n"] < c["rows"] and c["n"] < c["asked"]:
                out.append(Shortfall(str(dl), str(m), str(ml), float(e), int(c["n"]),
                                     int(c["asked"]), metric))
    return out


def _grid_cells(specs: Sequence[TrialSpec]) -> dict[tuple[str, str, float], set[str]]:
    """The trial keys of each (dataset, method, epsilon) cell of the grid."""
    cells: dict[tuple[str, str, float], set[str]] = defaultdict(set)
    for s in specs:
        cells[(s.dataset, s.method, s.epsilon)].add(s.key)
    return cells


def shortfalls(specs: Sequence[TrialSpec], frame: pd.DataFrame) -> list[Shortfall]:
    """Every cell of the grid ``specs`` whose ok trials in ``frame`` (``results_frame``)
    are fewer than the grid asks for, cells without any included, in grid order."""
    stored: dict[tuple[str, str, float], int] = {}
    if not frame.empty:
        stored = {(d, m, e): int(n) for (d, m, e), n in
                  frame.groupby(KEYS, sort=False)["key"].nunique().items()}
    first = {}
    for s in specs:
        first.setdefault((s.dataset, s.method, s.epsilon), s)
    out = []
    for cell, keys in _grid_cells(specs).items():
        if stored.get(cell, 0) < len(keys):
            s = first[cell]
            out.append(Shortfall(s.meta.get("dataset_label", s.dataset), s.method,
                                 s.meta.get("method_label", s.method), s.epsilon,
                                 stored.get(cell, 0), len(keys)))
    return out


def short(summary: pd.DataFrame) -> pd.Series:
    """Per row of ``summarise``'s output: does the cell hold fewer trials than the grid
    asks for (False where the frame does not say what the grid asks)?"""
    if "asked" not in summary:
        return pd.Series(False, index=summary.index)
    return (summary["trials"] < summary["asked"]).fillna(False).astype(bool)


def legend_label(label: str, summary: pd.DataFrame) -> str:
    """A method's legend entry: `` [incomplete]`` appended when any of its cells in
    ``summary`` (``summarise`` rows) holds fewer trials than the grid asks."""
    return f"{label} [incomplete]" if short(summary).any() else label


def short_mark(trials: int, asked: float) -> str:
    """`` [1/2 trials]`` for a cell with fewer trials than asked, else the empty string."""
    if not (isinstance(asked, int | float) and math.isfinite(asked)) or trials >= asked:
        return ""
    return f" [{trials}/{int(asked)} trials]"


def rows_mark(rows: pd.DataFrame) -> str:
    """:func:`short_mark` of the rows of one or several cells: the trials stored against
    the trials asked, summed over the cells; empty when every cell is complete."""
    if ASKED not in rows or rows.empty:
        return ""
    cells = rows.groupby(KEYS, sort=False).agg(trials=(ASKED, "size"), asked=(ASKED, "max"))
    if not (cells["trials"] < cells["asked"]).any():
        return ""
    return short_mark(int(cells["trials"].sum()), float(cells["asked"].sum()))


def _scalars(axis: str, params: dict) -> dict[str, object]:
    """``<axis>.<p>`` for every scalar parameter (swept or fixed); lists and maps are left out."""
    return {f"{axis}.{k}": v for k, v in params.items()
            if isinstance(v, int | float | str | bool) or v is None}


def summarise(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean, standard error (sd / sqrt(n), ddof=1) and n (values that are not NaN) per
    (dataset, method, epsilon); with ``trials`` (the cell's ok trials with a value: a NaN
    metric counts as missing, so the cell is marked short) and ``asked`` (the grid's
    trials) per cell when the frame has ``trials_asked``."""
    return summaries(frame, [metric])[metric]


def summaries(frame: pd.DataFrame, metrics: Sequence[str]) -> dict[str, pd.DataFrame]:
    """:func:`summarise` of each of ``metrics``, the cells grouped once (a page's table of
    every cell asks for dozens of metrics)."""
    if frame.empty:
        return {m: summarise_empty() for m in metrics}
    present = [m for m in dict.fromkeys(metrics) if m in frame]
    groups = frame.groupby([*KEYS, "dataset_label", "method_label"], sort=True)
    stats = groups[present].agg(["mean", "std", "count"]) if present else None
    cells = groups[ASKED].agg(trials="size", asked="max").reset_index(drop=True) \
        if ASKED in frame else None
    out: dict[str, pd.DataFrame] = {}
    for m in metrics:
        if m not in present:
            out[m] = summarise_empty()
            continue
        one = stats.index.to_frame(index=False)
        one["mean"] = stats[(m, "mean")].to_numpy()
        one["n"] = stats[(m, "count")].to_numpy()
        one["se"] = stats[(m, "std")].to_numpy() / np.sqrt(one["n"])
        one.loc[one["n"] < 2, "se"] = np.nan
        if cells is not None:   # a trial whose metric is NaN counts as missing, not as a value
            one["trials"] = np.minimum(cells["trials"].to_numpy(), one["n"].to_numpy())
            one["asked"] = cells["asked"].to_numpy()
        out[m] = one
    return out


def summarise_empty() -> pd.DataFrame:
    """:func:`summarise`'s table of no cell."""
    return pd.DataFrame(columns=[*KEYS, "dataset_label", "method_label", "mean", "se", "n"])


def mean_se(values: pd.Series | np.ndarray) -> tuple[float, float, int]:
    """Mean, standard error (sd / sqrt(n), ddof=1) and n of the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, 0
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se, int(v.size)


def select(frame: pd.DataFrame, where: Mapping[str, Any] | None = None,
           fill: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The rows whose columns match ``where`` ({column: value or list of values}), after
    filling the missing values of ``fill``'s columns ({column: default}, e.g. a parameter a
    dataset yaml leaves at its loader's default). A ``where`` column the frame lacks
    matches nothing."""
    out = frame
    if fill:
        out = out.assign(**{c: (out[c].fillna(v) if c in out else v) for c, v in fill.items()})
    for col, want in (where or {}).items():
        if col not in out:
            return out.iloc[0:0]
        values = list(want) if isinstance(want, list | tuple) else [want]
        out = out[out[col].isin(values)]
    return out


def histogram_edges(rows: pd.DataFrame, edges_column: str | None,
                    edges: Mapping[str, float] | None) -> np.ndarray:
    """Bin edges of a histogram stored in the results: the first stored JSON list in
    ``edges_column``, else ``numpy.linspace(start, stop, num)`` of ``edges`` (for records
    written before the method stored its edges)."""
    if edges_column and edges_column in rows and rows[edges_column].notna().any():
        return np.asarray(json.loads(rows[edges_column].dropna().iloc[0]), dtype=float)
    if edges is None:
        raise ValueError(f"no {edges_column} in the results and no edges: "
                         "{start, stop, num}")
    return np.linspace(float(edges["start"]), float(edges["stop"]), int(edges["num"]))


def pooled_counts(rows: pd.DataFrame, column: str) -> np.ndarray | None:
    """The sum over ``rows`` of the histogram counts stored as JSON lists in ``column``."""
    hists = [np.asarray(json.loads(h), dtype=float) for h in rows[column].dropna()] \
        if column in rows else []
    return np.sum(hists, axis=0) if hists else None


def share_within(counts: np.ndarray, edges: np.ndarray, bound: float) -> float:
    """Share of the counts whose bin centre lies in [-bound, bound]."""
    centers = (edges[:-1] + edges[1:]) / 2
    return float(counts[np.abs(centers) <= bound].sum() / counts.sum())


def method_name(ident: str) -> str:
    """The yaml name of a method id: the part before ``[`` of a sweep point ``name[k=v]``."""
    return ident.split("[", 1)[0]


def sweep_key(ident: str) -> tuple[tuple[int, float, str], ...]:
    """Sort key of a method id by its sweep values (``name[a=1,b=x]``): numbers numerically,
    before other values, which sort as strings; a bare name first."""
    inner = ident[len(method_name(ident)) + 1:].removesuffix("]")
    key = []
    for part in filter(None, inner.split(",")):
        value = part.split("=", 1)[-1].strip()
        number = float(value) if NUMBER.fullmatch(value) else math.nan
        key.append((0, number, "") if math.isfinite(number) else (1, 0.0, value))
    return tuple(key)


def order_ids(ids: Sequence[str], names: Sequence[str]) -> list[str]:
    """``ids`` of the listed method names: by name in ``names`` order, then by sweep value."""
    return [i for n in names
            for i in sorted({i for i in ids if method_name(i) == n}, key=lambda i: (
                sweep_key(i), i))]
