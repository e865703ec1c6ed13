"""The one renderer: figures as PNG + PDF, tables as Markdown + LaTeX, and the one cell format.

Output is deterministic (fixed metadata), so the same results give byte-identical files.

Within :func:`incomplete_cells` (the report wraps every figure in it when the grid has cells
with fewer trials than it asks), every figure written here says so above its panels and
every table in its title and notes, naming each such cell. Within :func:`provenance` (the
report wraps every experiment in it), every figure, table and claims file states where its
numbers come from: the profile, the trials per cell and the profile's caveat.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib
import pandas as pd

from dpbench import lazy
from dpbench.report.frame import short_mark

if TYPE_CHECKING:
    from matplotlib.transforms import Bbox

matplotlib.use("Agg")
# pyplot (~0.3 s): read when a figure is saved, not by a command that writes tables only
plt = lazy.module("matplotlib.pyplot")

Row = Sequence[str]
#: cells shown in a figure's incomplete-grid caption (the tables list every one)
LISTED_IN_FIGURE = 8
INCOMPLETE_TEX = "incomplete: some cells hold fewer trials than the grid asks, see the notes"
_INCOMPLETE: ContextVar[tuple[str, ...]] = ContextVar("dpbench_incomplete_cells", default=())
_PROVENANCE: ContextVar[tuple[str | None, tuple[str, ...]]] = ContextVar(
    "dpbench_provenance", default=(None, ()))


@contextmanager
def provenance(text: str | None, alerts: Sequence[str] = ()) -> Iterator[None]:
    """Within the block, every figure (above its panels), table (a note) and claims file
    (under its title) written carries ``text``, e.g. ``smoke profile, 2 trials per cell``,
    and ``alerts`` (e.g. a method whose accounting under-states its spend) before it; a
    figure draws the alerts in red."""
    token = _PROVENANCE.set((text, tuple(alerts)))
    try:
        yield
    finally:
        _PROVENANCE.reset(token)


def provenance_line() -> str | None:
    """The alerts and text of the enclosing :func:`provenance` block as one line, if any."""
    text, alerts = _PROVENANCE.get()
    return "; ".join([*alerts, *([text] if text else [])]) or None


@contextmanager
def incomplete_cells(cells: Sequence[str]) -> Iterator[None]:
    """Within the block, every figure and table written names ``cells`` (one text per cell
    with fewer trials than the grid asks, e.g. ``<dataset> / <method> / epsilon=1: 1 of
    2 trials``) as incomplete; no cells, no mark."""
    token = _INCOMPLETE.set(tuple(cells))
    try:
        yield
    finally:
        _INCOMPLETE.reset(token)


def incomplete_caption(limit: int | None = None) -> str | None:
    """The incomplete-grid sentence for the cells of :func:`incomplete_cells` (at most
    ``limit`` listed), or None when every cell is complete."""
    cells = _INCOMPLETE.get()
    if not cells:
        return None
    shown = cells if limit is None else cells[:limit]
    more = f"; and {len(cells) - len(shown)} more (listed in the table)" \
        if len(shown) < len(cells) else ""
    return (f"INCOMPLETE: {len(cells)} cell(s) hold fewer trials than the grid asks; their "
            f"numbers average the trials stored: {'; '.join(shown)}{more}")


#: the PNG's resolution (the PDF is vector)
PNG_DPI = 150


def tight_bbox(fig: plt.Figure, dpi: float) -> Bbox:
    """The figure's tight bounding box (inches, with savefig's padding) as
    ``bbox_inches="tight"`` finds it for a PNG at ``dpi``, found once for both files:
    each ``"tight"`` save draws the figure once more to measure it, a third of a save's
    time. The figure's layout engine (``tight_layout`` leaves a placeholder, which also
    asks for that draw) is cleared: the layout is done."""
    keep = fig.dpi
    fig.set_dpi(dpi)
    try:
        fig.draw_without_rendering()
        bbox = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
    finally:
        fig.set_dpi(keep)
    fig.set_layout_engine(None)
    return bbox


def with_ext(stem: Path, ext: str) -> Path:
    """``stem`` with ``ext`` appended: unlike ``Path.with_suffix``, a stem holding a dot (an
    epsilon, ``critical_difference-0.1``) keeps it, so eps 0.1 and 0.5 are two files."""
    return stem.with_name(stem.name + ext)


def save(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf deterministically; above the panels, the
    :func:`provenance` line and (inside :func:`incomplete_cells`) the incomplete-grid
    caption over it."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    width = max(40, int(fig.get_figwidth() * 17))
    y = 1.0
    origin, alerts = _PROVENANCE.get()
    for text, color, size in ((origin, "dimgray", 7), ("; ".join(alerts), "darkred", 8),
                              (incomplete_caption(LISTED_IN_FIGURE), "darkred", 8)):
        if text:
            wrapped = textwrap.fill(text, width)
            fig.text(0.01, y, wrapped, color=color, fontsize=size, ha="left", va="bottom")
            y += (wrapped.count("\n") + 1) * size * 1.3 / 72 / fig.get_figheight()
    png, pdf = with_ext(stem, ".png"), with_ext(stem, ".pdf")
    bbox = tight_bbox(fig, PNG_DPI)
    fig.savefig(png, dpi=PNG_DPI, bbox_inches=bbox, metadata={"Software": None})
    fig.savefig(pdf, bbox_inches=bbox, metadata={"CreationDate": None, "Producer": None,
                                                  "Creator": None})
    plt.close(fig)
    return [png, pdf]


def sig_cell(mean: float, se: float, digits: int, mark: str = "") -> str:
    """``mean ± se`` with ``digits`` significant digits (se: 2), then ``mark``; ``—`` for
    no mean."""
    if math.isnan(mean):
        return "—" + mark
    return (f"{mean:.{digits}g}" if math.isnan(se) else f"{mean:.{digits}g} ± {se:.2g}") + mark


def fixed_cell(mean: float, se: float, digits: int = 3) -> str:
    """``mean ± se`` with ``digits`` fixed decimals (``mean`` alone without a finite se)."""
    if not math.isfinite(mean):
        return "—"
    return f"{mean:.{digits}f}" if not math.isfinite(se) else f"{mean:.{digits}f} ± {se:.{digits}f}"


def wide_table(summary: pd.DataFrame, digits: int = 4) -> dict[str, pd.DataFrame]:
    """Per dataset label: a frame with one row per method label and one column per epsilon;
    a cell with fewer trials than the grid asks ends in `` [k/n trials]``."""
    out = {}
    for dlabel, part in summary.groupby("dataset_label", sort=True):
        marks = [short_mark(int(t), a) for t, a in zip(part["trials"], part["asked"],
                                                       strict=True)] \
            if "asked" in part else [""] * len(part)
        cells = part.assign(cell=[sig_cell(m, s, digits, k) for m, s, k in zip(
            part["mean"], part["se"], marks, strict=True)])
        wide = cells.pivot(index="method_label", columns="epsilon", values="cell")
        wide.columns = [f"{c:g}" for c in wide.columns]
        out[str(dlabel)] = wide.fillna("—")
    return out


def to_markdown(tables: dict[str, pd.DataFrame], title: str, unit: str = "epsilon",
                note: str | None = None) -> str:
    warning, origin = incomplete_caption(), provenance_line()
    lines = [f"## {title}", ""] + ([f"> **{warning}**", ""] if warning else []) \
        + ([f"> {note}", ""] if note else []) + ([f"> {origin}", ""] if origin else [])
    for dlabel, wide in tables.items():
        header = ["method", *[f"{unit}={c}" for c in wide.columns]]
        lines += [f"### {dlabel}", "", "| " + " | ".join(header) + " |",
                  "|" + "---|" * len(header)]
        for method, row in wide.iterrows():
            lines.append("| " + " | ".join([str(method), *row.tolist()]) + " |")
        lines.append("")
    return "\n".join(lines)


def _tex(s: str) -> str:
    return (str(s).replace("\\", r"\textbackslash{}").replace("&", r"\&").replace("%", r"\%")
            .replace("_", r"\_").replace("#", r"\#").replace("±", r"$\pm$")
            .replace("—", "--").replace("θ", r"$\theta$")
            .replace("ε", r"$\varepsilon$").replace("^", r"\^{}"))


def to_latex(tables: dict[str, pd.DataFrame], title: str, unit: str = "epsilon",
             note: str | None = None) -> str:
    sym = {"epsilon": r"\varepsilon", "mu": r"\mu", "rho": r"\rho"}.get(unit, unit)
    warning, origin = incomplete_caption(), provenance_line()
    parts = [f"% {title}"] + [f"% {t}" for t in (warning, note, origin) if t]
    suffix = f" ({INCOMPLETE_TEX})" if warning else ""
    for dlabel, wide in tables.items():
        cols = "l" + "r" * len(wide.columns)
        parts += [r"\begin{table}[t]", r"\centering",
                  rf"\caption{{{_tex(f'{title}: {dlabel}{suffix}')}}}",
                  rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
                  " & ".join(["method", *[f"${sym}={c}$" for c in wide.columns]]) + r" \\",
                  r"\midrule"]
        for method, row in wide.iterrows():
            parts.append(" & ".join(_tex(str(x)) for x in [method, *row.tolist()]) + r" \\")
        parts += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(parts)


def write_tables(summary: pd.DataFrame, out: Path, title: str, unit: str = "epsilon",
                 note: str | None = None) -> list[Path]:
    """Write ``out``.md and ``out``.tex (``note``: the setting choices behind the numbers)."""
    tables = wide_table(summary)
    out.parent.mkdir(parents=True, exist_ok=True)
    md, tex = with_ext(out, ".md"), with_ext(out, ".tex")
    md.write_text(to_markdown(tables, title, unit, note))
    tex.write_text(to_latex(tables, title, unit, note))
    return [md, tex]


def markdown_table(title: str, header: Row, rows: Sequence[Row],
                   notes: Sequence[str] = ()) -> list[str]:
    """The lines of one Markdown table: a ``##`` title, the table, then the notes as a list."""
    md = [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    return md + [""] + [f"- {n}" for n in notes]


def latex_table(title: str, header: Row, rows: Sequence[Row], notes: Sequence[str] = (),
                caption: str | None = None) -> list[str]:
    """The lines of one LaTeX table (booktabs), captioned ``caption`` (default ``title``),
    the notes as comments after it."""
    tex = [f"% {title}", r"\begin{table}[t]", r"\centering",
           rf"\caption{{{_tex(caption or title)}}}",
           rf"\begin{{tabular}}{{l{'r' * (len(header) - 1)}}}", r"\toprule",
           " & ".join(_tex(h) for h in header) + r" \\", r"\midrule"]
    tex += [" & ".join(_tex(c) for c in r) + r" \\" for r in rows]
    tex += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return tex + [f"% {n}" for n in notes]


def write_table(stem: Path, title: str, header: Row, rows: Sequence[Row],
                notes: Sequence[str] = ()) -> list[Path]:
    """``stem``.md and ``stem``.tex with one header and the rows (inside
    :func:`incomplete_cells`: the incomplete cells as the first note, and said in the
    LaTeX caption)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    warning, origin = incomplete_caption(), provenance_line()
    notes = [*([warning] if warning else []), *notes, *([origin] if origin else [])]
    caption = f"{title} ({INCOMPLETE_TEX})" if warning else title
    paths = [with_ext(stem, ".md"), with_ext(stem, ".tex")]
    paths[0].write_text("\n".join(markdown_table(title, header, rows, notes)) + "\n")
    paths[1].write_text("\n".join(latex_table(title, header, rows, notes, caption)) + "\n")
    return paths
