"""``histogram``: a method's stored histogram, summed over trials, one panel per dataset.

A method stores the counts as a JSON list in an ``info`` column and its bin edges as a JSON
list in another; the figure sums the counts over the trials of (method, epsilon) and draws
each dataset's shares with dashed lines at +-``bound``; its table gives the share of bins
whose centre lies within +-``bound``.

Keys: ``method`` and ``column`` (the counts, e.g. ``info.margin_hist``; required),
``epsilon`` (default 1.0; the stored epsilon nearest on a log scale is used, since smoke
runs thin the grid), ``bound`` (default 6.0), ``edges_column`` (default ``column`` with
``_hist`` replaced by ``_edges``), ``edges: {start, stop, num}`` (``numpy.linspace`` edges
for stored results that predate the edges column), ``xlabel`` (default "value"),
``ylabel`` (default "share of rows"), ``title``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbench.report.frame import histogram_edges, pooled_counts, share_within
from dpbench.report.render import save, write_table

#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"bound", "column", "edges", "edges_column", "epsilon", "method", "xlabel",
                  "ylabel"})


def nearest_epsilon(frame: pd.DataFrame, method: str, epsilon: float,
                    column: str) -> float | None:
    """The stored epsilon of ``method`` closest to ``epsilon`` on a log scale (smoke runs
    thin the epsilon grid, so the requested one may be absent)."""
    if frame.empty or column not in frame:
        return None
    eps = frame.loc[(frame["method"] == method) & frame[column].notna(), "epsilon"]
    if eps.empty:
        return None
    values = np.unique(eps.to_numpy(dtype=float))
    return float(values[np.argmin(np.abs(np.log(values / epsilon)))])


def summed_counts(frame: pd.DataFrame, method: str, epsilon: float,
                  column: str) -> dict[str, np.ndarray]:
    """Histogram counts per dataset label, summed over the trials of (method, epsilon)."""
    if frame.empty or column not in frame:
        return {}
    rows = frame[(frame["method"] == method) & np.isclose(frame["epsilon"], epsilon)]
    out: dict[str, np.ndarray] = {}
    for label, g in rows.groupby("dataset_label", sort=True):
        counts = pooled_counts(g, column)
        if counts is not None:
            out[str(label)] = counts
    return out


def histogram(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """One histogram panel per dataset, dashed lines at +-bound, and the share table."""
    method, bound, column = fig["method"], float(fig.get("bound", 6.0)), fig["column"]
    eps = nearest_epsilon(frame, method, float(fig.get("epsilon", 1.0)), column)
    if eps is None:
        return []
    counts = summed_counts(frame, method, eps, column)
    try:
        edges = histogram_edges(frame[frame["method"] == method],
                                fig.get("edges_column", column.replace("_hist", "_edges")),
                                fig.get("edges"))
    except ValueError as exc:
        raise ValueError(f"figure {fig['name']!r}: {exc}") from None
    centers = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    ncol = min(len(counts), 4)
    nrow = int(np.ceil(len(counts) / ncol))
    f, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    rows = []
    for ax, (label, c) in zip(axes.flat, counts.items(), strict=False):
        inside = share_within(c, edges, bound)
        ax.bar(centers, c / c.sum(), width=width, color="tab:blue", alpha=0.8)
        for x in (-bound, bound):
            ax.axvline(x, color="k", ls="--", lw=1)
        ax.set_title(f"{label}, ε = {eps:g}: {inside:.1%} within ±{bound:g}")
        ax.set_xlabel(fig.get("xlabel", "value"))
        ax.set_ylabel(fig.get("ylabel", "share of rows"))
        rows.append([str(label), f"{inside:.4f}", str(int(c.sum()))])
    for ax in list(axes.flat)[len(counts):]:
        ax.set_visible(False)
    f.tight_layout()
    paths = save(f, out / fig["name"])
    title = f"{fig.get('title', fig['name'])}: {method} at eps = {eps:g}"
    header = ["dataset", f"share within ±{bound:g}", "rows (all trials)"]
    return [*paths, *write_table(out / fig["name"], title, header, rows)]
