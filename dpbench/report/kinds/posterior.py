"""``posterior_ecdf`` and ``posterior_density``: private vs non-private posteriors per
coefficient, one figure (PNG/PDF) and one summary table (Markdown/LaTeX) per
(dataset, method), named ``<name>_<dataset>_<method>``.

Posteriors enter the results only as quantiles (``info.theta_quantiles`` and
``info.baseline_theta_quantiles``, JSON (d, 99) at ``info.quantile_levels``), so an ECDF is
the quantile curve and a density is a KDE of the quantile points. The frame also needs, per
coefficient j, ``ks_theta<j>``, ``mean_theta<j>``, ``baseline_mean_theta<j>``,
``sd_theta<j>``, ``baseline_sd_theta<j>``, and ``rhat_max`` / ``baseline_rhat_max``.

Keys: ``rows`` (posterior_ecdf: how many epsilons to draw, spread over the grid; default 4),
``title``, ``note`` (printed under the figure).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbench.report.frame import mean_se
from dpbench.report.render import fixed_cell, save, write_table

PRIVATE, BASELINE = "info.theta_quantiles", "info.baseline_theta_quantiles"


#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"rows"})


def _quantiles(frame: pd.DataFrame, column: str) -> list[np.ndarray]:
    return [np.asarray(json.loads(q)) for q in frame[column].dropna()]


def _levels(frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(json.loads(frame["info.quantile_levels"].dropna().iloc[0]))


def _d(frame: pd.DataFrame) -> int:
    return len(json.loads(frame[PRIVATE].dropna().iloc[0]))


def _ks_columns(frame: pd.DataFrame) -> list[str]:
    return [f"ks_theta{j}" for j in range(_d(frame))]


def _usable(frame: pd.DataFrame) -> bool:
    return not frame.empty and PRIVATE in frame and BASELINE in frame


def _cells(frame: pd.DataFrame) -> Iterator[tuple[pd.DataFrame, int, list, np.ndarray]]:
    """Per (dataset, method): its rows, d, sorted epsilons and the quantile levels."""
    if not _usable(frame):
        return
    levels = _levels(frame)
    for _, part in frame.groupby(["dataset", "method"], sort=True):
        yield part, _d(part), sorted(part["epsilon"].unique()), levels


def _density(q: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Density from equally spaced quantiles: a Gaussian KDE of the quantile points (they
    are a stratified sample of the posterior), on a grid over their range."""
    del levels  # equally spaced by construction
    grid = np.linspace(q.min() - 0.1 * np.ptp(q), q.max() + 0.1 * np.ptp(q), 200)
    if np.ptp(q) == 0:
        return grid, np.zeros_like(grid)
    from scipy.stats import gaussian_kde  # here: plan checks figure keys via this module

    return grid, gaussian_kde(q)(grid)


def _ks_panel(ax: plt.Axes, frame: pd.DataFrame) -> None:
    for j, col in enumerate(_ks_columns(frame)):
        rows = [(e, *mean_se(g[col])[:2]) for e, g in frame.groupby("epsilon", sort=True)]
        e, m, s = (np.array(v, dtype=float) for v in zip(*rows, strict=True))
        ax.errorbar(e, m, yerr=np.nan_to_num(s), fmt="-o", ms=3, capsize=2,
                    label=rf"$\theta_{j}$")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel("Kolmogorov-Smirnov distance")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def posterior_ecdf(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """Figs. 5-6: private (solid) vs non-private (dashed) ECDFs of each theta_j, one colour per
    trial (each trial has its own data), at a few epsilons (rows); KS vs epsilon (top right)."""
    paths: list[Path] = []
    for part, d, eps_all, levels in _cells(frame):
        idx = np.unique(np.round(np.linspace(0, len(eps_all) - 1,
                                             min(int(fig.get("rows", 4)), len(eps_all)))))
        shown = [eps_all[int(i)] for i in idx]
        f, axes = plt.subplots(len(shown), d + 1, figsize=(2.6 * (d + 1), 2.2 * len(shown)),
                               squeeze=False)
        for r, eps in enumerate(shown):
            cellf = part[part["epsilon"] == eps]
            pairs = list(zip(_quantiles(cellf, PRIVATE), _quantiles(cellf, BASELINE),
                             strict=True))
            for j in range(d):
                ax = axes[r, j]
                for t, (qp, qb) in enumerate(pairs):
                    color = plt.cm.tab10(t % 10)
                    ax.plot(qp[j], levels, color=color, alpha=0.6, lw=0.8)
                    ax.plot(qb[j], levels, "--", color=color, lw=1.0)
                ax.set_title(rf"$\theta_{j}$, $\varepsilon$={eps:.3g}", fontsize=8)
                ax.tick_params(labelsize=7)
            axes[r, d].set_visible(r == 0)
        _ks_panel(axes[0, d], part)
        if fig.get("note"):
            f.text(0.01, -0.01, fig["note"], fontsize=7, ha="left", va="top", wrap=True)
        f.suptitle(f"{part['dataset_label'].iloc[0]}, {part['method_label'].iloc[0]}: private "
                   "(solid) vs non-private (dashed) posterior ECDF, one colour per trial",
                   fontsize=9)
        f.tight_layout()
        paths += _save(f, part, fig, out)
    return paths


def posterior_density(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """Figs. 3-4: private vs non-private posterior density of each theta_j (first trial of
    each epsilon), plus a table of posterior means, sds, KS and R-hat."""
    paths: list[Path] = []
    for part, d, eps_all, levels in _cells(frame):
        f, axes = plt.subplots(len(eps_all), d, figsize=(2.6 * d, 2.3 * len(eps_all)),
                               squeeze=False)
        for r, eps in enumerate(eps_all):
            first = part[part["epsilon"] == eps].sort_values("trial").iloc[:1]
            qp, qb = _quantiles(first, PRIVATE)[0], _quantiles(first, BASELINE)[0]
            for j in range(d):
                ax = axes[r, j]
                ax.plot(*_density(qp[j], levels), color="tab:blue", label="private")
                ax.plot(*_density(qb[j], levels), "k--", label="non-private")
                ax.set_title(rf"$\theta_{j}$, $\varepsilon$={eps:.3g}", fontsize=8)
                ax.tick_params(labelsize=7)
        axes[0, 0].legend(fontsize=7)
        if fig.get("note"):
            f.text(0.01, -0.01, fig["note"], fontsize=7, ha="left", va="top", wrap=True)
        f.suptitle(f"{part['dataset_label'].iloc[0]}, {part['method_label'].iloc[0]}: "
                   "posterior densities", fontsize=9)
        f.tight_layout()
        paths += _save(f, part, fig, out)
    return paths


def _save(f: plt.Figure, part: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """The figure and its summary table, named by figure, dataset and method."""
    dataset, method = part["dataset"].iloc[0], part["method"].iloc[0]
    stem = out / f"{fig['name']}_{dataset}_{method}"
    return save(f, stem) + _summary_table(part, stem, f"{fig.get('title', fig['name'])}: "
                                                      f"{dataset}, {method}")


def _summary_table(part: pd.DataFrame, stem: Path, title: str) -> list[Path]:
    """Per epsilon and theta_j: KS, posterior mean/sd private vs non-private (mean +- s.e.)."""
    rows = []
    for eps, g in part.groupby("epsilon", sort=True):
        for j in range(_d(part)):
            vals = [mean_se(g[c]) for c in (f"ks_theta{j}", f"mean_theta{j}",
                                            f"baseline_mean_theta{j}", f"sd_theta{j}",
                                            f"baseline_sd_theta{j}")]
            rows.append([f"{eps:.4g}", f"θ{j}", *[fixed_cell(m, s) for m, s, _ in vals],
                         f"{g['rhat_max'].max():.3f}", f"{g['baseline_rhat_max'].max():.3f}",
                         str(len(g))])
    header = ["epsilon", "coef", "KS", "mean (DP)", "mean (non-DP)", "sd (DP)", "sd (non-DP)",
              "max R-hat (DP)", "max R-hat (non-DP)", "trials"]
    return write_table(stem, title, header, rows,
                       ["mean ± s.e. over trials; KS = two-sample Kolmogorov-Smirnov distance "
                        "between the private and the non-private posterior draws"])
