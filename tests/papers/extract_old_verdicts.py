"""Extract the verdict rows of the pre-engine claim checks into golden_verdicts.json.

The old per-paper checks wrote three formats into each experiment's figure folder:
``claims.md`` / ``claims_ablation.md`` (a table | verdict | dataset | eps | claim | ... |),
``check_ks_nonincreasing.md`` (bullets "- <dataset>/<method> <column>: PASS (...)") and the
BinAgg Table 1 notes ("<check>: yes|NO" in ``binagg_table1_<method>.md``). This script
reads them from the smoke runs of the old code (``results/figures/<experiment>-smoke/``
under each folder given) and maps each old claim text to the id of the claim in
``papers/<paper>/claims.yaml`` that replaces it. Used once, before the old code was deleted:

    python tests/papers/extract_old_verdicts.py BASELINE_DIR... > tests/papers/golden_verdicts.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

LINEAR = {
    "DD-SSP ~ AIM-Synth": "lin_ddssp_similar_aim_synth",
    "DD-SSP competitive with DP-SGD (realistic)": "lin_ddssp_competitive_dpsgd",
    "DD-SSP MSE < AdaSSP MSE": "lin_ddssp_better_adassp",
    "AIM-Synth MSE < AdaSSP MSE": "lin_aim_synth_better_adassp",
    "DD-SSP MSE similar to AdaSSP MSE": "lin_ddssp_similar_adassp_acs",
    "AIM-Synth MSE similar to AdaSSP MSE": "lin_aim_synth_similar_adassp_acs",
}
LOGISTIC = {
    "DD-SSP ~ AIM-Synth": "log_ddssp_similar_aim_synth",
    "DD-SSP > ObjPert (low eps)": "log_ddssp_better_objpert_low_eps",
    "DD-SSP competitive with ObjPert": "log_ddssp_competitive_objpert",
    "DD-SSP competitive with DP-SGD (realistic)": "log_ddssp_competitive_dpsgd",
    "most ObjPert margins in [-6, 6] (Fig. 4)": "objpert_margins_within_6",
}
ABLATION = {
    "DD-SSP (MST) competitive with DD-SSP (AIM)": "mst_competitive_aim_low_eps",
    "DD-SSP (AIM) better than DD-SSP (MST)": "aim_better_mst_high_eps",
    "DD-SSP (Private-PGM) competitive with DD-SSP (mixture)": "pgm_competitive_mixture_low_eps",
    "DD-SSP (Private-PGM) better than DD-SSP (mixture)": "pgm_better_mixture_high_eps",
}
KS = {"bayesglm_logistic_ks": "ks_nonincreasing_logistic",
      "bayesglm_poisson_ks": "ks_nonincreasing_poisson"}
TABLE1 = {
    "coverage in [0.93, 0.97] for every coefficient": "ci_coverage_nominal",
    "naive coverage clearly below (>= 0.10 lower)": "naive_ci_undercovers",
    "empirical SD within 10% of mean theoretical SD": "empirical_sd_matches_theory",
}
# binagg_ci has one dataset and one epsilon (conf/experiment/binagg_ci.yaml); the old
# Table 1 notes name neither.
TABLE1_DATASET, TABLE1_EPS = "binagg_sim_table1", 1.0


def _row(claim: str, dataset: str, eps: float | None, status: str, old: str,
         subject: str = "") -> dict:
    return {"claim": claim, "dataset": dataset, "eps": eps, "subject": subject,
            "status": status, "old_text": old}


def _table(path: Path, ids: dict[str, str]) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 5 and cells[1] in ("PASS", "FAIL", "SKIP"):
            rows.append(_row(ids[cells[4]], cells[2], float(cells[3]), cells[1], cells[4]))
    return rows


def extract(folder: Path) -> list[dict]:
    """The old verdict rows of one experiment's figure folder."""
    experiment = folder.name.removesuffix("-smoke")
    rows = []
    if (folder / "claims.md").exists():
        text = (folder / "claims.md").read_text()
        rows += _table(folder / "claims.md", LINEAR if "linear-regression" in text else LOGISTIC)
    if (folder / "claims_ablation.md").exists():
        rows += _table(folder / "claims_ablation.md", ABLATION)
    if (folder / "check_ks_nonincreasing.md").exists():
        for line in (folder / "check_ks_nonincreasing.md").read_text().splitlines():
            m = re.match(r"- (\S+)/(\S+) (\S+): (PASS|FAIL)", line)
            if m:
                rows.append(_row(KS[experiment], m[1], None, m[4], "KS non-increasing",
                                 f"{m[2]} {m[3]}"))
    for path in sorted(folder.glob("binagg_table1_*.md")):
        method = path.stem.removeprefix("binagg_table1_")
        for line in path.read_text().splitlines():
            for text, cid in TABLE1.items():
                m = re.search(re.escape(text) + r": (yes|NO)", line)
                if m:
                    rows.append(_row(cid, TABLE1_DATASET, TABLE1_EPS,
                                     "PASS" if m[1] == "yes" else "FAIL", text, method))
    return sorted(rows, key=lambda r: (r["claim"], r["dataset"], r["eps"] or 0, r["subject"]))


def main(bases: list[str]) -> dict[str, list[dict]]:
    out = {}
    for base in bases:
        for folder in sorted(Path(base).glob("*/results/figures/*-smoke")):
            out[folder.name.removesuffix("-smoke")] = extract(folder)
    return dict(sorted(out.items()))


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
