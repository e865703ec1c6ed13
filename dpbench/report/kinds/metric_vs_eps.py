"""``metric_vs_eps``: mean metric +- 1 s.e. over trials vs the privacy budget, one panel per
dataset, one line per method; with its Markdown/LaTeX table of the same numbers. A method
with a cell holding fewer trials than the grid asks is ``[incomplete]`` in the legend, the
cell ``[k/n trials]`` in the table.

Keys: ``metric`` (frame column, required), ``ylabel`` (default: the metric), ``logx``
(default true), ``logy`` (default false), ``table`` (write .md/.tex, default true),
``title``, ``note`` (printed under the figure and in the table), ``reference`` (another
metric of the same trials drawn per method as a dashed grey line with its ± s.e. band, e.g.
a non-private reference the task computes on the same split; ``reference_label`` names it).
``paper_values``: the paper's printed numbers beside ours, from
``papers/<paper>/numbers.csv`` (``paper`` key): ``{table, method, metric (default: the
figure's), reference (the numbers.csv metric of the reference line, drawn dotted), label}``;
per panel the comparable rows of the panel's dataset id, as black crosses at their epsilon.
``settings_vs_paper``: ``{text, settings: [{column, paper, label}]}``: where the rows' value
of a ``column`` (e.g. a method parameter) differs from the ``paper``'s, the figure and its
table say ``text: label ours (paper theirs), ...``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpbench.report.frame import legend_label, summarise  # noqa: E402
from dpbench.report.numbers import read_numbers  # noqa: E402
from dpbench.report.render import save, write_tables  # noqa: E402
from dpbench.roots import paper_dir  # noqa: E402

UNIT_SYMBOL = {"epsilon": r"$\varepsilon$", "mu": r"$\mu$ (GDP)", "rho": r"$\rho$ (zCDP)"}
MARKERS = "osD^vx+<>p"


#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"logx", "logy", "metric", "paper_values", "reference", "reference_label",
                  "settings_vs_paper", "table", "ylabel"})


def metric_vs_eps(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """Mean metric +- 1 s.e. over trials vs privacy budget; one panel per dataset.

    Non-private methods (privacy.private == False) are drawn as dashed lines.
    """
    metric = fig["metric"]
    summary = summarise(frame, metric)
    if summary.empty:
        return []
    unit = str(frame["budget_unit"].iloc[0])
    private = frame.groupby("method")["privacy.private"].first().to_dict()
    dlabels = sorted(summary["dataset_label"].unique())
    ncol = min(len(dlabels), 4)
    nrow = int(np.ceil(len(dlabels) / ncol))
    printed = _paper_rows(fig)
    note = " ".join(filter(None, [fig.get("note"), settings_note(frame, fig)])) or None
    f, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol + 1.8, 3.4 * nrow), squeeze=False)
    # one marker per method, so curves that coincide stay visible
    marker = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(sorted(private))}
    for ax, dlabel in zip(axes.flat, dlabels, strict=False):
        part = summary[summary["dataset_label"] == dlabel]
        for method, g in part.groupby("method", sort=True):
            g = g.sort_values("epsilon")
            style = f"-{marker[method]}" if private.get(method, True) else "--"
            ax.errorbar(g["epsilon"], g["mean"], yerr=g["se"].fillna(0), fmt=style, ms=5,
                        mfc="none", capsize=3,
                        label=legend_label(str(g["method_label"].iloc[0]), g))
        if fig.get("reference"):
            _reference(ax, frame[frame["dataset_label"] == dlabel], fig)
        if printed is not None:
            _printed(ax, printed, str(part["dataset"].iloc[0]), fig)
        ax.set_title(dlabel)
        ax.set_xlabel(UNIT_SYMBOL.get(unit, unit))
        ax.set_ylabel(fig.get("ylabel", metric))
        if fig.get("logx", True):
            ax.set_xscale("log")
        if fig.get("logy", False):
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(dlabels):]:
        ax.set_visible(False)
    # outside the panels, right of the first row: curves span the whole y-range
    axes[0, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if note:
        f.text(0.01, -0.02, note, fontsize=7, ha="left", va="top", wrap=True)
    f.tight_layout()
    paths = save(f, out / fig["name"])
    if fig.get("table", True):
        title = f"{fig.get('title', fig['name'])}: {fig.get('ylabel', metric)} (mean ± s.e.)"
        paths += write_tables(summary, out / fig["name"], title, unit, note=note)
    return paths


def settings_note(frame: pd.DataFrame, fig: dict[str, Any]) -> str | None:
    """``settings_vs_paper``'s sentence for the settings whose values in ``frame`` differ
    from the paper's (None when none differs or the spec has none)."""
    spec = fig.get("settings_vs_paper")
    if not spec:
        return None
    parts = []
    for item in spec["settings"]:
        col, theirs = item["column"], item["paper"]
        if col not in frame:
            continue
        ours = sorted({v for v in frame[col].dropna()}, key=str)
        if ours and ours != [theirs]:
            shown = ", ".join(f"{v:g}" if isinstance(v, int | float) else str(v) for v in ours)
            parts.append(f"{item.get('label', col)} {shown} (paper {theirs:g})"
                         if isinstance(theirs, int | float) else
                         f"{item.get('label', col)} {shown} (paper {theirs})")
    return f"{spec['text']}: {'; '.join(parts)}." if parts else None


def _paper_rows(fig: dict[str, Any]) -> pd.DataFrame | None:
    """The comparable numbers.csv rows of ``paper_values`` (None without the key)."""
    spec = fig.get("paper_values")
    if not spec:
        return None
    nums = read_numbers(paper_dir(fig["paper"]) / "numbers.csv")
    return nums[(nums["table"] == str(spec["table"])) & (nums["method"] == spec["method"])
                & nums["comparable"]]


def _printed(ax: Any, rows: pd.DataFrame, dataset: str, fig: dict[str, Any]) -> None:
    """The paper's values of one dataset: crosses at their epsilon, its reference dotted."""
    spec = fig["paper_values"]
    mine = rows[rows["dataset"] == dataset]
    pts = mine[mine["metric"] == spec.get("metric", fig["metric"])].sort_values("epsilon")
    label = str(spec.get("label", "paper"))
    if len(pts):
        ax.plot(pts["epsilon"], pts["value"], "x:", color="black", ms=6, lw=0.8, label=label)
    ref = mine[mine["metric"] == spec.get("reference", "")]
    if spec.get("reference") and len(ref):
        ax.axhline(float(ref["value"].iloc[0]), ls=":", color="black", lw=1,
                   label=f"{label}: {fig.get('reference_label', spec['reference'])}")


def _reference(ax: Any, rows: pd.DataFrame, fig: dict[str, Any]) -> None:
    """The ``reference`` metric pooled over every trial of the panel: a horizontal dashed
    line at its mean with a ± s.e. band (one value per trial and epsilon)."""
    ref = summarise(rows, fig["reference"])
    if ref.empty:
        return
    mean = float(ref["mean"].mean())
    se = float(ref["se"].fillna(0).mean())
    ax.axhline(mean, ls="--", color="0.35", lw=1,
               label=str(fig.get("reference_label", fig["reference"])))
    ax.axhspan(mean - se, mean + se, color="0.35", alpha=0.12, lw=0)
