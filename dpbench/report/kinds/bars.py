"""``bars``: grouped bars of mean metric +- 1 s.e. over trials at one privacy budget, one
panel per dataset; with its Markdown/LaTeX table of the same numbers.

Each panel (title: the dataset label) holds groups of bars, one bar per *series* (a metric
column) in each group. ``group_by: method``: one group per method id, so a method swept per
dataset (ids ``name[k=v]``) gives one bar per sweep point present in the panel.
``group_by: target``: the metrics of a task that scores several targets, the main one
unsuffixed (``<m>``) and the others suffixed (``<m>_<t>``): one group for the main target
(labelled by the rows' ``dataset.target``, else "target"), then one per suffix ``t`` whose
``<m>_<t>`` holds a value in the panel's rows for every series metric ``m`` (sorted); the
panel must then hold a single method id. Non-private methods (``privacy.private`` false) are
hatched.

Keys: ``series`` (list of ``{metric, label}``; label default: the metric) or ``metric`` (one
series labelled by ``ylabel`` or the metric; ``series`` wins when both are given),
``methods`` (method names, the id before ``[``: the groups in this order, the ids of one
name by their sweep values, numbers numerically; default: every method name of the frame,
sorted), ``group_by`` (``method``, the default, or ``target``), ``epsilon`` (the rows at
this budget; default: the one epsilon of the selected methods' rows, an error if there are
several), ``ylabel`` (default: ``metric``, else the single series' metric, else "value"),
``ylim`` ([lo, hi]), ``title`` (table title before ``: ``; default: the name), ``note``
(printed under the figure and in the table notes), ``table`` (write .md/.tex, default true).
Colours: one per series, or one per method id with a single series and ``group_by:
method``. A legend when there is more than one series or a hatched bar. The table: one row
per (dataset, group), one ``mean ± s.e.`` column per series and ``n`` (the largest number
of trials with a finite value among the series; `` [k/n trials]`` after it when the group's
cells hold fewer trials than the grid asks).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from dpbench.report.frame import mean_se, method_name, order_ids, rows_mark
from dpbench.report.render import fixed_cell, save, write_table

GROUP_BY = ("method", "target")
WRAP = 22  # characters per line of a bar's tick label


#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"epsilon", "group_by", "metric", "series", "table", "ylabel", "ylim"})


@dataclass(frozen=True)
class Series:
    metric: str
    label: str


@dataclass(frozen=True)
class Group:
    """One group of bars: its tick label, its colour key (method id or target), whether it
    is private, and (mean, se, n) per series."""

    label: str
    key: str
    private: bool
    stats: tuple[tuple[float, float, int], ...]
    mark: str = ""  # `` [k/n trials]`` when its rows hold fewer trials than the grid asks


def bars(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """Grouped bars of mean +- s.e. at one epsilon, one panel per dataset, and their table."""
    name = str(fig["name"])
    series = parse_series(fig)
    group_by = str(fig.get("group_by", "method"))
    if group_by not in GROUP_BY:
        raise ValueError(f"figure {name!r}: group_by {group_by!r} is not one of "
                         f"{', '.join(GROUP_BY)}")
    if frame.empty or not any(s.metric in frame for s in series):
        return []
    names = _method_names(frame, fig.get("methods"))
    rows = frame[frame["method"].astype(str).map(method_name).isin(names)]
    rows, eps = at_epsilon(rows, fig.get("epsilon"), name)
    if rows.empty:
        return []
    panels = {str(d): _groups(part, series, group_by, names, name)
              for d, part in sorted(rows.groupby("dataset_label", sort=True),
                                    key=lambda kv: str(kv[0]))}
    ylabel = str(fig.get("ylabel", fig.get("metric", series[0].metric if len(series) == 1
                                                       else "value")))
    paths = _draw(panels, series, group_by, fig, ylabel, out / name)
    if fig.get("table", True):
        title = f"{fig.get('title') or name}: {ylabel} at ε={eps:g} (mean ± s.e.)"
        header = ["dataset", group_by, *[s.label for s in series], "n"]
        table = [[d, g.label, *[fixed_cell(m, se, 3) for m, se, _ in g.stats],
                  str(max(n for _, _, n in g.stats)) + g.mark]
                 for d, groups in panels.items() for g in groups]
        notes = [str(fig["note"])] if fig.get("note") else []
        paths += write_table(out / name, title, header, table, notes)
    return paths


def parse_series(fig: Mapping[str, Any]) -> list[Series]:
    """The spec's ``series`` (each ``{metric, label}``), or its ``metric`` as one series."""
    raw = fig.get("series")
    if raw is None:
        if fig.get("metric") is None:
            raise ValueError(f"figure {fig.get('name')!r}: bars needs series: [{{metric, "
                             "label}, ...] or metric:")
        metric = str(fig["metric"])
        return [Series(metric, str(fig.get("ylabel", metric)))]
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or entry.get("metric") is None:
            raise ValueError(f"figure {fig.get('name')!r}: series entry {entry!r} has no "
                             "metric; each entry is {metric, label}")
        out.append(Series(str(entry["metric"]), str(entry.get("label", entry["metric"]))))
    if not out:
        raise ValueError(f"figure {fig.get('name')!r}: series is empty; give "
                         "[{metric, label}, ...]")
    return out


def at_epsilon(rows: pd.DataFrame, epsilon: Any, name: str) -> tuple[pd.DataFrame, float]:
    """The rows at ``epsilon``; without one, the rows' only epsilon (else a ValueError, since
    bars at mixed budgets would not compare)."""
    values = sorted({float(e) for e in rows["epsilon"]})
    if epsilon is None:
        if len(values) > 1:
            raise ValueError(f"figure {name!r}: the results hold epsilons "
                             f"{', '.join(f'{e:g}' for e in values)}; set epsilon: to one")
        if not values:
            return rows, math.nan
        epsilon = values[0]
    eps = float(epsilon)
    return rows[np.isclose(rows["epsilon"].astype(float), eps, rtol=1e-9, atol=0.0)], eps


def _method_names(frame: pd.DataFrame, listed: Sequence[str] | None) -> list[str]:
    """The listed method names, or every method name of the frame, sorted."""
    if listed is not None:
        return [str(n) for n in listed]
    return sorted({method_name(str(m)) for m in frame["method"]})


def _private(rows: pd.DataFrame) -> bool:
    """False only when the rows say ``privacy.private`` is false (non-private reference)."""
    if "privacy.private" not in rows:
        return True
    flags = rows["privacy.private"].dropna()
    return flags.empty or bool(flags.iloc[0])


def _stats(rows: pd.DataFrame, columns: Sequence[str]) -> tuple[tuple[float, float, int], ...]:
    """(mean, se, n) of each column over the rows; a missing column is (nan, nan, 0)."""
    return tuple(mean_se(rows[c]) if c in rows else (math.nan, math.nan, 0) for c in columns)


def _groups(part: pd.DataFrame, series: Sequence[Series], group_by: str,
            names: Sequence[str], fig_name: str) -> list[Group]:
    """The groups of one panel's rows."""
    if group_by == "method":
        return method_groups(part, series, names)
    ids = sorted(part["method"].astype(str).unique())
    if len(ids) > 1:
        raise ValueError(f"figure {fig_name!r}: group_by target draws one method per panel, "
                         f"{part['dataset_label'].iloc[0]!r} has {', '.join(ids)}; "
                         "list one in methods:")
    return target_groups(part, series)


def method_groups(part: pd.DataFrame, series: Sequence[Series],
                  names: Sequence[str]) -> list[Group]:
    """One group per method id of the panel, in ``order_ids`` order."""
    metrics = [s.metric for s in series]
    out = []
    for ident in order_ids(part["method"].astype(str).unique().tolist(), names):
        rows = part[part["method"].astype(str) == ident]
        out.append(Group(str(rows["method_label"].iloc[0]), ident, _private(rows),
                         _stats(rows, metrics), rows_mark(rows)))
    return out


def target_suffixes(part: pd.DataFrame, metrics: Sequence[str]) -> list[str]:
    """Suffixes ``t`` with a value of ``<m>_<t>`` in the rows for every metric ``m``."""
    found = None
    for m in metrics:
        have = {c[len(m) + 1:] for c in part.columns
                if c.startswith(f"{m}_") and part[c].notna().any()}
        found = have if found is None else found & have
    return sorted(found or ())


def _main_target(part: pd.DataFrame) -> str:
    """The rows' ``dataset.target`` (the target the unsuffixed metrics score), else "target"."""
    values = part["dataset.target"].dropna() if "dataset.target" in part else []
    return str(values.iloc[0]) if len(values) else "target"


def target_groups(part: pd.DataFrame, series: Sequence[Series]) -> list[Group]:
    """The main target (unsuffixed metrics), then one group per ``target_suffixes``."""
    metrics = [s.metric for s in series]
    private = _private(part)
    label = _main_target(part)
    mark = rows_mark(part)
    out = [Group(label, label, private, _stats(part, metrics), mark)]
    for t in target_suffixes(part, metrics):
        out.append(Group(t, t, private, _stats(part, [f"{m}_{t}" for m in metrics]), mark))
    return out


def _colours(panels: Mapping[str, Sequence[Group]], series: Sequence[Series],
             group_by: str) -> tuple[bool, dict[str, Any]]:
    """Whether bars are coloured by group (one series, ``group_by: method``), and the colour
    of each group key (first seen first) or series label."""
    by_group = group_by == "method" and len(series) == 1
    keys = list(dict.fromkeys(g.key for gs in panels.values() for g in gs)) if by_group \
        else [s.label for s in series]
    cmap = plt.get_cmap("tab10" if len(keys) <= 10 else "tab20")
    return by_group, {k: cmap(i % cmap.N) for i, k in enumerate(keys)}


def _draw(panels: Mapping[str, Sequence[Group]], series: Sequence[Series], group_by: str,
          fig: Mapping[str, Any], ylabel: str, stem: Path) -> list[Path]:
    """The panels of grouped bars, saved as PNG and PDF."""
    by_group, colour = _colours(panels, series, group_by)
    most = max(len(gs) for gs in panels.values()) * len(series)
    ncol = min(len(panels), 3)
    nrow = math.ceil(len(panels) / ncol)
    width = max(3.2, 0.42 * most + 1.2)
    f, axes = plt.subplots(nrow, ncol, figsize=(width * ncol + 1.8, 3.6 * nrow), squeeze=False)
    step = 0.8 / len(series)
    for ax, (dlabel, groups) in zip(axes.flat, panels.items(), strict=False):
        for k, s in enumerate(series):
            xs = np.arange(len(groups)) + (k - (len(series) - 1) / 2) * step
            means = [g.stats[k][0] for g in groups]
            ses = [g.stats[k][1] for g in groups]
            drawn = ax.bar(xs, np.nan_to_num(means), step * 0.95, yerr=np.nan_to_num(ses),
                           capsize=3, edgecolor="0.2", linewidth=0.5, error_kw={"elinewidth": 0.8},
                           color=[colour[g.key] if by_group else colour[s.label]
                                  for g in groups])
            for patch, g in zip(drawn.patches, groups, strict=True):
                patch.set_hatch(None if g.private else "//")
        ax.set_xticks(np.arange(len(groups)))
        # slanted, wrapped labels: long method labels of neighbouring bars must not overlap
        ax.set_xticklabels([textwrap.fill(g.label, WRAP) for g in groups], fontsize=7,
                           rotation=35, ha="right", rotation_mode="anchor")
        ax.set_title(dlabel)
        ax.set_ylabel(ylabel)
        if fig.get("ylim") is not None:
            lo, hi = fig["ylim"]
            ax.set_ylim(float(lo), float(hi))
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Patch(facecolor=colour[s.label], edgecolor="0.2", label=s.label)
               for s in series] if len(series) > 1 else []
    if any(not g.private for gs in panels.values() for g in gs):
        handles.append(Patch(facecolor="white", edgecolor="0.2", hatch="//",
                             label="non-private"))
    if handles:
        axes[0, -1].legend(handles=handles, fontsize=8, loc="upper left",
                           bbox_to_anchor=(1.02, 1.0))
    if fig.get("note"):
        f.text(0.01, -0.02, str(fig["note"]), fontsize=7, ha="left", va="top", wrap=True)
    f.tight_layout()
    return save(f, stem)
