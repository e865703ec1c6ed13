"""Query release over an explicit distribution on the full domain (MWEM, PEP; Liu, Vietri &
Wu 2021, Sec. 2.1 and App. B.2): the distribution with its answers kept current under
multiplicative updates, and the base class of the methods that run the App. B.1 template
on it.

:class:`DomainHistogram` holds D (unnormalised, shaped by the domain) and, optionally, the
marginal tables of every workload clique. ``scale(position, factor)`` multiplies D on the
cells of one counting query (the update of both MWEM and PEP). Untracked, the answers go
stale and are recomputed in one pass when next asked for (MWEM: once per round, its replayed
updates use the round's stale answers anyway). Tracked, each table is corrected by the
update's own contribution, an einsum over the query's cells only (1/|cells of its marginal|
of the domain): PEP's projections need the current answers after every single update, and
a full recomputation (~9 ms on ADULT (reduced)'s 336,000 cells) per update would dominate.

:class:`HistogramMethod` is the shared skeleton: the workload (the same spec as the
``query_release`` task's parameters), the refusal of a domain too large for memory before
anything domain-sized is allocated, D_0 uniform, T rounds of select (exponential mechanism on
|q(P) - q(D_{t-1})|) and measure (Gaussian), each followed by the method's ``_update``, and
the output: the answers of the last D (the paper's methods output the last iterate, App.
F.1).

Records (``output(SyntheticTable)``, post-processing of that last D): n i.i.d. records
drawn from D, n the number of private rows (public under the template's replace-one
relation): the last iterate is the distribution the method releases, and MWEM's
distribution stands for n records (Hardt, Ligett & McSherry 2012, Alg. 1 scales it to n).
The draws use a seed spawned from the fit's generator after the fit
(:func:`dpbench.methods.records.post_seed`: the fit's draws, and so its answers, are
unchanged), the same records on every call; (X, y) are the data's encoding of them.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.data.queries import (
    MAX_HISTOGRAM_CELLS,
    QuerySet,
    check_histogram_size,
    uniform_histogram,
    workload_queries,
)
from dpbench.methods.base import Method
from dpbench.methods.outputs import QueryAnswers, SyntheticTable
from dpbench.methods.query_release.template import (
    AdaptiveBudget,
    check_alpha,
    check_rounds,
    check_selection,
    plan,
    workload_answers,
)
from dpbench.methods.records import post_seed, sample_histogram, synthetic_table
from dpbench.privacy.accountant import Accountant

#: D is rescaled to total 1 when its unnormalised total leaves [1/_RESCALE, _RESCALE]
_RESCALE = 1e100


class DomainHistogram:
    """A distribution over the full domain of ``queries`` and its answers (module
    docstring). ``hist`` is copied; it need not be normalised."""

    def __init__(self, queries: QuerySet, hist: NDArray) -> None:
        self.queries = queries
        self.hist = np.array(hist, dtype=float).reshape(queries.sizes)
        self._total = float(self.hist.sum())
        self._sums: NDArray | None = None       # unnormalised answers; None = stale
        self._plans: dict[int, tuple] = {}

    def refresh(self) -> None:
        """Normalise D and recompute every answer exactly."""
        self.hist /= self.hist.sum()
        self._total = 1.0
        self._sums = self.queries.histogram_answers(self.hist)

    def answers(self) -> NDArray:
        """Normalised answers to every query of the workload (recomputed when stale)."""
        if self._sums is None:
            self.refresh()
        assert self._sums is not None
        return self._sums / self._total

    def distribution(self) -> NDArray:
        """D normalised to sum 1 (a copy, shaped by the domain)."""
        return self.hist / self.hist.sum()

    def scale(self, position: int, factor: float, *, track: bool = False) -> None:
        """D(x) *= factor on the cells of query ``position`` (q(x) = 1), unnormalised.
        ``track``: keep every answer current (one einsum per marginal over those cells);
        otherwise the answers are recomputed when next asked for."""
        idx, rest, per_marginal = self._plan(int(position))
        view = self.hist[idx]
        mass = float(view.sum())
        if track and self._sums is not None:
            coef = factor - 1.0
            for span_shape, target, free in per_marginal:
                span, shape = span_shape
                table = self._sums[span].reshape(shape)
                table[target] += coef * np.einsum(view, rest, free)
        else:
            self._sums = None
        view *= factor
        self._total += (factor - 1.0) * mass
        if not 1 / _RESCALE < self._total < _RESCALE:
            self.hist /= self._total
            if self._sums is not None:
                self._sums /= self._total
            self._total = 1.0

    def _plan(self, position: int) -> tuple:
        """(index of the query's cells in D, the remaining axes, and per marginal its span
        and shape, the index of the cells the update touches, its free axes)."""
        if position not in self._plans:
            qs = self.queries
            marg, cells = qs.locate(position)
            fixed = dict(zip(qs.axes[int(marg[0])], cells[0], strict=True))
            idx = tuple(fixed.get(a, slice(None)) for a in range(len(qs.sizes)))
            rest = [a for a in range(len(qs.sizes)) if a not in fixed]
            per = [((qs.span(m), qs.shapes[m]),
                    tuple(fixed.get(a, slice(None)) for a in axes),
                    [a for a in axes if a not in fixed])
                   for m, axes in enumerate(qs.axes)]
            self._plans[position] = (idx, rest, per)
        return self._plans[position]


class HistogramMethod(Method):
    """T rounds of the App. B.1 template over an explicit distribution on the full domain
    (module docstring); subclasses implement ``_update``.

    Hyperparameters shared by every subclass: ``T`` (rounds), ``alpha`` (selection share,
    0.5 in the authors' code for MWEM and PEP), ``selection`` (``b1`` | ``alg3``, see the
    template), the workload ``workload`` / ``number`` / ``seed`` / ``max_cells`` (as the
    ``query_release`` task's parameters, which must name the same workload) and
    ``max_domain_cells`` (the largest full domain allowed; ADULT's 7.3e11 cells are refused
    in one line before any allocation).
    """

    accounting = "zcdp"
    neighbours = "replace_one"
    serves = frozenset({"query_release"})
    requires = frozenset({"discrete"})
    produces = (QueryAnswers, SyntheticTable)

    def __init__(self, T: int, alpha: float = 0.5, selection: str = "b1",
                 workload: str = "all_3way", number: int | None = None, seed: int = 0,
                 max_cells: int | str | None = None,
                 max_domain_cells: int | None = MAX_HISTOGRAM_CELLS, **own: Any) -> None:
        super().__init__(T=check_rounds(T), alpha=check_alpha(alpha),
                         selection=check_selection(selection), workload=workload,
                         number=number, seed=seed, max_cells=max_cells,
                         max_domain_cells=max_domain_cells, **own)

    # -- the workload ---------------------------------------------------------------------
    def queries(self, data: TabularData) -> QuerySet:
        """The workload's queries over ``data``'s domain, after refusing a full domain over
        ``max_domain_cells`` (one line with its size)."""
        if data.domain is not None:
            check_histogram_size(dict(data.domain), self.params["max_domain_cells"])
        return workload_queries(data, self.params, type(self).__name__)

    def check_data(self, data: TabularData) -> None:
        self.queries(data)

    # -- fitting --------------------------------------------------------------------------
    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        qs = self.queries(data)
        true = qs.answers(data.discrete)
        hist = DomainHistogram(qs, uniform_histogram(qs.domain, self.params["max_domain_cells"]))
        budget = plan(accountant, data.n, self.params["T"], self.params["alpha"],
                      self.params["selection"])
        self.budget_: AdaptiveBudget = budget
        self.selected_: list[int] = []
        self._start()
        for t in range(budget.rounds):
            fake = hist.answers()
            q = budget.select(np.abs(true - fake), accountant, rng, f"select {t + 1}")
            measured = budget.measure(float(true[q]), accountant, rng, f"measure {t + 1}")
            self.selected_.append(q)
            self._update(hist, t, q, measured, fake, rng)
        hist.refresh()
        self.distribution_ = hist.distribution()
        self.answers_ = hist.answers()
        self.n_queries_ = qs.n_queries
        self.rounds_run_ = budget.rounds
        self.attributes_, self.n_rows_, self.encoding_ = qs.attributes, data.n, data.encoding
        self.records_seed_ = post_seed(rng)
        return self

    def _start(self) -> None:
        """Reset the method's per-fit state (before the first round)."""

    @abstractmethod
    def _update(self, hist: DomainHistogram, t: int, position: int, measured: float,
                fake: NDArray, rng: np.random.Generator) -> None:
        """Round ``t`` (0-based): query ``position`` was measured as ``measured``; ``fake``
        are D_{t-1}'s answers to every query. Update ``hist``."""

    # -- results --------------------------------------------------------------------------
    def output(self, kind: type) -> Any:
        if kind is QueryAnswers:
            return workload_answers(self.answers_, self.params)
        if kind is SyntheticTable:
            records = sample_histogram(self.distribution_, self.attributes_, self.n_rows_,
                                       self.records_seed_)
            return synthetic_table(records, self.encoding_, type(self).__name__)
        return super().output(kind)

    def info(self) -> dict[str, Any]:
        return {**self.budget_.info(), "rounds_run": self.rounds_run_,
                "stop_reason": "completed T rounds: the template splits the budget over "
                               "exactly T, so it is spent",
                "n_queries": self.n_queries_, "domain_cells": int(self.distribution_.size),
                "distinct_selected": len(set(self.selected_)),
                "selected": [int(q) for q in self.selected_]}

