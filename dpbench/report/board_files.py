"""The files of an arena board: ``board.md``, ``board.tex``, ``board.json``, ``board.csv``
(``report.leaderboard``'s renderings) and its plots (PNG + PDF through ``render.save``): per
dataset, quality against median fit time with the Pareto front joined, one panel per
epsilon; each method's mean rank against epsilon; and per epsilon the critical-difference
diagram of the mean ranks (Demšar 2006)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, NullLocator

from dpbench.report.leaderboard import (
    BASELINE,
    METHOD,
    REFERENCE,
    Across,
    Board,
    to_frame,
    to_json,
    to_latex,
    to_markdown,
)
from dpbench.report.render import save

MARKERS = {METHOD: "o", BASELINE: "s"}
#: a log axis of seconds labelled 0.001, 0.1, 10, 1000
SECONDS = FuncFormatter(lambda v, _: f"{v:g}")
#: the names of the files a board writes (anything else in its folder is left alone)
OWN_FILES = ("board.md", "board.tex", "board.json", "board.csv", "pareto-*.png", "pareto-*.pdf",
             "mean_ranks.png", "mean_ranks.pdf", "critical_difference-*.png",
             "critical_difference-*.pdf")


def write_board(board: Board, out: Path) -> list[Path]:
    """``board.md``, ``board.tex``, ``board.json`` and ``board.csv`` in ``out``, then the
    plots: ``pareto-<dataset>``, ``mean_ranks`` and ``critical_difference-<epsilon>``, PNG
    and PDF; such files left in ``out`` by an earlier writing are removed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"board.{ext}" for ext in ("md", "tex", "json", "csv")]
    paths[0].write_text(to_markdown(board))
    paths[1].write_text(to_latex(board))
    paths[2].write_text(to_json(board) + "\n")
    to_frame(board).to_csv(paths[3], index=False)
    paths += pareto_plots(board, out) + ranks_plot(board, out) + cd_plots(board, out)
    remove_stale(out, paths)
    return paths


def remove_stale(out: Path, written: list[Path]) -> list[Path]:
    """Delete the files of a board's kinds (``OWN_FILES``) in ``out`` that this writing did
    not produce: a plot of a dataset or an epsilon the board no longer has, or one under a
    name since changed, would otherwise stay beside the current ones and be shown with
    them. Other files (and folders: the per-metric boards) are left alone."""
    keep = {p.name for p in written}
    stale = sorted({f for pattern in OWN_FILES for f in out.glob(pattern)
                    if f.is_file() and f.name not in keep})
    for f in stale:
        f.unlink()
    return stale


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
            front = sorted((r for r in rows if r.pareto), key=lambda r: r.fit_s)
            if front:
                ax.plot([max(r.fit_s, 1e-3) for r in front], [r.mean for r in front],
                        color="tab:green", lw=1.2, zorder=2, label="Pareto front")
            ax.set_xscale("log")
            # decades only, labelled as plain numbers: minor ticks and mathtext labels
            # (10^k) were a third of the figure's drawing time and told no more
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(SECONDS)
            label_points(ax, [(max(r.fit_s, 1e-3), r.mean, r.method_label) for r in rows])
            ax.set_title(f"{t.dataset_label}, {h.budget_unit} = {t.epsilon:g}", fontsize=9)
            ax.set_xlabel("median fit seconds (log)")
            ax.set_ylabel(f"{h.metric} ({'higher' if h.higher_is_better else 'lower'} "
                          "is better)")
            ax.grid(alpha=0.3)
        # one legend for the figure, under the panels: a legend per panel at loc="best"
        # searched every label's extent and was a fifth of the board's drawing time
        front = next((line for ax in axes.flat for line in ax.get_lines()[:1]), None)
        if front is not None:
            fig.legend([front], ["Pareto front"], fontsize=7, loc="lower center",
                       bbox_to_anchor=(0.5, 0.0), frameon=False)
        fig.tight_layout(rect=(0, 0.03 if front is not None else 0, 1, 1))
        paths += save(fig, out / f"pareto-{dataset}")
    return paths


#: a label's height and the horizontal reach within which two labels may collide (points)
LABEL_PT, LABEL_REACH_PT = 7.0, 70.0


def label_offsets(points: list[tuple[float, float]]) -> list[float]:
    """Vertical offsets (points) for labels at display positions ``points`` (in points) so
    that no two labels within LABEL_REACH_PT of each other horizontally are closer than
    LABEL_PT vertically: each label, top to bottom, goes down below those it would hit."""
    placed: list[tuple[float, float]] = []       # (x, y of the label) already placed
    offsets = [0.0] * len(points)
    for i in sorted(range(len(points)), key=lambda k: -points[k][1]):
        x, y = points[i]
        label_y = y + 2.0
        near = sorted((py for px, py in placed if abs(px - x) < LABEL_REACH_PT), reverse=True)
        for py in near:
            if abs(label_y - py) < LABEL_PT:
                label_y = py - LABEL_PT
        offsets[i] = label_y - y
        placed.append((x, label_y))
    return offsets


def label_points(ax: plt.Axes, pts: list[tuple[float, float, str]]) -> None:
    """Each point's label beside it, moved down where it would overlap another's (a thin
    line joins a moved label to its point)."""
    if not pts:
        return
    ax.autoscale_view()                # the axes' limits final, without drawing the figure
    to_pt = 72.0 / ax.figure.dpi
    shown = [tuple(v * to_pt for v in ax.transData.transform((x, y))) for x, y, _ in pts]
    for (x, y, text), dy in zip(pts, label_offsets(shown), strict=True):
        moved = abs(dy - 2.0) > 0.5
        ax.annotate(text, (x, y), fontsize=6, xytext=(3, dy), textcoords="offset points",
                    va="bottom" if not moved else "center",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5"} if moved else None)


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


def cd_plots(board: Board, out: Path) -> list[Path]:
    """``critical_difference-<epsilon>.png/pdf``: per epsilon with a Friedman test, the mean
    ranks on an axis (1 = best, left) and a bar joining each maximal group of methods whose
    mean ranks lie within Nemenyi's critical difference (Demšar 2006, Fig. 1's style)."""
    paths: list[Path] = []
    for a in board.across:
        if a.cd is None:
            continue
        fig = cd_figure(a, board.header.budget_unit)
        paths += save(fig, out / f"critical_difference-{a.epsilon:g}")
    return paths


def cd_groups(ranks: list[float], cd: float) -> list[tuple[int, int]]:
    """The maximal runs (i, j) of the sorted mean ranks whose spread is below ``cd`` (each a
    group no pair of which differs), runs of one left out."""
    runs = []
    for i in range(len(ranks)):
        j = max(k for k in range(i, len(ranks)) if ranks[k] - ranks[i] < cd)
        if j > i and not any(a <= i and j <= b for a, b in runs):
            runs.append((i, j))
    return runs


def cd_figure(a: Across, unit: str) -> plt.Figure:
    """The critical-difference diagram of one :class:`Across`."""
    order = sorted(range(len(a.methods)), key=lambda i: a.mean_ranks[i])
    ranks = [a.mean_ranks[i] for i in order]
    labels = [a.labels[i] for i in order]
    k = len(labels)
    half = -(-k // 2)
    fig, ax = plt.subplots(figsize=(7.0, 1.6 + 0.28 * half))
    ax.set_xlim(1, max(k, 2))
    ax.set_ylim(-(half + 1.5), 1.2)
    ax.axhline(0, color="black", lw=1)
    for r in range(1, k + 1):
        ax.plot([r, r], [0, 0.12], color="black", lw=0.8)
        ax.text(r, 0.2, str(r), ha="center", va="bottom", fontsize=7)
    for pos, (rank, label) in enumerate(zip(ranks, labels, strict=True)):
        left = pos < half
        level = -(pos + 1 if left else k - pos)
        x_text = 0.9 if left else max(k, 2) + 0.1
        ax.plot([rank, rank, x_text], [0, level * 0.3, level * 0.3], color="black", lw=0.7)
        ax.text(x_text, level * 0.3, f"{label} ({rank:.2f})", fontsize=7, va="center",
                ha="right" if left else "left")
    for n, (i, j) in enumerate(cd_groups(ranks, a.cd)):
        y = -0.12 - 0.08 * n
        ax.plot([ranks[i] - 0.03, ranks[j] + 0.03], [y, y], color="tab:red", lw=2.5)
    ax.plot([1, 1 + a.cd], [1.0, 1.0], color="black", lw=1.5)
    ax.text(1 + a.cd / 2, 1.05, f"CD = {a.cd:.2f}", ha="center", va="bottom", fontsize=7)
    p = "p < 0.001" if a.p < 0.001 else f"p = {a.p:.2g}"
    ax.set_title(f"{unit} = {a.epsilon:g}: mean ranks over {a.datasets} tables "
                 f"(Friedman {p}); red bars join ranks within the CD", fontsize=8)
    ax.axis("off")
    fig.subplots_adjust(left=0.25, right=0.75)
    return fig
