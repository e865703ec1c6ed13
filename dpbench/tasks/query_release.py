"""Query release: the error of released answers over every query of a marginal workload.

The method's output is a :class:`QueryAnswers` vector in the flat layout of
``methods/query_release/queries.py`` for the workload the task's parameters name
(``workload``, ``number``, ``seed``, ``max_cells``: see ``resolve_workload``); its
``workload`` must be that spec's ``workload_key``. The truth is the answers on the rows
the method was given (``split.train``, the private rows). Metrics over every query:
``max_error`` (primary), ``mean_error`` and ``rmse`` of |q(data) - a_q|, and ``n_queries``.

The rounds an iterative method ran and why it stopped are facts of the fit, not of the
score: the methods record them in their info (``rounds_run``, ``stop_reason``), which every
trial record and the results frame (``info.rounds_run``, ``info.stop_reason``) keep. Scoring
a synthetic table on the same workload is still to come: a task consumes one output kind,
and only answer vectors are scored here.
"""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split
from dpbench.methods.outputs import QueryAnswers
from dpbench.methods.query_release.queries import QuerySet, resolve_workload, workload_key


def _queries(split: Split, workload: str, number: int | None, seed: int,
             max_cells: int | str | None) -> QuerySet:
    real = split.train
    if real.discrete is None or real.domain is None:
        raise ValueError("the query_release task needs discrete data (a dataset that "
                         "provides `discrete`)")
    domain = dict(real.domain)
    return QuerySet.build(domain, resolve_workload(domain, real.n, workload, number, seed,
                                                   max_cells))


def evaluate(output: QueryAnswers, split: Split, workload: str = "all_3way",
             number: int | None = None, seed: int = 0,
             max_cells: int | str | None = None) -> dict[str, float]:
    """Max, mean and RMS absolute error of ``output`` on the workload (module docstring)."""
    key = workload_key(workload, number, seed, max_cells)
    if output.workload != key:
        raise ValueError(f"answers are for workload {output.workload!r}; the task scores "
                         f"{key!r}")
    qs = _queries(split, workload, number, seed, max_cells)
    answers = np.asarray(output.answers, dtype=float)
    if answers.shape != (qs.n_queries,):
        raise ValueError(f"{answers.shape} answers for a workload of {qs.n_queries} queries")
    err = np.abs(qs.answers(split.train.discrete) - answers)
    return {"max_error": float(err.max()), "mean_error": float(err.mean()),
            "rmse": float(np.sqrt(np.mean(err**2))), "n_queries": float(qs.n_queries)}


def check(split: Split, workload: str = "all_3way", number: int | None = None, seed: int = 0,
          max_cells: int | str | None = None) -> None:
    """One-line ValueError unless the data are discrete and the workload spec builds a
    non-empty workload over them (the runner calls this before any trial)."""
    _queries(split, workload, number, seed, max_cells)
