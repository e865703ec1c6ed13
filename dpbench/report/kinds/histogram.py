"""``histogram``: a method's stored histogram, summed over trials, one panel per dataset.

A method stores the counts as a JSON list in an ``info`` column (``info.margin_hist`` by
default) and its bin edges as a JSON list in ``info.<column>_edges`` (e.g.
``info.margin_edges``); the figure sums the counts over the trials of (method, epsilon) and
draws each dataset's shares with dashed lines at +-``bound``; its table gives the share of
bins whose centre lies within +-``bound``.

Keys: ``method`` (required), ``epsilon`` (default 1.0; the stored epsilon nearest on a log
scale is used, since smoke runs thin the grid), ``bound`` (default 6.0), ``column`` (the
counts, default ``info.margin_hist``), ``edges_column`` (default ``<column>`` with
``_hist`` replaced by ``_edges``), ``edges: {start, stop, num}`` (``numpy.linspace`` edges
for stored results that predate the edges column), ``xlabel``, ``ylabel``, ``title``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbench.report.render import save, write_table

COUNTS = "info.margin_hist"


def nearest_epsilon(frame: pd.DataFrame, method: str, epsilon: float,
                    column: str = COUNTS) -> float | None:
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
                  column: str = COUNTS) -> dict[str, np.ndarray]:
    """Histogram counts per dataset label, summed over the trials of (method, epsilon)."""
    if frame.empty or column not in frame:
        return {}
    rows = frame[(frame["method"] == method) & np.isclose(frame["epsilon"], epsilon)]
    out: dict[str, np.ndarray] = {}
    for label, g in rows.groupby("dataset_label", sort=True):
        hists = [np.asarray(json.loads(h), dtype=float) for h in g[column].dropna()]
        if hists:
            out[str(label)] = np.sum(hists, axis=0)
    return out


def bin_edges(frame: pd.DataFrame, fig: dict[str, Any], column: str) -> np.ndarray:
    """The stored edges (first non-null of the edges column), else the spec's ``edges``."""
    col = fig.get("edges_column", column.replace("_hist", "_edges"))
    if col in frame and frame[col].notna().any():
        return np.asarray(json.loads(frame[col].dropna().iloc[0]), dtype=float)
    if "edges" not in fig:
        raise ValueError(f"figure {fig['name']!r}: no {col} in the results and no 'edges' "
                         "({start, stop, num}) in the figure spec")
    e = fig["edges"]
    return np.linspace(float(e["start"]), float(e["stop"]), int(e["num"]))


def histogram(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """One histogram panel per dataset, dashed lines at +-bound, and the share table."""
    method, bound = fig["method"], float(fig.get("bound", 6.0))
    column = fig.get("column", COUNTS)
    eps = nearest_epsilon(frame, method, float(fig.get("epsilon", 1.0)), column)
    if eps is None:
        return []
    counts = summed_counts(frame, method, eps, column)
    edges = bin_edges(frame[frame["method"] == method], fig, column)
    centers = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    ncol = min(len(counts), 4)
    nrow = int(np.ceil(len(counts) / ncol))
    f, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    rows = []
    for ax, (label, c) in zip(axes.flat, counts.items(), strict=False):
        share = c / c.sum()
        inside = float(share[np.abs(centers) <= bound].sum())
        ax.bar(centers, share, width=width, color="tab:blue", alpha=0.8)
        for x in (-bound, bound):
            ax.axvline(x, color="k", ls="--", lw=1)
        ax.set_title(f"{label}, ε = {eps:g}: {inside:.1%} within ±{bound:g}")
        ax.set_xlabel(fig.get("xlabel", r"$\langle y_i x_i, \hat\theta_{DP}\rangle$"))
        ax.set_ylabel(fig.get("ylabel", "share of training rows"))
        rows.append([str(label), f"{inside:.4f}", str(int(c.sum()))])
    for ax in list(axes.flat)[len(counts):]:
        ax.set_visible(False)
    f.tight_layout()
    paths = save(f, out / fig["name"])
    title = f"{fig.get('title', fig['name'])}: {method} at eps = {eps:g}"
    header = ["dataset", f"share within ±{bound:g}", "rows (all trials)"]
    return [*paths, *write_table(out / fig["name"], title, header, rows)]
