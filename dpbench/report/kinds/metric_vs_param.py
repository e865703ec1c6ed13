"""``metric_vs_param``: mean metric +- 1 s.e. over trials vs a parameter column, one panel
per value of another column, one line per method; with its Markdown/LaTeX table.

Parameters enter the frame as ``dataset.<p>`` / ``method.<p>`` columns (every scalar
parameter of the spec), so one dataset yaml per point and a sweep draw the same figure.

Keys: ``metric`` (required), ``x`` (column on the x axis, required), ``panel`` (column, one
panel per value; default: a single panel), ``where`` ({column: value or list}: the rows
drawn), ``fill`` ({column: default} for rows that leave the parameter at its loader's
default), ``xlabel`` (default: ``x``), ``panel_label`` (panel titles ``<panel_label> =
<value>``; default: ``panel``), ``ylabel`` (default: the metric), ``logx`` / ``logy``
(default true), ``caption`` (table title after ``<name>: ``; default ``<metric> (mean ±
s.e.)``), ``value_header`` (the table's value column, default: the metric), ``digits``
(fixed decimals of the table cells, default 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbench.report.frame import mean_se, select
from dpbench.report.render import fixed_cell, save, write_table

#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"caption", "digits", "fill", "logx", "logy", "metric", "panel", "panel_label",
                  "value_header", "where", "x", "xlabel", "ylabel"})


def metric_vs_param(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """One errorbar line per method over ``x``, one panel per ``panel`` value."""
    metric, xcol, pcol = fig["metric"], fig["x"], fig.get("panel")
    sub = select(frame, fig.get("where"), fig.get("fill"))
    if sub.empty or xcol not in sub or metric not in sub:
        return []
    sub = sub.assign(_x=sub[xcol].astype(float), _panel=sub[pcol] if pcol else "")
    xname = fig.get("xlabel", xcol)
    pname = fig.get("panel_label", pcol)
    panels = sorted(sub["_panel"].unique())
    f, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    table_rows = []
    for ax, p in zip(axes.flat, panels, strict=True):
        for _, g in sub[sub["_panel"] == p].groupby("method", sort=True):
            stats = [(x, *mean_se(gg[metric])[:2]) for x, gg in g.groupby("_x")]
            xs, ms, ses = map(np.array, zip(*sorted(stats), strict=True))
            label = str(g["method_label"].iloc[0])
            ax.errorbar(xs, ms, yerr=np.nan_to_num(ses), fmt="-o", ms=3, capsize=2,
                        label=label)
            table_rows += [(p, label, x, fixed_cell(m, s, int(fig.get("digits", 3))))
                           for x, m, s in zip(xs, ms, ses, strict=True)]
        if fig.get("logx", True):
            ax.set_xscale("log")
        if fig.get("logy", True):
            ax.set_yscale("log")
        if pcol:
            ax.set_title(f"{pname} = {p}")
        ax.set_xlabel(xname)
        ax.set_ylabel(fig.get("ylabel", metric))
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    f.tight_layout()
    paths = save(f, out / fig["name"])
    caption = fig.get("caption", f"{metric} (mean ± s.e.)")
    paths += write_table(out / fig["name"], f"{fig['name']}: {caption}",
                         ["panel", "method", xname, fig.get("value_header", metric)],
                         [[f"{pname}={p}" if pcol else "", lab, f"{x:g}", c]
                          for p, lab, x, c in sorted(table_rows)])
    return paths
