"""The one renderer: figures as PNG + PDF, tables as Markdown + LaTeX, and the one cell format.

Output is deterministic (fixed metadata), so the same results give byte-identical files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

Row = Sequence[str]


def save(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf deterministically."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_suffix(".png"), stem.with_suffix(".pdf")
    fig.savefig(png, dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None, "Producer": None,
                                                     "Creator": None})
    plt.close(fig)
    return [png, pdf]


def _cell(mean: float, se: float, digits: int) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.{digits}g}" if math.isnan(se) else f"{mean:.{digits}g} ± {se:.2g}"


def fixed_cell(mean: float, se: float, digits: int = 3) -> str:
    """``mean ± se`` with ``digits`` fixed decimals (``mean`` alone without a finite se)."""
    if not math.isfinite(mean):
        return "—"
    return f"{mean:.{digits}f}" if not math.isfinite(se) else f"{mean:.{digits}f} ± {se:.{digits}f}"


def wide_table(summary: pd.DataFrame, digits: int = 4) -> dict[str, pd.DataFrame]:
    """Per dataset label: a frame with one row per method label and one column per epsilon."""
    out = {}
    for dlabel, part in summary.groupby("dataset_label", sort=True):
        cells = part.assign(cell=[_cell(m, s, digits) for m, s in zip(part["mean"], part["se"],
                                                                        strict=True)])
        wide = cells.pivot(index="method_label", columns="epsilon", values="cell")
        wide.columns = [f"{c:g}" for c in wide.columns]
        out[str(dlabel)] = wide.fillna("—")
    return out


def to_markdown(tables: dict[str, pd.DataFrame], title: str, unit: str = "epsilon",
                note: str | None = None) -> str:
    lines = [f"## {title}", ""] + ([f"> {note}", ""] if note else [])
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
    parts = [f"% {title}"] + ([f"% {note}"] if note else [])
    for dlabel, wide in tables.items():
        cols = "l" + "r" * len(wide.columns)
        parts += [r"\begin{table}[t]", r"\centering", rf"\caption{{{_tex(title)}: {_tex(dlabel)}}}",
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
    md, tex = out.with_suffix(".md"), out.with_suffix(".tex")
    md.write_text(to_markdown(tables, title, unit, note))
    tex.write_text(to_latex(tables, title, unit, note))
    return [md, tex]


def write_table(stem: Path, title: str, header: Row, rows: Sequence[Row],
                notes: Sequence[str] = ()) -> list[Path]:
    """``stem``.md and ``stem``.tex with one header and the rows."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    md = [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += [""] + [f"- {n}" for n in notes]
    tex = [f"% {title}", r"\begin{table}[t]", r"\centering", rf"\caption{{{_tex(title)}}}",
           rf"\begin{{tabular}}{{l{'r' * (len(header) - 1)}}}", r"\toprule",
           " & ".join(_tex(h) for h in header) + r" \\", r"\midrule"]
    tex += [" & ".join(_tex(c) for c in r) + r" \\" for r in rows]
    tex += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    tex += [f"% {n}" for n in notes]
    paths = [stem.with_suffix(".md"), stem.with_suffix(".tex")]
    paths[0].write_text("\n".join(md) + "\n")
    paths[1].write_text("\n".join(tex) + "\n")
    return paths
