"""What a fitted method hands to a task: small typed value objects (one per output kind).

A method declares the kinds it produces (``Method.produces``) and returns them from
``Method.output(kind)``; a task declares the kind it consumes (``Task.needs``; a tuple
when it can score several, e.g. ``query_release`` scores query answers or a synthetic
table, and a method is scored on the first of them it produces). Tasks never read a
method's attributes, so any method producing a kind can be scored by every task that needs
it (an arena is the cross product).

- :class:`LinearFit`: a linear score ``X @ coef + intercept`` (intercept 0 unless the
  method fits one), optionally with
  confidence intervals, a naive comparison interval and a tuning grid's coefficients;
- :class:`SyntheticTable`: synthetic records in the data's encoding;
- :class:`PosteriorDraws`: posterior draws of the coefficients and a callable giving the
  matching non-private reference posterior;
- :class:`QueryAnswers`: answers to a workload of counting queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:       # an annotation only: planning imports this module, pandas costs ~0.4 s
    import pandas as pd


@dataclass(frozen=True)
class Intervals:
    """Per-coefficient point estimate, standard error and (lower, upper) interval."""

    coef: NDArray       # (d,)
    stderr: NDArray     # (d,)
    ci: NDArray         # (d, 2)


@dataclass(frozen=True)
class LinearFit:
    """A linear model's coefficients; ``decision_function`` / ``predict`` score new rows.

    ``intercept``: the fitted constant (0.0 for the models without one); every consumer
    scores rows through ``decision_function`` so that it is never dropped. ``intervals``:
    the method's CIs (inference); ``naive``: a comparison CI that ignores the privacy noise;
    ``grid``: (k, d) coefficients of every configuration a tuned method tried (a report can
    then pick the best average in hindsight).
    """

    coef: NDArray
    intervals: Intervals | None = None
    naive: Intervals | None = None
    grid: NDArray | None = None
    intercept: float = 0.0

    def decision_function(self, X: NDArray) -> NDArray:
        """The linear score ``X @ coef + intercept`` of each row."""
        return np.asarray(X) @ np.asarray(self.coef) + self.intercept

    def predict(self, X: NDArray) -> NDArray:
        return self.decision_function(X)


@dataclass(frozen=True)
class SyntheticTable:
    """Synthetic records (X, y) in the encoding of the real data; ``records``, when the
    generator has them, are the integer codes of every attribute (a task can then score
    other targets or marginals of the same synthetic set)."""

    X: NDArray
    y: NDArray
    records: pd.DataFrame | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PosteriorDraws:
    """Draws (S, d) of theta and their R-hat per coordinate; ``reference()`` returns the
    matching non-private posterior (same data, prior and sampler) as another
    PosteriorDraws (its own ``reference`` unset)."""

    samples: NDArray
    rhat: NDArray
    reference: Callable[[], PosteriorDraws] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class QueryAnswers:
    """Normalised answers to the workload named ``workload`` (one per query, in order)."""

    answers: NDArray
    workload: str


OUTPUT_KINDS: tuple[type, ...] = (LinearFit, SyntheticTable, PosteriorDraws, QueryAnswers)

#: the output kinds each task scores (a tuple: several, in order of preference): the one
#: registry of tasks' kinds, the contract between the two layers. ``dpbench.tasks`` builds
#: each ``Task`` from it (tests/core check the two name the same tasks), and a method that
#: produces a :class:`SyntheticTable` serves every task whose kinds include it
#: (``Method.tasks_scored``) without importing the tasks.
TASK_KINDS: dict[str, type | tuple[type, ...]] = {
    "regression": (LinearFit, SyntheticTable),
    "classification": (LinearFit, SyntheticTable),
    "inference": LinearFit,
    "synthetic_utility": SyntheticTable,
    "posterior": PosteriorDraws,
    "approximation": LinearFit,
    "tstr": SyntheticTable,
    "query_release": (QueryAnswers, SyntheticTable),
}


def kinds_of(task: str) -> tuple[type, ...]:
    """The output kinds task ``task`` scores (:data:`TASK_KINDS`), as a tuple."""
    kinds = TASK_KINDS[task]
    return kinds if isinstance(kinds, tuple) else (kinds,)


class ScoringTask(Protocol):
    """What a method asks of a task (``Method.scored_kinds``): its name and the kinds it
    scores (``dpbench.tasks.base.Task`` is one)."""

    name: str

    @property
    def kinds(self) -> tuple[type, ...]:
        """The output kinds it scores, in order of preference."""
        ...
