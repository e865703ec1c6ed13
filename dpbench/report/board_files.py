"""The files of an arena board: ``board.md``, ``board.tex``, ``board.json``, ``board.csv``
(``report.leaderboard``'s renderings) and its plots (PNG + PDF through ``render.save``): per
dataset, quality against median fit time with the Pareto front joined, one panel per
epsilon; and each method's mean rank against epsilon."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from dpbench.report.leaderboard import (
    BASELINE,
    METHOD,
    REFERENCE,
    Board,
    to_frame,
    to_json,
    to_latex,
    to_markdown,
)
from dpbench.report.render import save

MARKERS = {METHOD: "o", BASELINE: "s"}


def write_board(board: Board, out: Path) -> list[Path]:
    """``board.md``, ``board.tex``, ``board.json`` and ``board.csv`` in ``out``, then the
    plots: ``pareto-<dataset>`` and ``mean_ranks``, PNG and PDF."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"board.{ext}" for ext in ("md", "tex", "json", "csv")]
    paths[0].write_text(to_markdown(board))
    paths[1].write_text(to_latex(board))
    paths[2].write_text(to_json(board) + "\n")
    to_frame(board).to_csv(paths[3], index=False)
    return paths + pareto_plots(board, out) + ranks_plot(board, out)


def pareto_plots(board: Board, out: Path) -> list[Path]:
    """``pareto-<dataset>.png/pdf``: per dataset, one panel per epsilon, each method and
    baseline with a mean and a fit time as a point (baselines squares, the winner black;
    the non-private references are left out, as from the front), the front
    (``Row.pareto``) joined in time order."""
    paths: list[Path] = []
    h = board.header
    for dataset in dict.fromkeys(t.dataset for t in board.tables):
        tables = [t for t in board.tables if t.dataset == dataset]
        cols = min(2, len(tables))
        nrows = -(-len(tables) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 4.0 * nrows),
                                 squeeze=False)
        for ax in axes.flat[len(tables):]:
            ax.set_visible(False)
        for ax, t in zip(axes.flat, tables, strict=False):
            rows = [r for r in t.rows if r.mean is not None and r.fit_s is not None
                    and r.role != REFERENCE]
            for r in rows:
                ax.scatter(max(r.fit_s, 1e-3), r.mean, marker=MARKERS.get(r.role, "o"),
                           color="black" if r.winner else None, s=28, zorder=3)
                ax.annotate(r.method_label, (max(r.fit_s, 1e-3), r.mean), fontsize=6,
                            xytext=(3, 2), textcoords="offset points")
            front = sorted((r for r in rows if r.pareto), key=lambda r: r.fit_s)
            if front:
                ax.plot([max(r.fit_s, 1e-3) for r in front], [r.mean for r in front],
                        color="tab:green", lw=1.2, zorder=2, label="Pareto front")
                ax.legend(fontsize=7, loc="best")
            ax.set_xscale("log")
            ax.set_title(f"{t.dataset_label}, {h.budget_unit} = {t.epsilon:g}", fontsize=9)
            ax.set_xlabel("median fit seconds (log)")
            ax.set_ylabel(f"{h.metric} ({'higher' if h.higher_is_better else 'lower'} "
                          "is better)")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        paths += save(fig, out / f"pareto-{dataset}")
    return paths


def ranks_plot(board: Board, out: Path) -> list[Path]:
    """``mean_ranks.png/pdf``: each method's mean rank (over the datasets where it is
    ranked) against epsilon, 1 at the top; nothing without ranks."""
    ranks = [m for m in board.mean_ranks if m.mean_rank is not None]
    if not ranks:
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label in dict.fromkeys(m.method_label for m in ranks):
        pts = sorted((m.epsilon, m.mean_rank) for m in ranks if m.method_label == label)
        ax.plot([e for e, _ in pts], [r for _, r in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel(board.header.budget_unit)
    ax.set_ylabel("mean rank (1 = best)")
    ax.set_title(f"{board.header.experiment}: mean rank over the datasets where ranked",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return save(fig, out / "mean_ranks")
