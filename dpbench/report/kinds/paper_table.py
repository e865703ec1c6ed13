"""``paper_table``: our numbers next to a paper's printed numbers, "ours ± s.e. / paper (z)".

The paper's numbers are ``papers/<paper>/numbers.csv`` (format and z: ``report.numbers``);
lookups match table, dataset, method, metric and stat (``epsilon`` and ``note`` document
the number). A not comparable (proxy) dataset's row is shown with ``[PROXY, not
comparable]`` and no paper value.

Spec keys:

- ``paper`` (the experiment's paper), ``table`` (the ``table`` value in numbers.csv),
  ``caption`` (the table title; ``{label}`` is the ``per`` group's label), ``notes``
  (lines under the table; ``{trials}`` is the number of rows of the group), then ``note``
  (the experiment's setting choices, e.g. its protocol).
- ``per``: a column (e.g. ``method``): one table per value, written as ``<name>_<value>``.
- ``methods``: only these methods enter the table.
- ``rows``: ``dataset`` (default), ``[dataset, method]`` or ``index``. With ``index``,
  ``index: {count: <metric template with {i}>, label: <template with {i} / {n} = i + 1>}``
  gives one row per i (the column metrics hold ``{i}``). With ``[dataset, method]``:
  ``keep`` (methods always shown; the others only where the paper has a number),
  ``order`` (a column sorting the rows within a dataset), ``row_cells`` (extra label cells,
  each ``{column, format}``). ``row_headers``: the label columns' headers (default
  ``[dataset]``). Rows without any trial are left out.
- ``columns``: a list, each with ``metric`` and ``stat`` (default ``mean_se``), ``method``
  (the rows of that method; a column whose method has no rows is left out unless
  ``always: true``), ``paper_method`` (the numbers.csv method, default ``method``),
  ``paper_stat`` (default ``stat``), ``header`` (``{label}`` = the method's label;
  default the label), ``digits`` (our fixed decimals, default 3), ``format`` (the cell
  from ``{ours}``, ``{paper}``, ``{z}``, ``{at}``, ``{paper_at}``), ``format_nopaper``
  (the format when the paper has no number), or ``others: true`` (one ``mean_se`` column
  per method no other column names, sorted, with this entry's metric and digits);
  ``epsilon``: only our trials at that epsilon, compared with the paper's number printed
  at it (one column per epsilon).

Stats: ``mean_se`` (mean ± s.e. over trials); ``sd`` (sd over trials ± sd/sqrt(2(n-1)));
``coverage`` (mean of a 0/1 column ± binomial s.e. at the mean of ours and the paper's);
``best_over`` (the best, i.e. lowest, mean: over the metric columns starting with
``prefix``, or over the groups of column ``over``; ``{at}`` is the best column suffix or
value, ``{paper_at}`` the ``over`` value of the paper row's method); ``median_iqr``
(median [q25, q75], plus the count above ``count_above`` if given); ``min_max_median``
(min / max / median; the paper's from its ``min``, ``max`` and ``median`` rows);
``ranking`` (the ``mean_se`` columns' method labels, lowest mean first).
Default formats: ``{ours} / {paper} ({z})`` for mean_se, sd, coverage; ``{ours}`` else.
``{ours}`` ends in `` [k/n trials]`` when the cells behind it hold fewer trials than the grid
asks (``report.frame.rows_mark``). ``{z}`` is ``report.numbers.compare``'s, as in the
``matches_paper`` claims: a z counting both sides' noise, or "fewer than N trials: no
verdict"; a table with a z column gets ``report.numbers.Z_NOTE`` as a note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbench.report.frame import mean_se, rows_mark
from dpbench.report.numbers import Z_NOTE, compare, read_numbers, sd_se
from dpbench.report.render import fixed_cell, write_table
from dpbench.roots import paper_dir

PROXY = " [PROXY, not comparable]"
COMPARED = ("mean_se", "sd", "coverage")
MIN_MAX_MEDIAN = ("min", "max", "median")


#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"caption", "columns", "index", "keep", "notes", "order", "per", "row_cells",
                  "row_headers", "rows", "table"})


def zscore(ours: float, se: float, n: int, row: pd.Series | None) -> str:
    """``numbers.compare`` as printed in a cell: the z, "fewer than N trials: no verdict",
    or a dash without a paper number (or without our statistic)."""
    return "—" if row is None else compare(ours, se, n, row).text


def printed(paper: float | None, digits: int = 3) -> str:
    """A paper value as printed (fixed decimals), or a dash."""
    return "—" if paper is None else f"{paper:.{digits}f}"


class Paper:
    """One table's printed numbers: lookups by (dataset, method, metric, stat)."""

    def __init__(self, numbers: pd.DataFrame, table: str) -> None:
        self.rows = numbers[numbers["table"] == str(table)]

    def proxy(self, dataset: str) -> bool:
        mine = self.rows[self.rows["dataset"] == dataset]
        return bool(len(mine)) and not bool(mine["comparable"].all())

    def find(self, dataset: str, method: str | None, metric: str, stat: str,
             proxies: bool = False, epsilon: float | None = None) -> pd.DataFrame:
        """The comparable rows (with ``proxies``: the not comparable ones too); with
        ``epsilon``, only the rows printed at that epsilon."""
        r = self.rows
        hit = r[(r["dataset"] == dataset) & (r["metric"] == metric) & (r["stat"] == stat)
                & (r["comparable"] | proxies)]
        if epsilon is not None:
            hit = hit[np.isclose(hit["epsilon"].astype(float), float(epsilon))]
        return hit if method is None else hit[hit["method"] == method]

    def row(self, dataset: str, method: str | None, metric: str, stat: str,
            proxies: bool = False, epsilon: float | None = None) -> pd.Series | None:
        """The first matching row (``find``), or None."""
        hit = self.find(dataset, method, metric, stat, proxies, epsilon)
        return None if hit.empty else hit.iloc[0]

    def value(self, dataset: str, method: str | None, metric: str, stat: str,
              proxies: bool = False, epsilon: float | None = None
              ) -> tuple[float | None, int, str | None]:
        """The printed value, its digits and the row's method (None, 3, None if absent)."""
        row = self.row(dataset, method, metric, stat, proxies, epsilon)
        if row is None:
            return None, 3, None
        return float(row["value"]), int(row["digits"]), str(row["method"])


def _label(frame: pd.DataFrame, column: str, value: Any) -> str:
    part = frame.loc[frame[column] == value, f"{column}_label"]
    return str(part.iloc[0]) if len(part) else str(value)


def _columns(frame: pd.DataFrame, spec: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The column specs with ``others`` expanded and absent methods or epsilons left out."""
    named = {c["method"] for c in spec if "method" in c}
    present = set(frame["method"])
    out: list[dict[str, Any]] = []
    for c in spec:
        if c.get("others"):
            base = {k: v for k, v in c.items() if k != "others"}
            out += [{**base, "method": m} for m in sorted(present - named)]
        elif c.get("always") or (("method" not in c or c["method"] in present)
                                 and (c.get("epsilon") is None or bool(np.isclose(
                                     frame["epsilon"].astype(float), float(c["epsilon"])).any()))):
            out.append(dict(c))
    for c in out:
        if "header" not in c:
            c["header"] = "{label}"
        c["header"] = c["header"].replace("{label}", _label(frame, "method", c["method"])
                                          if "method" in c else "")
    return out


def _binom_se(p: float, paper: float | None, n: int) -> float:
    """Binomial s.e. of a coverage, at the mean of ours and the paper's (finite at 0 or 1)."""
    q = p if paper is None else (p + paper) / 2
    return math.sqrt(max(q * (1 - q), 0.25 / n) / n)


def _cell(rows: pd.DataFrame, col: dict[str, Any], ctx: dict[str, Any], paper: Paper,
          means: dict[str, float]) -> str:
    """One cell: our statistic over ``rows``, the paper's number and z, by ``col['format']``."""
    stat, digits = col.get("stat", "mean_se"), int(col.get("digits", 3))
    metric = str(col.get("metric", "")).format(**ctx)
    method = col.get("paper_method", col.get("method", ctx.get("method")))
    pstat = col.get("paper_stat", stat)
    eps = col.get("epsilon")
    if eps is not None:
        rows = rows[np.isclose(rows["epsilon"].astype(float), float(eps))]
    prow = (paper.row(ctx["dataset"], method, metric, pstat, epsilon=eps)
            if stat not in ("min_max_median", "ranking") else None)
    p, pdigits, pmethod = ((None, 3, None) if prow is None else
                           (float(prow["value"]), int(prow["digits"]), str(prow["method"])))
    fields: dict[str, Any] = {"at": "", "paper_at": "", "paper": printed(p, pdigits)}
    m, se, n = math.nan, math.nan, 0
    if stat == "ranking":
        ranked = sorted((v, k) for k, v in means.items() if math.isfinite(v))
        fields["ours"] = " < ".join(k for _, k in ranked)
    elif stat == "min_max_median":
        k = rows[metric].astype(float) if metric in rows else pd.Series(dtype=float)
        fields["ours"] = (f"{k.min():.0f} / {k.max():.0f} / {k.median():.0f}" if len(k)
                          else "—")
        parts = [paper.value(ctx["dataset"], method, metric, s) for s in MIN_MAX_MEDIAN]
        if all(v is not None for v, _, _ in parts):
            fields["paper"] = " / ".join(printed(v, d) for v, d, _ in parts)
        else:
            p = None
    elif stat == "median_iqr":
        v = rows[metric].to_numpy(dtype=float) if metric in rows else np.array([])
        text = (f"{np.median(v):.{digits}f} [{np.quantile(v, 0.25):.{digits}f}, "
                f"{np.quantile(v, 0.75):.{digits}f}]") if v.size else "—"
        if v.size and "count_above" in col:
            text += f", {int(np.sum(v > float(col['count_above'])))}"
        fields["ours"] = text
    elif stat == "best_over" and "prefix" in col:
        cols = [c for c in rows.columns if c.startswith(col["prefix"])]
        grid = rows[cols].mean(skipna=False) if cols else pd.Series(dtype=float)
        if grid.notna().any():
            best = str(grid.idxmin())
            m, se, n = mean_se(rows[best])
            fields["at"] = best[len(col["prefix"]):]
    elif stat == "best_over":
        over = col["over"]
        groups = {v: g[metric] for v, g in rows.groupby(over, sort=True)} if len(rows) else {}
        if groups:
            best = min(groups, key=lambda v: mean_se(groups[v])[0])
            m, se, n = mean_se(groups[best])
            fields["at"] = f"{best:g}"
        if pmethod is not None:
            at = ctx["frame"].loc[ctx["frame"]["method"] == pmethod, over]
            fields["paper_at"] = f"{at.iloc[0]:g}" if len(at) else pmethod
    elif stat == "sd":
        m, se = sd_se(rows[metric])
        n = int(rows[metric].notna().sum())
    elif stat == "coverage":
        m, n = float(rows[metric].mean()), len(rows)
        se = _binom_se(m, p, n)
    elif stat == "mean_se":
        m, se, n = mean_se(rows[metric]) if metric in rows else (math.nan, math.nan, 0)
        if "method" in col:
            means[_label(rows, "method", col["method"]) if len(rows) else col["method"]] = m
    else:
        raise ValueError(f"paper_table: unknown stat {stat!r}")
    if "ours" not in fields:
        fields["ours"] = fixed_cell(m, se, digits)
        fields["z"] = zscore(m, se, n, prow)
    fields["ours"] += rows_mark(rows)  # its cells hold fewer trials than the grid asks
    fields.setdefault("z", "—")
    default = "{ours} / {paper} ({z})" if stat in COMPARED else "{ours}"
    fmt = col.get("format_nopaper", col.get("format", default)) if p is None \
        else col.get("format", default)
    return fmt.format(**fields)


def _paper_stats(col: Mapping[str, Any]) -> tuple[str, ...]:
    """The numbers.csv stats a column compares with."""
    stat = col.get("paper_stat", col.get("stat", "mean_se"))
    return MIN_MAX_MEDIAN if stat == "min_max_median" else (stat,)


def _row_keys(frame: pd.DataFrame, fig: dict[str, Any], paper: Paper,
              columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's context: dataset (and method or index i), in the frame's order."""
    rows = fig.get("rows", "dataset")
    datasets = list(pd.unique(frame["dataset"]))
    if rows == "index":
        template = fig["index"]["count"]
        pattern = re.escape(template).replace(re.escape("{i}"), r"\d+")
        n = sum(1 for c in frame.columns if re.fullmatch(pattern, c))
        return [{"dataset": d, "i": i, "n": i + 1} for d in datasets for i in range(n)]
    if rows == "dataset" or rows == ["dataset"]:
        return [{"dataset": d} for d in datasets]
    if list(rows) != ["dataset", "method"]:
        raise ValueError(f"paper_table rows={rows!r}; valid: dataset, [dataset, method], index")
    keep, order = set(fig.get("keep", [])), fig.get("order")
    out = []
    for d in datasets:
        part = frame[frame["dataset"] == d]
        ms = [m for m in pd.unique(part["method"])
              if m in keep or any(not paper.find(d, m, str(c.get("metric", "")), s).empty
                                  for c in columns for s in _paper_stats(c))]
        if order:
            first = part.groupby("method")[order].first()
            ms = sorted(ms, key=lambda m: first[m])
        out += [{"dataset": d, "method": m} for m in ms]
    return out


def _table(frame: pd.DataFrame, fig: dict[str, Any], paper: Paper,
           stem: Path, label: str) -> list[Path]:
    columns = _columns(frame, fig["columns"])
    body = []
    for ctx in _row_keys(frame, fig, paper, columns):
        part = frame[frame["dataset"] == ctx["dataset"]]
        if "method" in ctx:
            part = part[part["method"] == ctx["method"]]
        if part.empty:
            continue
        ctx = {**ctx, "frame": frame}
        if "i" in ctx:
            cells = [fig["index"]["label"].format(**ctx)]
        else:
            cells = [_label(frame, "dataset", ctx["dataset"])
                     + (PROXY if paper.proxy(ctx["dataset"]) else "")]
        cells += [rc.get("format", "{}").format(part[rc["column"]].iloc[0])
                  for rc in fig.get("row_cells", [])]
        means: dict[str, float] = {}
        for col in columns:
            rows = part[part["method"] == col["method"]] if "method" in col else part
            cells.append(_cell(rows, col, ctx, paper, means))
        body.append(cells)
    header = [*fig.get("row_headers", ["dataset"]), *[c["header"] for c in columns]]
    ctx = {"label": label, "trials": len(frame)}
    notes = [n.format(**ctx) for n in fig.get("notes", [])]
    if any(c.get("stat", "mean_se") in COMPARED or c.get("stat") == "best_over"
           for c in columns):
        notes.append(Z_NOTE)
    return write_table(stem, fig.get("caption", fig["name"]).format(**ctx), header, body,
                       [*notes, *([str(fig["note"])] if fig.get("note") else [])])


def paper_table(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """The table (one per ``per`` value) as Markdown and LaTeX."""
    paper = Paper(read_numbers(paper_dir(fig["paper"]) / "numbers.csv"), fig["table"])
    if fig.get("methods"):
        frame = frame[frame["method"].isin(fig["methods"])]
    if frame.empty:
        return []
    per = fig.get("per")
    if not per:
        return _table(frame, fig, paper, out / fig["name"], "")
    paths: list[Path] = []
    for value, g in frame.groupby(per, sort=True):
        paths += _table(g, fig, paper, out / f"{fig['name']}_{value}", _label(g, per, value))
    return paths
