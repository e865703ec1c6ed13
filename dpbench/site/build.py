"""The site on disk: an experiment's page, an arena's page, the papers' pages, the index and
the data files. The CLI (``dpbench site``) composes each stored grid and hands its parts
here; nothing in this module names a paper, an experiment or a method."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.report.frame import summaries
from dpbench.report.leaderboard import (
    Board,
    across_notes,
    header_lines,
    rank_summary,
    table_header,
    table_notes,
    table_rows,
    table_title,
)
from dpbench.site.html import markdown, render, sections, sort_value, title_of
from dpbench.site.model import ARENA, EXPERIMENT, Page

TRIALS_CSV = "trials.csv"
#: a heading of a paper's notes that every experiment page of the paper shows
SETTINGS_HEADING = re.compile(r"ambigu|wrong|silent|choice|correction", re.IGNORECASE)


@dataclass(frozen=True)
class Paper:
    """A paper folder: its name, its notes (``README.md``) and their title."""

    name: str
    readme: Path

    @property
    def title(self) -> str:
        return title_of(self.readme)


def stamp() -> str:
    """Now, to the second, UTC (the footer's "built")."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def common(root: str, papers: Sequence[Paper], version: str) -> dict[str, Any]:
    """What every template reads: the path to the site root, the papers for the navigation
    bar, the build time and the dpbench version."""
    return {"root": root, "nav_papers": papers, "built": stamp(), "version": version}


# --- an experiment's page ---------------------------------------------------------------------


def figure_entries(folder: Path, paths: Sequence[Path], kinds: Mapping[str, str],
                   page: Page) -> list[dict[str, str]]:
    """Each PNG the report wrote, with its PDF and alt text (figure name, kind, experiment
    and profile; the numbers are in the table of the same name below)."""
    out = []
    for p in paths:
        if p.suffix != ".png":
            continue
        kind = next((k for name, k in sorted(kinds.items(), key=lambda kv: -len(kv[0]))
                     if p.stem.startswith(name)), "figure")
        alt = (f"Figure {p.stem} ({kind.replace('_', ' ')}) of experiment {page.experiment}, "
               f"{page.provenance.origin}; its numbers are in the table of the same name")
        out.append({"name": p.stem, "png": p.relative_to(folder).as_posix(),
                    "pdf": p.with_suffix(".pdf").relative_to(folder).as_posix(), "alt": alt})
    return out


def table_entries(folder: Path, paths: Sequence[Path]) -> list[dict[str, str]]:
    """Each Markdown table the report wrote, as HTML (headings one level down), with its
    Markdown and LaTeX files."""
    out = []
    for p in paths:
        if p.suffix != ".md" or p.name == "claims.md":
            continue
        html = markdown(p.read_text())
        for level in (4, 3, 2):
            html = html.replace(f"<h{level}>", f"<h{level + 1}>").replace(
                f"</h{level}>", f"</h{level + 1}>")
        out.append({"name": p.stem, "html": html, "md": p.relative_to(folder).as_posix(),
                    "tex": p.with_suffix(".tex").relative_to(folder).as_posix()})
    return out


def cell_rows(frame: pd.DataFrame, metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Per (dataset, method, epsilon, metric): mean, s.e., n and trials asked
    (``report.frame.summarise``), for the page's every-cell table."""
    rows = []
    numeric = [m for m in metrics if m in frame and pd.api.types.is_numeric_dtype(frame[m])]
    for metric, table in summaries(frame, numeric).items():   # the cells grouped once
        for r in table.to_dict("records"):
            rows.append({**r, "metric": metric, "asked": int(r.get("asked", r["n"]))})
    return sorted(rows, key=lambda r: (str(r["dataset_label"]), str(r["method_label"]),
                                       float(r["epsilon"]), r["metric"]))


def settings_html(paper: Paper | None, experiment: str, out: Path) -> str:
    """The sections of the paper's notes about ``experiment`` (its name in the heading) or
    about the paper's choices (where it is ambiguous, silent or wrong), as HTML."""
    if paper is None or not paper.readme.is_file():
        return ""
    name = re.compile(rf"(?<![\w-]){re.escape(experiment)}(?![\w-])")
    text = sections(paper.readme.read_text(),
                    lambda h: bool(name.search(h) or SETTINGS_HEADING.search(h)))
    return markdown(text, paper.readme.parent, out) if text.strip() else ""


def write_experiment_page(page: Page, folder: Path, frame: pd.DataFrame, paths: Sequence[Path],
                          kinds: Mapping[str, str], note: str, paper: Paper | None,
                          context: Mapping[str, Any]) -> Path:
    """``<folder>/index.html`` and ``<folder>/trials.csv`` of one experiment's report (its
    figure and table files already in ``folder``)."""
    claims_path = folder / "claims.json"
    claims = json.loads(claims_path.read_text()) if claims_path.is_file() else []
    metrics = frame.attrs.get("metrics", [])
    write_trials(frame, page, folder)
    return render("experiment.html", folder / "index.html", **context, page=page,
                  paper=paper, claims=claims, unit=unit_of(frame),
                  figures=figure_entries(folder, paths, kinds, page),
                  tables=table_entries(folder, paths), cells=cell_rows(frame, metrics),
                  settings=settings_html(paper, page.experiment, folder), note=note)


def unit_of(frame: pd.DataFrame) -> str:
    """The budget unit of a results frame (epsilon without rows)."""
    return str(frame["budget_unit"].iloc[0]) if "budget_unit" in frame and len(frame) \
        else "epsilon"


def write_trials(frame: pd.DataFrame, page: Page, folder: Path) -> Path:
    """``<folder>/trials.csv``: the page's trials with its experiment, profile and, for an
    ad-hoc grid, the overrides that made it (``ad_hoc``)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = frame.assign(experiment=page.experiment, profile=page.profile, ad_hoc=page.custom)
    path = folder / TRIALS_CSV
    out.to_csv(path, index=False)
    return path


# --- an arena's page ---------------------------------------------------------------------------


def board_cells(board: Board) -> list[dict[str, Any]]:
    """Per dataset: its plots are added by the caller; its tables' rows as (text, sort key)
    cells, the numeric columns keyed by their exact value."""
    out: dict[str, dict[str, Any]] = {}
    for t in board.tables:
        ds = out.setdefault(t.dataset, {"id": t.dataset, "label": t.dataset_label,
                                        "tables": [], "plots": []})
        rows = []
        for r, texts in zip(t.rows, table_rows(t), strict=True):
            keys = [r.rank if r.ranked else "", "", r.mean, "", r.diff_vs_best,
                    "" if r.p_vs_bar is None else r.p_vs_bar, r.as_good_as, r.fit_s,
                    r.cpu_s, r.peak_rss_mb,
                    "" if r.spent is None else r.spent, "", ""]
            cells = [(text, sort_value(k) if k != "" else "")
                     for text, k in zip(texts, keys, strict=True)]
            css = " ".join(filter(None, ["winner" if r.winner else "",
                                         "front" if r.pareto else ""]))
            rows.append({"cells": cells, "css": css, "method": r.method})
        ds["tables"].append({"id": f"{t.dataset}-{t.epsilon:g}", "rows": rows,
                             "epsilon": sort_value(t.epsilon),
                             "title": table_title(t, board.header), "notes": table_notes(t)})
    return list(out.values())


def write_arena_page(page: Page, folder: Path, board: Board, frame: pd.DataFrame,
                     paths: Sequence[Path], context: Mapping[str, Any]) -> Path:
    """``<folder>/index.html`` and ``trials.csv`` of an arena's board (its ``board.*`` and
    plot files already in ``folder``)."""
    datasets = board_cells(board)
    pngs = {p.stem: p for p in paths if p.suffix == ".png"}
    for ds in datasets:
        png = pngs.get(f"pareto-{ds['id']}")
        if png is not None:
            ds["plots"].append({
                "png": png.name, "pdf": png.with_suffix(".pdf").name,
                "caption": "quality against median fit time, one panel per "
                           f"{board.header.budget_unit}; the Pareto front joined",
                "alt": f"{board.header.metric} against median fit seconds (log scale) of "
                       f"each method on {ds['label']}, one panel per "
                       f"{board.header.budget_unit}; the methods on the quality / time "
                       "Pareto front are joined by a line"})
    rank_header, rank_rows = rank_summary(board)
    ranks = [[(row[0], sort_value(m.epsilon)), (row[1], ""),
              (row[2], sort_value(m.mean_rank)), (row[3], sort_value(m.ranked_on))]
             for row, m in zip(rank_rows, board.mean_ranks, strict=True)]
    write_trials(frame, page, folder)
    ranks_png = pngs.get("mean_ranks")
    unit = board.header.budget_unit
    cd_plots = [{"png": png.name, "pdf": png.with_suffix(".pdf").name,
                 "caption": f"Critical-difference diagram, {unit} = {a.epsilon:g} "
                            "(Demšar 2006): methods joined by a red bar do not differ.",
                 "alt": f"Mean ranks of the methods at {unit} {a.epsilon:g} on an axis, "
                        "groups within Nemenyi's critical difference joined"}
                for a in board.across
                if (png := pngs.get(f"critical_difference-{a.epsilon:g}")) is not None]
    return render("arena.html", folder / "index.html", **context, page=page,
                  across_notes=across_notes(board), cd_plots=cd_plots,
                  unit=board.header.budget_unit, header_lines=header_lines(board.header),
                  header=table_header(board.header), datasets=datasets,
                  rank_header=rank_header, rank_rows=ranks,
                  ranks_png=ranks_png.name if ranks_png else "",
                  ranks_pdf=ranks_png.with_suffix(".pdf").name if ranks_png else "")


# --- index, papers, data -----------------------------------------------------------------------


def index_rows(names: Sequence[str], descriptions: Mapping[str, str],
               pages: Sequence[Page]) -> list[dict[str, Any]]:
    """One row per page of each experiment in ``names`` (profiles in page order), and one
    row without a page for an experiment never run."""
    rows = []
    for name in names:
        mine = [p for p in pages if p.experiment == name]
        for p in mine or [None]:
            rows.append({"experiment": name, "description": descriptions.get(name, ""),
                         "page": p})
    return rows


def write_index(out: Path, papers: Sequence[Paper], experiments: Mapping[str, str | None],
                descriptions: Mapping[str, str], pages: Sequence[Page], version: str
                ) -> list[Path]:
    """``index.html`` and ``papers/<paper>.html``: every paper with its experiments (each
    page, or how to run it), then the arenas. ``experiments`` maps each experiment to its
    paper (None for an arena)."""
    ctx = common("", papers, version)
    written = []
    listed = []
    for paper in papers:
        names = [e for e, p in experiments.items() if p == paper.name]
        rows = index_rows(names, descriptions, [p for p in pages if p.kind == EXPERIMENT])
        listed.append({"name": paper.name, "title": paper.title, "rows": rows})
        written.append(render("paper.html", out / "papers" / f"{paper.name}.html",
                              **common("../", papers, version), paper=paper, rows=rows,
                              readme=markdown(paper.readme.read_text(), paper.readme.parent,
                                              out / "papers" / paper.name, f"{paper.name}/")
                              if paper.readme.is_file() else ""))
    arenas = index_rows([e for e, p in experiments.items() if p is None], descriptions,
                        [p for p in pages if p.kind == ARENA])
    written.append(render("index.html", out / "index.html", **ctx, papers=listed,
                          arenas=arenas, pages=pages))
    return written


def write_data(out: Path, pages: Sequence[Page]) -> list[Path]:
    """``data/trials.csv`` and ``data/trials.parquet``: every page's ``trials.csv``, one
    frame with ``experiment`` and ``profile`` columns; a trial on both an experiment's page
    and an ad-hoc page of it is one row (the page as written; ``ad_hoc`` empty)."""
    frames = []
    for p in pages:
        path = out / p.folder / TRIALS_CSV
        if path.is_file() and path.stat().st_size:
            try:
                frames.append(pd.read_csv(path, low_memory=False))
            except pd.errors.EmptyDataError:
                continue
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    frame = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame(
        columns=["experiment", "profile"])
    if "key" in frame and "ad_hoc" in frame:
        frame = frame.sort_values("ad_hoc", na_position="first", kind="stable").drop_duplicates(
            ["key", "experiment", "profile"]).sort_index()
    first = ["experiment", "profile"]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    csv, parquet = data / "trials.csv", data / "trials.parquet"
    frame.to_csv(csv, index=False)
    frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object}).to_parquet(
        parquet, index=False)
    return [csv, parquet]

