"""DD-SSP paper figure builders beyond the generic metric-vs-epsilon panels.

Fig. 4: distribution of the margins <y_i x_i, theta_DP> of ObjPert at eps = 1,
with the [-6, 6] range of the Chebyshev approximation marked. ObjPert stores a
histogram of its training margins over fixed bin edges (``MARGIN_EDGES``) in
``info.margin_hist`` (JSON); the figure sums them over trials.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbench.methods.classification.objpert import MARGIN_EDGES
from dpbench.report.render import write_table


def nearest_epsilon(frame: pd.DataFrame, method: str, epsilon: float) -> float | None:
    """The stored epsilon of ``method`` closest to ``epsilon`` on a log scale (smoke runs
    thin the epsilon grid, so the requested one may be absent)."""
    if frame.empty or "info.margin_hist" not in frame:
        return None
    eps = frame.loc[(frame["method"] == method) & frame["info.margin_hist"].notna(), "epsilon"]
    if eps.empty:
        return None
    values = np.unique(eps.to_numpy(dtype=float))
    return float(values[np.argmin(np.abs(np.log(values / epsilon)))])


def margin_counts(frame: pd.DataFrame, method: str, epsilon: float) -> dict[str, np.ndarray]:
    """Histogram counts per dataset label, summed over the trials of (method, epsilon)."""
    if frame.empty or "info.margin_hist" not in frame:
        return {}
    rows = frame[(frame["method"] == method) & np.isclose(frame["epsilon"], epsilon)]
    out: dict[str, np.ndarray] = {}
    for label, g in rows.groupby("dataset_label", sort=True):
        hists = [np.asarray(json.loads(h), dtype=float) for h in g["info.margin_hist"].dropna()]
        if hists:
            out[str(label)] = np.sum(hists, axis=0)
    return out


def objpert_margins(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """Fig. 4: one histogram panel per dataset, dashed lines at +-bound (default 6)."""
    import matplotlib.pyplot as plt

    from dpbench.report.render import save

    method, bound = fig.get("method", "objpert"), float(fig.get("bound", 6.0))
    eps = nearest_epsilon(frame, method, float(fig.get("epsilon", 1.0)))
    if eps is None:
        return []
    counts = margin_counts(frame, method, eps)
    centers = (MARGIN_EDGES[:-1] + MARGIN_EDGES[1:]) / 2
    width = MARGIN_EDGES[1] - MARGIN_EDGES[0]
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
        ax.set_xlabel(r"$\langle y_i x_i, \hat\theta_{DP}\rangle$")
        ax.set_ylabel("share of training rows")
        rows.append([str(label), f"{inside:.4f}", str(int(c.sum()))])
    for ax in list(axes.flat)[len(counts):]:
        ax.set_visible(False)
    f.tight_layout()
    paths = save(f, out / fig["name"])
    title = f"{fig.get('title', fig['name'])}: {method} at eps = {eps:g}"
    header = ["dataset", f"share within ±{bound:g}", "rows (all trials)"]
    return [*paths, *write_table(out / fig["name"], title, header, rows)]
