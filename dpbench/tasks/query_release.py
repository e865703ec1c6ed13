"""Query release: the error of released answers over every query of a marginal workload.

The workload is the task's parameters (``workload``, ``number``, ``seed``, ``max_cells``:
see ``resolve_workload``), built over the domain of the rows the method was given
(``split.train``, the private rows), whose answers are the truth. The method's output is
either

- a :class:`QueryAnswers` vector in the flat layout of ``data/queries.py``;
  its ``workload`` must be that spec's ``workload_key`` (answers to another workload of the
  same length are refused), or
- a :class:`SyntheticTable` (so that any synthetic-data generator can be scored on the same
  workload): its ``records`` must hold the integer codes of every
  attribute of the domain (extra columns are ignored), and the answers are the shares of
  its rows in each query's cell (every row weighted alike).

A method producing both is scored on its answers (the task's first kind). Metrics over every
query: ``max_error`` (primary), ``mean_error`` and ``rmse`` of |q(data) - a_q|, and
``n_queries``.

The rounds an iterative method ran and why it stopped are facts of the fit, not of the
score: the methods record them in their info (``rounds_run``, ``stop_reason``), which every
trial record and the results frame (``info.rounds_run``, ``info.stop_reason``) keep.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split
from dpbench.data.queries import QuerySet, resolve_workload, workload_key
from dpbench.methods.outputs import QueryAnswers, SyntheticTable


def _queries(split: Split, workload: str, number: int | None, seed: int,
             max_cells: int | str | None) -> QuerySet:
    real = split.train
    if real.discrete is None or real.domain is None:
        raise ValueError("the query_release task needs discrete data (a dataset that "
                         "provides `discrete`)")
    domain = dict(real.domain)
    return QuerySet.build(domain, resolve_workload(domain, real.n, workload, number, seed,
                                                   max_cells))


def synthetic_answers(table: SyntheticTable, qs: QuerySet) -> NDArray:
    """The answers of a synthetic table's records to every query of ``qs`` (one-line
    ValueError without records, without one of the domain's attributes, or with a code
    outside the domain)."""
    if table.records is None:
        raise ValueError("the query_release task scores a synthetic table through its "
                         "records (every attribute's codes); this one has none")
    missing = [a for a in qs.attributes if a not in table.records.columns]
    if missing:
        raise ValueError(f"the synthetic records lack the attributes {missing} of the "
                         f"workload's domain")
    if len(table.records) == 0:
        raise ValueError("the synthetic table has no rows to answer queries on")
    return qs.answers(table.records[list(qs.attributes)])


def evaluate(output: QueryAnswers | SyntheticTable, split: Split, workload: str = "all_3way",
             number: int | None = None, seed: int = 0,
             max_cells: int | str | None = None) -> dict[str, float]:
    """Max, mean and RMS absolute error of ``output`` on the workload (module docstring)."""
    if isinstance(output, QueryAnswers):
        key = workload_key(workload, number, seed, max_cells)
        if output.workload != key:
            raise ValueError(f"answers are for workload {output.workload!r}; the task scores "
                             f"{key!r}")
    qs = _queries(split, workload, number, seed, max_cells)
    if isinstance(output, SyntheticTable):
        answers = synthetic_answers(output, qs)
    else:
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
