"""The DD-SSP paper's logistic-regression claims (NOTES.md section 1) as checks over the
stored results of a ``logreg_*`` experiment, written as ``claims.md`` beside its figures.

Methods are found by name: ``objpert``, ``dpsgd_realistic``, and the marginals slice's
DD-SSP / AIM-Synth as any method whose name starts with ``ddssp`` / ``aim_synth``. A
claim whose methods have no results is SKIP. Thresholds (the paper gives no numbers):
"~" = the two means differ by at most the sum of their standard errors; "better" = the
mean AUC is higher; "competitive" = at most 0.01 AUC below; "most" = more than half.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.methods.classification.objpert import MARGIN_EDGES
from dpbench.report.frame import summarise

COMPETITIVE_AUC = 0.01


def _first(methods: list[str], prefix: str, exclude: tuple[str, ...] = ()) -> str | None:
    """The first method (sorted) named ``prefix*`` whose name contains none of ``exclude``."""
    hits = sorted(m for m in methods
                  if m.startswith(prefix) and not any(x in m for x in exclude))
    return hits[0] if hits else None


def _cell(s: pd.DataFrame, dataset: str, method: str | None, eps: float) -> pd.Series | None:
    if method is None:
        return None
    row = s[(s["dataset"] == dataset) & (s["method"] == method) & np.isclose(s["epsilon"], eps)]
    return None if row.empty else row.iloc[0]


def _line(claim: str, dataset: str, eps: float | str, ok: bool | None, numbers: str) -> str:
    verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
    return f"| {verdict} | {dataset} | {eps} | {claim} | {numbers} |"


def write_claims(path: Path, title: str, lines: list[str]) -> list[Path]:
    """A claim-check table (rows from ``_line``) under ``title``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n| verdict | dataset | eps | claim | numbers |\n"
                    "|---|---|---|---|---|\n" + "\n".join(lines) + "\n")
    return [path]


def logreg_claims(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Write out/claims.md with one PASS / FAIL / SKIP line per (claim, dataset, epsilon)."""
    s = summarise(frame, "auc")
    methods = sorted(frame["method"].unique())
    ddssp, synth = _first(methods, "ddssp"), _first(methods, "aim_synth")
    lines = []
    for dataset in sorted(s["dataset"].unique()):
        eps_all = sorted(s.loc[s["dataset"] == dataset, "epsilon"].unique())
        for eps in eps_all:
            d = _cell(s, dataset, ddssp, eps)
            a = _cell(s, dataset, synth, eps)
            o = _cell(s, dataset, "objpert", eps)
            r = _cell(s, dataset, "dpsgd_realistic", eps)
            if d is not None and a is not None:
                gap, tol = abs(d["mean"] - a["mean"]), np.nan_to_num(d["se"] + a["se"])
                lines.append(_line("DD-SSP ~ AIM-Synth", dataset, eps, bool(gap <= tol),
                                   f"AUC {d['mean']:.4f} vs {a['mean']:.4f}, "
                                   f"|diff| {gap:.4f} vs s.e. sum {tol:.4f}"))
            if o is not None:
                low = eps <= 0.1
                claim = "DD-SSP > ObjPert (low eps)" if low else "DD-SSP competitive with ObjPert"
                ok = None if d is None else bool(
                    d["mean"] > o["mean"] if low else d["mean"] >= o["mean"] - COMPETITIVE_AUC)
                lines.append(_line(claim, dataset, eps, ok, "no DD-SSP results" if d is None
                                   else f"AUC {d['mean']:.4f} vs ObjPert {o['mean']:.4f}"))
            if r is not None:
                ok = None if d is None else bool(d["mean"] >= r["mean"] - COMPETITIVE_AUC)
                lines.append(_line("DD-SSP competitive with DP-SGD (realistic)", dataset, eps, ok,
                                   "no DD-SSP results" if d is None
                                   else f"AUC {d['mean']:.4f} vs DP-SGD {r['mean']:.4f}"))
        lines += _margin_lines(frame, dataset)
    return write_claims(out / "claims.md",
                        "DD-SSP logistic-regression claims (NOTES.md section 1)", lines)


def _margin_lines(frame: pd.DataFrame, dataset: str) -> list[str]:
    """Fig. 4 premise: most margins of ObjPert at eps = 1 lie in [-6, 6]."""
    if "info.margin_hist" not in frame:
        return []
    rows = frame[(frame["dataset"] == dataset) & (frame["method"] == "objpert")
                 & np.isclose(frame["epsilon"], 1.0)]
    hists = [np.asarray(json.loads(h)) for h in rows["info.margin_hist"].dropna()]
    if not hists:
        return []
    counts = np.sum(hists, axis=0)
    centers = (MARGIN_EDGES[:-1] + MARGIN_EDGES[1:]) / 2
    share = float(counts[np.abs(centers) <= 6].sum() / counts.sum())
    return [_line("most ObjPert margins in [-6, 6] (Fig. 4)", dataset, 1.0, share > 0.5,
                  f"share {share:.3f} of {int(counts.sum())} training rows")]
