"""From stored records to one tidy results frame, and the one mean +- s.e. (pandas).

Every figure kind and claim kind reads this frame: one row per ok trial with the spec's
columns (dataset, method, epsilon, trial, labels, swept parameters as ``dataset.<p>`` /
``method.<p>``), the task's metrics, ``info.<k>`` and ``privacy.<k>``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import OK, ResultStore

KEYS = ["dataset", "method", "epsilon"]


def results_frame(specs: Sequence[TrialSpec], store: ResultStore,
                  experiment: str = "") -> pd.DataFrame:
    """One row per ok trial of the grid: spec columns, metrics, info.*, privacy.*, timings."""
    rows = []
    for s in specs:
        rec = store.get(s.key)
        if rec is None or rec.get("status") != OK:
            continue
        row = {"experiment": experiment, "key": s.key, "dataset": s.dataset,
               "dataset_label": s.meta.get("dataset_label", s.dataset), "method": s.method,
               "method_label": s.meta.get("method_label", s.method), "epsilon": s.epsilon,
               "budget_unit": s.budget_unit, "delta": rec["privacy"]["target_delta"],
               "trial": s.trial, "n_train": rec.get("n_train"), "fit_s": rec["timing"]["fit_s"],
               "wall_s": rec.get("wall_s"), "peak_rss_mb": rec.get("peak_rss_mb"),
               "peak_mem_mb": rec.get("peak_mem_mb")}
        row.update({f"dataset.{k}": v for k, v in s.meta.get("dataset_sweep", {}).items()})
        row.update({f"method.{k}": v for k, v in s.meta.get("method_sweep", {}).items()})
        row.update(rec.get("metrics", {}))
        row.update({f"info.{k}": v for k, v in (rec.get("info") or {}).items()
                    if isinstance(v, int | float | str | bool) or v is None})
        row.update({f"privacy.{k}": v for k, v in rec["privacy"].items() if k != "charges"})
        rows.append(row)
    return pd.DataFrame(rows)


def summarise(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean, standard error (sd / sqrt(n), ddof=1) and n per (dataset, method, epsilon)."""
    if frame.empty or metric not in frame:
        return pd.DataFrame(columns=[*KEYS, "dataset_label", "method_label", "mean", "se", "n"])
    g = frame.groupby([*KEYS, "dataset_label", "method_label"], sort=True)[metric]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n"])
    out.loc[out["n"] < 2, "se"] = np.nan
    return out.drop(columns="sd")


def mean_se(values: pd.Series | np.ndarray) -> tuple[float, float, int]:
    """Mean, standard error (sd / sqrt(n), ddof=1) and n of the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, 0
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se, int(v.size)
