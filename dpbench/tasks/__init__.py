"""Tasks: how a method's output is scored. ``TASKS[name]`` is a :class:`Task` (tasks/base.py)."""

from __future__ import annotations

from dpbench.methods.outputs import TASK_KINDS, QueryAnswers
from dpbench.tasks import (
    approximation,
    classification,
    inference,
    posterior,
    query_release,
    regression,
    synthetic_utility,
    tstr,
)
from dpbench.tasks.base import Task

TASKS: dict[str, Task] = {t.name: t for t in (
    Task("regression", TASK_KINDS["regression"], regression.evaluate,
         metrics=("mse", "train_mse"),
         primary="mse", higher_is_better=False),
    Task("classification", TASK_KINDS["classification"], classification.evaluate,
         metrics=("auc", "accuracy"),
         primary="auc", higher_is_better=True, requires=frozenset({"binary_label"}),
         rankable={"auc": True, "accuracy": True}),
    Task("inference", TASK_KINDS["inference"], inference.evaluate,
         metrics=("relmse", "est_error", "coef_*", "se_*", "width_*", "bias_*", "covered_*",
                  "naive_*", "grid_relmse_*", "grid_est_error_*"),
         primary="relmse", higher_is_better=False),
    Task("synthetic_utility", TASK_KINDS["synthetic_utility"], synthetic_utility.evaluate,
         metrics=("relmse", "relmse_y2", "n_synthetic", "relmse_*", "relmse_y2_*"),
         primary="relmse", higher_is_better=False),
    Task("posterior", TASK_KINDS["posterior"], posterior.evaluate,
         metrics=("ks_mean", "ks_max", "rhat_max", "baseline_rhat_max", "ks_theta*",
                  "mean_theta*", "baseline_mean_theta*", "sd_theta*", "baseline_sd_theta*"),
         primary="ks_mean", higher_is_better=False),
    Task("approximation", TASK_KINDS["approximation"], approximation.evaluate,
         metrics=("max_abs_error", "coef_*"), primary="max_abs_error", higher_is_better=False),
    Task("tstr", TASK_KINDS["tstr"], tstr.evaluate,
         metrics=("accuracy", "roc_auc", "risk", "excess_risk", "real_accuracy",
                  "real_roc_auc", "real_risk", "l1_norm", "tv", "n_synthetic", "accuracy_*",
                  "roc_auc_*", "risk_*", "excess_risk_*", "real_*"),
         primary="excess_risk", higher_is_better=False, requires=frozenset({"discrete"}),
         params={"targets": (), "workload": None, "max_cells": None}, check=tstr.check),
    Task("query_release", TASK_KINDS["query_release"], query_release.evaluate,
         metrics=("max_error", "mean_error", "rmse", "n_queries"), primary="max_error",
         higher_is_better=False, requires=frozenset({"discrete"}),
         params={"workload": "all_3way", "number": None, "seed": 0, "max_cells": None},
         check=query_release.check,
         matched={QueryAnswers: ("workload", "number", "seed", "max_cells")},
         rankable={"max_error": False, "mean_error": False, "rmse": False}),
)}

__all__ = ["TASKS", "Task"]
