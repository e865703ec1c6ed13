"""Figures, tables and the claim check of the noise-aware Bayesian GLM paper (Figs. 3-6).

Posteriors enter the results only as quantiles (``info.theta_quantiles`` and
``info.baseline_theta_quantiles``, JSON (d, 99) at levels 0.01..0.99), so an
ECDF is the quantile curve and a density is d(level)/d(quantile).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import gaussian_kde

from dpbench.report.binagg import cell
from dpbench.report.frame import mean_se
from dpbench.report.render import write_table

PRIVATE, BASELINE = "info.theta_quantiles", "info.baseline_theta_quantiles"
PAPER_FIGURE = {"bayesglm_logistic_ks": "Fig 5", "bayesglm_poisson_ks": "Fig 6"}


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
    from dpbench.report.render import save  # figures.py imports this module

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
            rows.append([f"{eps:.4g}", f"θ{j}", *[cell(m, s) for m, s, _ in vals],
                         f"{g['rhat_max'].max():.3f}", f"{g['baseline_rhat_max'].max():.3f}",
                         str(len(g))])
    header = ["epsilon", "coef", "KS", "mean (DP)", "mean (non-DP)", "sd (DP)", "sd (non-DP)",
              "max R-hat (DP)", "max R-hat (non-DP)", "trials"]
    return write_table(stem, title, header, rows,
                       ["mean ± s.e. over trials; KS = two-sample Kolmogorov-Smirnov distance "
                        "between the private and the non-private posterior draws"])


def ks_nonincreasing(frame: pd.DataFrame, out: Path, z: float = 2.0) -> list[Path]:
    """Claim check (Sec. 4.3, Fig. 5; Supplement Fig. 6): the KS distance is non-increasing
    in epsilon within its error bars: for every theta_j and every eps_a < eps_b,
    KS(eps_b) - KS(eps_a) <= z * sqrt(se_a^2 + se_b^2) (z = 2). Prints PASS/FAIL."""
    if frame.empty or "ks_theta0" not in frame:
        return []
    lines, ok = [], True
    for (dataset, method), part in frame.groupby(["dataset", "method"], sort=True):
        for col in [c for c in _ks_columns(part) if c in part]:
            stats = [(e, *mean_se(g[col])) for e, g in part.groupby("epsilon", sort=True)]
            worst = (-math.inf, None)
            for a in range(len(stats)):
                for b in range(a + 1, len(stats)):
                    (ea, ma, sa, _), (eb, mb, sb, _) = stats[a], stats[b]
                    tol = z * math.sqrt(np.nan_to_num(sa) ** 2 + np.nan_to_num(sb) ** 2)
                    excess = (mb - ma) - tol
                    if excess > worst[0]:
                        worst = (excess, (ea, ma, sa, eb, mb, sb, tol))
            passed = worst[0] <= 0
            ok &= passed
            ea, ma, sa, eb, mb, sb, tol = worst[1]
            lines.append(f"{dataset}/{method} {col}: {'PASS' if passed else 'FAIL'} (largest "
                         "change (later minus earlier epsilon) "
                         f"KS({eb:.4g}) - KS({ea:.4g}) = {mb:.3f} - {ma:.3f} = {mb - ma:+.3f}, "
                         f"allowed {tol:.3f} = {z:g} x combined s.e.; "
                         f"n = {stats[0][3]} trials per epsilon)")
    name = PAPER_FIGURE.get(str(frame["experiment"].iloc[0]), str(frame["experiment"].iloc[0]))
    head = f"{name} KS non-increasing in eps within error bars: {'PASS' if ok else 'FAIL'}"
    print(head)
    for line in lines:
        print("  " + line)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "check_ks_nonincreasing.md"
    path.write_text("\n".join([f"## {head}", "", *[f"- {x}" for x in lines]]) + "\n")
    return [path]
