"""The excess-risk paper's Real column over many random 80/20 splits (evidence, not a test).

Table 2's Real column is scikit-learn's default logistic regression on raw integer codes,
trained on a random 80% of the rows and scored on the other 20%. The default profile
of ``exrisk_table2`` reads it from 2 trials x 2 re-splits, whose standard error rests on
two values; this script gives the mean and s.e. over ``--splits`` seeded splits per
dataset, to tell a real difference from the paper's printed value from a noisy s.e.

Usage: python scripts/check_real_column.py [--datasets mpdp_churn mpdp_heart] [--splits 20]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from sklearn.metrics import log_loss, roc_auc_score

from dpbench.data.discrete import holdout_rows
from dpbench.estimators import default_logistic
from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry, task_view

DATASETS = ["mpdp_adult", "mpdp_churn", "mpdp_compas", "mpdp_dutch", "mpdp_heart", "mpdp_law"]


def real_scores(name: str, splits: int) -> dict[str, tuple[float, float]]:
    """(mean, s.e.) of accuracy, ROC AUC and risk over ``splits`` random 80/20 splits."""
    entry = task_view(name, load_entry("dataset", name), "tstr")
    split = import_object(entry["_target_"])(rng=np.random.default_rng(0), **entry["params"])
    X, y = split.train.X, split.train.y
    n_test = holdout_rows(len(y), 0.2)
    out: dict[str, list[float]] = {"accuracy": [], "roc_auc": [], "risk": []}
    for s in range(splits):
        perm = np.random.default_rng([s, 7]).permutation(len(y))
        te, tr = perm[:n_test], perm[n_test:]
        model = default_logistic(X[tr], y[tr])
        p = model.predict_proba(X[te])[:, 1]
        out["accuracy"].append(float(np.mean(model.predict(X[te]) == y[te])))
        out["roc_auc"].append(float(roc_auc_score(y[te], p)))
        out["risk"].append(float(log_loss(y[te], p, labels=model.classes_)))
    return {k: (float(np.mean(v)), float(np.std(v, ddof=1) / math.sqrt(len(v))))
            for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=DATASETS)
    ap.add_argument("--splits", type=int, default=20)
    args = ap.parse_args()
    if args.splits < 2:
        ap.error("--splits must be >= 2")
    print(f"Real column over {args.splits} random 80/20 splits (mean ± s.e.)")
    for name in args.datasets:
        cells = ", ".join(f"{k} {m:.3f} ± {se:.3f}"
                          for k, (m, se) in real_scores(name, args.splits).items())
        print(f"{name}: {cells}")


if __name__ == "__main__":
    main()
