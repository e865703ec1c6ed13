"""``best_over_sweep``: for each (dataset, method name, budget) the sweep point with the best
mean metric over trials, drawn as its mean +- 1 s.e. against the budget, one line per method
name, one panel per (metric, dataset); with its Markdown/LaTeX table, and a second table of
every sweep point.

A method name groups its ids: the bare ``name`` and every sweep point ``name[k=v,...]``
(a ``method_sweep`` or a per-entry sweep). Choosing the point by its mean true error is
tuning on the private data without paying for it, as papers that "report the best average
over the hyperparameter grid" do: the figure and the tables say so (``tuning_label``), and
every point stays in the store and in the points table, so a fixed-setting line can be read
beside the optimistic one. The point is chosen per metric.

Keys: ``metric`` (a column) or ``metrics`` (a list: one row of panels per metric),
``methods`` (method names: which, and the legend's order; default: every name in the frame,
sorted), ``better`` (``lower``, the default, or ``higher``), ``labels`` ({name: label};
default: the bare id's label, else a point's label without its ``(k=v, ...)`` suffix),
``ylabel`` (a label, or {metric: label}; default: the metric), ``logx`` (default true),
``logy`` (default false), ``tuning_label`` (default "best over sweep (non-private
tuning)"), ``note`` (printed under the figure and in the tables), ``table`` (default true),
``points_table`` (default true: ``<name>_points``), ``digits`` (fixed decimals of the table
cells, default 4; or {metric: decimals} when the metrics differ in scale).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbench.report.frame import method_name, order_ids, short_mark, summarise
from dpbench.report.render import fixed_cell, save, write_table

TUNING = "best over sweep (non-private tuning)"
MARKERS = "osD^vx+<>p"


#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"better", "digits", "labels", "logx", "logy", "metric", "metrics",
                  "points_table", "table", "tuning_label", "ylabel"})


def best_over_sweep(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """The best sweep point's mean +- s.e. vs budget per method name, and its tables."""
    name = str(fig["name"])
    metrics = [m for m in _metrics(fig) if m in frame]
    if frame.empty or not metrics:
        return []
    better = str(fig.get("better", "lower"))
    if better not in ("lower", "higher"):
        raise ValueError(f"figure {name!r}: better {better!r}; valid: lower, higher")
    sign = 1.0 if better == "higher" else -1.0
    names = [str(n) for n in fig.get("methods") or
             sorted({method_name(str(m)) for m in frame["method"]})]
    rows = frame[frame["method"].astype(str).map(method_name).isin(names)]
    if rows.empty:
        return []
    labels = _labels(rows, names, fig.get("labels") or {})
    tuning = str(fig.get("tuning_label", TUNING))
    points = {m: summarise(rows, m) for m in metrics}
    best = {m: choose(points[m], sign) for m in metrics}

    dlabels = sorted(rows["dataset_label"].unique())
    f, axes = plt.subplots(len(metrics), len(dlabels),
                           figsize=(4.2 * len(dlabels) + 1.8, 3.4 * len(metrics)),
                           squeeze=False)
    marker = {n: MARKERS[i % len(MARKERS)] for i, n in enumerate(names)}
    for r, metric in enumerate(metrics):
        for c, dlabel in enumerate(dlabels):
            ax = axes[r, c]
            part = best[metric][best[metric]["dataset_label"] == dlabel]
            for n in names:
                g = part[part["name"] == n].sort_values("epsilon")
                if g.empty:
                    continue
                ax.errorbar(g["epsilon"], g["mean"], yerr=g["se"].fillna(0),
                            fmt=f"-{marker[n]}", ms=5, mfc="none", capsize=3, label=labels[n])
            ax.set_title(dlabel)
            ax.set_xlabel(r"$\varepsilon$")
            ax.set_ylabel(_ylabel(fig, metric))
            if fig.get("logx", True):
                ax.set_xscale("log")
            if fig.get("logy", False):
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
    axes[0, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    f.suptitle(tuning, fontsize=9)
    if fig.get("note"):
        f.text(0.01, -0.02, fig["note"], fontsize=7, ha="left", va="top", wrap=True)
    f.tight_layout()
    paths = save(f, out / name)
    notes = [f"{tuning}: each cell is the sweep point with the best mean, named in brackets"] \
        + ([str(fig["note"])] if fig.get("note") else [])
    epsilons = sorted({float(e) for e in rows["epsilon"]})
    header = ["metric", "dataset", "method", *[f"ε={e:g}" for e in epsilons]]
    if fig.get("table", True):
        table = []
        for metric in metrics:
            b = best[metric]
            for (dlabel, n), g in _grouped(b, "name", names):
                cells = {float(e): f"{fixed_cell(m, s, _digits(fig, metric))} [{_point(i)}]{k}"
                         for e, m, s, i, k in zip(g["epsilon"], g["mean"], g["se"], g["method"],
                                                  _marks(g), strict=True)}
                table.append([_ylabel(fig, metric), dlabel, labels[n],
                              *[cells.get(e, "—") for e in epsilons]])
        paths += write_table(out / name, f"{name}: mean ± s.e., {tuning}", header, table,
                             notes)
    if fig.get("points_table", True):
        table = []
        for metric in metrics:
            p = points[metric]
            for dlabel in dlabels:
                part = p[p["dataset_label"] == dlabel]
                for ident in order_ids(list(part["method"].astype(str)), names):
                    g = part[part["method"] == ident]
                    cells = {float(e): fixed_cell(m, s, _digits(fig, metric)) + k
                             for e, m, s, k in zip(g["epsilon"], g["mean"], g["se"], _marks(g),
                                                   strict=True)}
                    table.append([_ylabel(fig, metric), dlabel, ident,
                                  *[cells.get(e, "—") for e in epsilons]])
        paths += write_table(out / f"{name}_points", f"{name}: every sweep point, mean ± s.e.",
                             header, table, [str(fig["note"])] if fig.get("note") else [])
    return paths


def choose(summary: pd.DataFrame, sign: float) -> pd.DataFrame:
    """Per (dataset, method name, epsilon) the row of ``summary`` (``report.frame.summarise``)
    with the best mean (largest ``sign * mean``; NaN means never win), with columns ``name``
    and ``points`` (how many sweep points had a mean)."""
    s = summary[np.isfinite(summary["mean"].astype(float))]
    s = s.assign(name=s["method"].astype(str).map(method_name), _score=sign * s["mean"])
    if s.empty:
        return s.assign(points=pd.Series(dtype=int)).drop(columns="_score")
    keys = ["dataset", "name", "epsilon"]
    count = s.groupby(keys)["method"].transform("count")
    s = s.assign(points=count).sort_values([*keys, "_score", "method"],
                                          ascending=[True, True, True, False, True])
    return s.groupby(keys, sort=True).head(1).drop(columns="_score").reset_index(drop=True)


def _marks(summary: pd.DataFrame) -> list[str]:
    """Per row of ``summarise`` output: `` [k/n trials]`` if the cell is short, else ""."""
    if "asked" not in summary:
        return [""] * len(summary)
    return [short_mark(int(t), a) for t, a in zip(summary["trials"], summary["asked"],
                                                  strict=True)]


def _metrics(fig: Mapping[str, Any]) -> list[str]:
    raw = fig.get("metrics", fig.get("metric"))
    if raw is None:
        raise ValueError(f"figure {fig.get('name')!r}: best_over_sweep needs metric: or "
                         "metrics: [...]")
    return [str(m) for m in (raw if isinstance(raw, list | tuple) else [raw])]


def _ylabel(fig: Mapping[str, Any], metric: str) -> str:
    given = fig.get("ylabel")
    if isinstance(given, Mapping):
        return str(given.get(metric, metric))
    return str(given) if given is not None and len(_metrics(fig)) == 1 else metric


def _digits(fig: Mapping[str, Any], metric: str) -> int:
    """Fixed decimals of ``metric``'s table cells (``digits``: an int or {metric: int})."""
    given = fig.get("digits", 4)
    return int(given.get(metric, 4)) if isinstance(given, Mapping) else int(given)


def _point(ident: str) -> str:
    """``k=v, ...`` of a sweep point id (``—`` for a bare name)."""
    inner = ident[len(method_name(ident)) + 1:].removesuffix("]")
    return inner.replace(",", ", ") if inner else "—"


def _labels(rows: pd.DataFrame, names: Sequence[str], given: Mapping[str, str]
            ) -> dict[str, str]:
    """Legend label per method name (module docstring, ``labels``)."""
    out = {}
    for n in names:
        if n in given:
            out[n] = str(given[n])
            continue
        ids = rows[rows["method"].astype(str).map(method_name) == n]
        bare = ids[ids["method"] == n]
        if not bare.empty:
            out[n] = str(bare["method_label"].iloc[0])
            continue
        ident, label = (str(x) for x in ids[["method", "method_label"]].iloc[0]) \
            if not ids.empty else (n, n)
        suffix = f" ({_point(ident)})"
        out[n] = label[:-len(suffix)] if label.endswith(suffix) else label
    return out


def _grouped(frame: pd.DataFrame, column: str, order: Sequence[str]):
    """((dataset label, value), rows) in dataset-label order, then ``order``."""
    for dlabel in sorted(frame["dataset_label"].unique()):
        part = frame[frame["dataset_label"] == dlabel]
        for value in order:
            g = part[part[column] == value]
            if not g.empty:
                yield (str(dlabel), value), g.sort_values("epsilon")
