"""The DD-SSP paper's linear-regression claims (NOTES.md section 1) as checks over stored
results of a ``linreg_*`` experiment, written as ``claims.md`` beside its figures.

Claims: "DD-SSP ~ AIM-Synth" (means differ by at most the sum of their standard
errors, the paper's error bars), "DD-SSP and AIM-Synth clearly better than AdaSSP"
(lower mean test MSE; NOTES: on every linear dataset except ACSIncome, where they are
similar) and "DD-SSP competitive with DP-SGD under advanced composition" (Sec. 5: mean
MSE at most DP-SGD (realistic)'s plus the sum of the two standard errors). DD-SSP /
AIM-Synth are found as the first method named ``ddssp*`` / ``aim_synth*``, DP-SGD as
``dpsgd*realistic*``; a claim whose methods have no results is SKIP.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.report.ddssp_checks import _cell, _first, _line, write_claims
from dpbench.report.frame import summarise

# Sec. 5: better than AdaSSP "on all datasets except ACSIncome, where performance is
# similar"; "similar" = MSE ratio within [0.8, 1.25] or means within the s.e. sum. The
# band is ours (the paper gives no number), fixed before the ACSIncome run.
SIMILAR_TO_ADASSP = ("acs_income",)
SIMILAR_RATIO = (0.8, 1.25)


def linreg_claims(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Write out/claims.md with one PASS / FAIL / SKIP line per (claim, dataset, epsilon)."""
    s = summarise(frame, "mse")
    methods = sorted(frame["method"].unique()) if not frame.empty else []
    ddssp, synth = _first(methods, "ddssp"), _first(methods, "aim_synth")
    sgd = next((m for m in methods if m.startswith("dpsgd") and "realistic" in m), None)
    lines = []
    for dataset in sorted(s["dataset"].unique()):
        for eps in sorted(s.loc[s["dataset"] == dataset, "epsilon"].unique()):
            d, a = _cell(s, dataset, ddssp, eps), _cell(s, dataset, synth, eps)
            ada = _cell(s, dataset, "adassp", eps)
            if d is not None and a is not None:
                gap, tol = abs(d["mean"] - a["mean"]), float(np.nan_to_num(d["se"] + a["se"]))
                lines.append(_line("DD-SSP ~ AIM-Synth", dataset, eps, bool(gap <= tol),
                                   f"MSE {d['mean']:.4g} vs {a['mean']:.4g}, "
                                   f"|diff| {gap:.3g} vs s.e. sum {tol:.3g}"))
            r = _cell(s, dataset, sgd, eps)
            if r is not None:
                tol = float(np.nan_to_num(r["se"] + (0 if d is None else d["se"])))
                ok = None if d is None else bool(d["mean"] <= r["mean"] + tol)
                lines.append(_line("DD-SSP competitive with DP-SGD (realistic)", dataset, eps, ok,
                                   "no DD-SSP results" if d is None else
                                   f"MSE {d['mean']:.4g} vs DP-SGD {r['mean']:.4g}, "
                                   f"s.e. sum {tol:.3g}"))
            if ada is None:
                continue
            similar = dataset.startswith(SIMILAR_TO_ADASSP)
            for name, row in (("DD-SSP", d), ("AIM-Synth", a)):
                if row is None:
                    ok = None
                elif similar:
                    ok = bool(SIMILAR_RATIO[0] <= row["mean"] / ada["mean"] <= SIMILAR_RATIO[1]
                              or abs(row["mean"] - ada["mean"]) <= row["se"] + ada["se"])
                else:
                    ok = bool(row["mean"] < ada["mean"])
                claim = f"{name} MSE {'similar to' if similar else '<'} AdaSSP MSE"
                lines.append(_line(claim, dataset, eps, ok,
                                   f"no {name} results" if row is None else
                                   f"MSE {row['mean']:.4g} vs AdaSSP {ada['mean']:.4g}"))
    return write_claims(out / "claims.md",
                        "DD-SSP linear-regression claims (NOTES.md section 1)", lines)
