"""papers/ddssp/claims.yaml on hand-made result frames: the verdicts of the old
linear / logistic / ablation checks (same frames, same expected rows)."""

from __future__ import annotations

import pandas as pd

from dpbench.report.claims.engine import build_claims, check, load_claims, summary
from dpbench.roots import paper_dir

CLAIMS = load_claims(paper_dir("ddssp") / "claims.yaml")


def verdicts(frame: pd.DataFrame, experiment: str) -> set[tuple]:
    """(status, dataset, eps, claim id) of every row the experiment's claims give."""
    rows = check(CLAIMS.for_experiment(experiment), frame, better=CLAIMS.better)
    return {(v.status, v.dataset, v.eps, v.claim) for v in rows}


def _frame(rows, metric="mse", dataset="adult"):
    out = []
    for method, eps, values in rows:
        for t, v in enumerate(values):
            out.append({"dataset": dataset, "dataset_label": dataset, "method": method,
                        "method_label": method, "epsilon": eps, "trial": t, metric: v})
    return pd.DataFrame(out)


def test_linreg_claims_pass_fail_and_skip():
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("aim_synth", 0.1, [0.11, 0.13]),   # ~ : |diff| .01
        ("adassp", 0.1, [0.50, 0.52]),
        ("ddssp", 1.0, [0.10, 0.10]), ("aim_synth", 1.0, [0.30, 0.30]),   # not ~ (se 0)
        ("adassp", 1.0, [0.20, 0.20]),                                     # AIM-Synth worse
    ])
    got = verdicts(frame, "linreg_adult")
    assert ("PASS", "adult", 0.1, "lin_ddssp_similar_aim_synth") in got
    assert ("FAIL", "adult", 1.0, "lin_ddssp_similar_aim_synth") in got
    assert ("PASS", "adult", 1.0, "lin_ddssp_better_adassp") in got
    assert ("FAIL", "adult", 1.0, "lin_aim_synth_better_adassp") in got
    only_ada = verdicts(_frame([("adassp", 0.1, [0.5, 0.6])]), "linreg_adult")
    assert ("SKIP", "adult", 0.1, "lin_ddssp_better_adassp") in only_ada


def test_ablation_claims_by_epsilon_range():
    """Fig. 5: MST competitive at low eps (within the s.e. sum), AIM better at high eps;
    Fig. 6: Private-PGM competitive at low eps and better at high eps; AUC: higher is better."""
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("ddssp_mst", 0.1, [0.115, 0.135]),  # .015 worse, se .02
        ("ddssp", 0.5, [0.10, 0.10]), ("ddssp_mst", 0.5, [0.90, 0.90]),   # mid eps: no claim
        ("ddssp", 1.0, [0.20, 0.20]), ("ddssp_mst", 1.0, [0.10, 0.10]),   # MST better: FAIL
    ])
    got = {r for r in verdicts(frame, "ablation_mst") if r[3].startswith(("mst", "aim"))}
    assert got == {("PASS", "adult", 0.1, "mst_competitive_aim_low_eps"),
                   ("FAIL", "adult", 1.0, "aim_better_mst_high_eps")}
    auc = _frame([("ddssp_logistic", 1.0, [0.80, 0.80]),
                  ("ddssp_mixture_logistic", 1.0, [0.70, 0.70])], metric="auc")
    assert ("PASS", "adult", 1.0, "pgm_better_mixture_high_eps") in verdicts(
        auc, "ablation_mixture_logreg")
    missing = verdicts(_frame([("ddssp", 0.05, [0.1, 0.1])]), "ablation_mixture")
    assert ("SKIP", "adult", 0.05, "pgm_competitive_mixture_low_eps") in missing


def test_linreg_claim_against_realistic_dpsgd():
    frame = _frame([
        ("ddssp", 0.1, [0.10, 0.12]), ("dpsgd_lin_realistic", 0.1, [0.105, 0.105]),  # se .01
        ("ddssp", 1.0, [0.30, 0.30]), ("dpsgd_lin_realistic", 1.0, [0.10, 0.10]),
    ])
    got = verdicts(frame, "linreg_adult")
    assert ("PASS", "adult", 0.1, "lin_ddssp_competitive_dpsgd") in got
    assert ("FAIL", "adult", 1.0, "lin_ddssp_competitive_dpsgd") in got


def test_figures_prints_claim_counts_and_failures(tmp_path):
    frame = _frame([
        ("ddssp", 1.0, [0.10, 0.10]), ("aim_synth", 1.0, [0.30, 0.30]),
        ("adassp", 1.0, [0.20, 0.20]),
    ])
    md, js = build_claims(frame, {"name": "linreg_adult", "paper": "ddssp"}, tmp_path)
    assert (md.name, js.name) == ("claims.md", "claims.json")
    text = summary(md).splitlines()
    assert text[0] == f"{md}: 1 PASS, 2 FAIL, 0 SKIP"
    text_of = {c.id: c.text for c in CLAIMS.claims}
    assert [ln.split("|")[4].strip() for ln in text[1:]] == [
        text_of["lin_ddssp_similar_aim_synth"], text_of["lin_aim_synth_better_adassp"]]


def test_acs_income_claim_is_similar_not_better():
    frame = _frame([("ddssp", 1.0, [0.110, 0.110]), ("adassp", 1.0, [0.100, 0.100]),
                    ("ddssp", 2.0, [0.050, 0.050]), ("adassp", 2.0, [0.100, 0.100])],
                   dataset="acs_income_lin")
    got = verdicts(frame, "linreg_acs_income_lin")
    assert ("PASS", "acs_income_lin", 1.0, "lin_ddssp_similar_adassp_acs") in got
    assert ("FAIL", "acs_income_lin", 2.0, "lin_ddssp_similar_adassp_acs") in got
    assert not any(r[3] == "lin_ddssp_better_adassp" for r in got)


def _logreg_frame(with_ddssp: bool) -> pd.DataFrame:
    aucs = {"objpert": {0.05: 0.70, 1.0: 0.88}, "dpsgd_realistic": {0.05: 0.5, 1.0: 0.86}}
    if with_ddssp:
        aucs |= {"ddssp_logistic": {0.05: 0.80, 1.0: 0.865},
                 "aim_synth_logistic": {0.05: 0.801, 1.0: 0.80}}
    rows = [(m, eps, [mean - 0.002, mean, mean + 0.002])
            for m, by_eps in aucs.items() for eps, mean in by_eps.items()]
    return _frame(rows, metric="auc", dataset="toy")


def test_logreg_claims_pass_fail_and_skip():
    got = verdicts(_logreg_frame(True), "logreg_adult")
    # eps 0.05: DD-SSP 0.80 vs AIM-Synth 0.801 (s.e. sum 0.0023) -> PASS; > ObjPert 0.70 -> PASS
    assert ("PASS", "toy", 0.05, "log_ddssp_similar_aim_synth") in got
    assert ("PASS", "toy", 0.05, "log_ddssp_better_objpert_low_eps") in got
    # eps 1: 0.865 vs AIM-Synth 0.80 -> FAIL; vs ObjPert 0.88 is 0.015 below -> FAIL;
    # vs DP-SGD realistic 0.86 -> PASS
    assert ("FAIL", "toy", 1.0, "log_ddssp_similar_aim_synth") in got
    assert ("FAIL", "toy", 1.0, "log_ddssp_competitive_objpert") in got
    assert ("PASS", "toy", 1.0, "log_ddssp_competitive_dpsgd") in got
    skipped = verdicts(_logreg_frame(False), "logreg_adult")
    assert {r[0] for r in skipped} == {"SKIP"}
    assert ("SKIP", "toy", 0.05, "log_ddssp_better_objpert_low_eps") in skipped
