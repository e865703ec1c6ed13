"""The one interface every method implements, and its contract.

A method is a class configured by keyword hyperparameters (from its yaml's ``params``),
fitted with ``fit(data, accountant, rng)`` on a :class:`~dpbench.data.base.TabularData`
under an :class:`~dpbench.privacy.Accountant` with an explicit numpy Generator; it never
reads configs or files, and charges every release to the accountant. Fitted state ends in
``_`` (scikit-learn style) and stays private to the method. The contract, declared as class
variables and checked before any trial runs (``dpbench plan`` / ``run`` refuse a mismatch
in one line; tests/contracts runs every method yaml on a dataset it serves):

- ``accounting``: the ledger currency it composes in (zcdp | gdp | approx | pure);
- ``private``: False for non-private baselines (they charge nothing);
- ``neighbours``: the neighbouring relation its privacy guarantee is stated for,
  ``add_remove`` (one record added or removed; the default) or ``replace_one`` (one record
  replaced, n public: e.g. the Bayesian GLM release, PATE, the query-release template).
  Guarantees under the two relations are not interchangeable (replace-one eps-DP is at
  most 2 eps add/remove-DP), so every trial records it and the report shows it;
- ``relations``: the relations the class has its own analysis for, chosen by its
  ``relation`` parameter (empty: ``neighbours`` only). A comparison stated under another
  relation than a method's ``neighbours`` runs that analysis where the class has one
  (e.g. the marginal mechanisms at the replace-one sensitivities), else group privacy
  (``dpbench/privacy/relations.py``);
- ``noiseless_info``: ``info`` keys that are statistics of the private rows without noise
  (paper diagnostics), marked wherever shown; no other key may be one;
- ``serves``: the task names it can be scored by (``dpbench.tasks.TASKS``);
- ``requires``: data capabilities it needs, a subset of ``dpbench.data.base.CAPABILITIES``
  (e.g. ``discrete`` for marginal-based methods, ``x_range`` for box-based ones);
- ``produces``: the output kinds (``dpbench.methods.outputs``) that ``output(kind)``
  returns after ``fit``: what tasks consume. ``output((kind, ...))`` (a task that scores
  several kinds, in order of preference) returns the first of them the method produces.

``supports(task, provides, params)`` combines them (overridden where a parameter changes
what a method serves, e.g. a logistic model serves classification, a linear one regression)
and returns None or the reason the cell cannot run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeVar

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.methods.outputs import (
    TASK_KINDS,
    Intervals,
    LinearFit,
    ScoringTask,
    SyntheticTable,
    kinds_of,
)
from dpbench.privacy.accountant import Accountant, Currency
from dpbench.privacy.relations import RELATIONS

T = TypeVar("T")

#: the neighbouring relations a method may declare (``Method.neighbours``): the one list,
#: ``privacy.relations.RELATIONS``
NEIGHBOUR_RELATIONS: tuple[str, ...] = RELATIONS


class Method(ABC):
    """Base class: ``Method(**params).fit(data, accountant, rng).output(kind)``."""

    #: the ledger currency the method composes in
    accounting: ClassVar[Currency] = "approx"
    #: False for non-private baselines (they charge nothing)
    private: ClassVar[bool] = True
    #: the neighbouring relation the guarantee is stated for (NEIGHBOUR_RELATIONS)
    neighbours: ClassVar[str] = "add_remove"
    #: relations with their own analysis, chosen by a ``relation`` parameter (() : none)
    relations: ClassVar[tuple[str, ...]] = ()
    #: tasks it serves
    serves: ClassVar[frozenset[str]] = frozenset()
    #: data capabilities it needs (dpbench.data.base.CAPABILITIES)
    requires: ClassVar[frozenset[str]] = frozenset()
    #: ``info`` keys computed WITHOUT noise from the private rows (diagnostics a paper
    #: shows): every record lists them (``privacy.noiseless_info``) and reports say so in red
    noiseless_info: ClassVar[frozenset[str]] = frozenset()
    #: output kinds ``output`` returns (dpbench.methods.outputs)
    produces: ClassVar[tuple[type, ...]] = ()

    def __init__(self, **params: Any) -> None:
        self.params = dict(params)

    def own_relation(self, relation: str) -> dict[str, str]:
        """Make ``relation`` this instance's (``neighbours``): the class's own or one of its
        ``relations``, else a one-line ValueError. Returns the parameter to keep in
        ``params``: none for the class's own, so the papers' trial keys carry no relation."""
        cls = type(self)
        allowed = tuple(dict.fromkeys((cls.neighbours, *cls.relations)))
        if relation not in allowed:
            raise ValueError(f"relation={relation!r} unknown; valid: {', '.join(allowed)}")
        self.neighbours = relation
        return {} if relation == cls.neighbours else {"relation": relation}

    @abstractmethod
    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        """Fit under the budget; must charge every release to ``accountant``."""

    def output(self, kind: type[T]) -> T:
        """The fitted result as ``kind`` (one of ``produces``); given a tuple of kinds, as
        the first of them that the method produces."""
        if isinstance(kind, tuple):
            for k in kind:
                if k in self.produces:
                    return self.output(k)
            raise TypeError(f"{type(self).__name__} produces none of "
                            f"{', '.join(k.__name__ for k in kind)}; it produces "
                            f"{', '.join(k.__name__ for k in self.produces) or 'nothing'}")
        raise TypeError(f"{type(self).__name__} produces no {kind.__name__}; it produces "
                        f"{', '.join(k.__name__ for k in self.produces) or 'nothing'}")

    @classmethod
    def tasks_served(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """The tasks its own output serves under these hyperparameters (default:
        ``serves``); a generator also serves every task that scores records
        (:meth:`tasks_scored`)."""
        del params
        return cls.serves

    @classmethod
    def tasks_scored(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """Every task it can be scored by: :meth:`tasks_served`, plus, for a method that
        produces a :class:`SyntheticTable`, every task that scores one (regression and
        classification train the task's own model on the synthetic rows; query release and
        TSTR read the records). No list of "synthetic tasks" is kept by hand: this follows
        from the tasks' declared kinds (``outputs.TASK_KINDS``)."""
        served = cls.tasks_served(params)
        if SyntheticTable not in cls.produces:
            return served
        return served | {name for name in TASK_KINDS if SyntheticTable in kinds_of(name)}

    @classmethod
    def scored_kinds(cls, task: ScoringTask, params: Mapping[str, Any]) -> tuple[type, ...]:
        """The output kinds ``task`` scores this method on, in order of preference: the
        task's own kinds where the method serves it (:meth:`tasks_served`), its synthetic
        records where it serves the task only through them (e.g. a linear-regression
        generator scored on classification trains the task's classifier on its rows)."""
        if task.name in cls.tasks_served(params):
            return task.kinds
        return (SyntheticTable,)

    @classmethod
    def data_required(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """The data capabilities needed under these hyperparameters (default: ``requires``)."""
        del params
        return cls.requires

    @classmethod
    def supports(cls, task: str, provides: frozenset[str],
                 params: Mapping[str, Any]) -> str | None:
        """None if the method can run ``task`` on data with ``provides``; else why not."""
        served = cls.tasks_scored(params)
        if task not in served:
            return f"serves {', '.join(sorted(served)) or 'no task'}, not {task}"
        missing = sorted(cls.data_required(params) - provides)
        if missing:
            return f"needs data with {', '.join(missing)}"
        return None

    def check_data(self, data: TabularData) -> None:
        """Raise a one-line ValueError if this configured method cannot run on ``data`` (the
        runner calls it on every dataset before any trial starts; default: no check)."""
        del data

    def check_budget(self, accountant: Accountant) -> None:
        """Raise a one-line ValueError naming the valid range if this configured method
        cannot run within ``accountant``'s target (e.g. its paper calibrates noise for a
        range of epsilon only), so the runner refuses the cell before any trial instead of
        storing a failed one; the ledger is empty and must stay so (default: no check)."""
        del accountant

    def info(self) -> dict[str, Any]:
        """Extra JSON-serialisable facts worth storing with the trial (default none)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


class LinearModel(Method):
    """A method whose result is a coefficient vector ``coef_`` and a constant ``intercept_``
    (0.0 unless the method fits one).

    Produces :class:`LinearFit`; methods with confidence intervals set ``stderr_``/``ci_``
    (and ``naive_coef_``/``naive_stderr_``/``naive_ci_``), tuned ones ``grid_coefs_``;
    those that also produce :class:`SyntheticTable` set ``synthetic_ = (X, y)`` (and
    ``synthetic_records_``, the integer codes of every attribute, when they have them).
    """

    serves = frozenset({"regression", "inference"})
    produces = (LinearFit,)
    coef_: NDArray
    intercept_: float = 0.0

    def output(self, kind: type[T]) -> T:
        if kind is LinearFit:
            return LinearFit(  # type: ignore[return-value]
                coef=np.asarray(self.coef_),
                intervals=_intervals(self, ""), naive=_intervals(self, "naive_"),
                grid=getattr(self, "grid_coefs_", None), intercept=float(self.intercept_))
        if kind is SyntheticTable and kind in self.produces:
            X, y = self.synthetic_
            return SyntheticTable(  # type: ignore[return-value]
                np.asarray(X), np.asarray(y), getattr(self, "synthetic_records_", None))
        return super().output(kind)

    def decision_function(self, X: NDArray) -> NDArray:
        return np.asarray(X) @ self.coef_ + self.intercept_

    def predict(self, X: NDArray) -> NDArray:
        return self.decision_function(X)


def _intervals(model: Method, prefix: str) -> Intervals | None:
    stderr = getattr(model, f"{prefix}stderr_", None)
    if stderr is None:
        return None
    coef = getattr(model, f"{prefix}coef_" if prefix else "coef_")
    return Intervals(np.asarray(coef), np.asarray(stderr), np.asarray(getattr(model,
                                                                              f"{prefix}ci_")))
