"""The task contract: how a method's output is scored, in one place.

A :class:`Task` names the output kind it consumes (``needs``, from
``dpbench.methods.outputs``; or a tuple of kinds it can score, in order of preference:
``Method.output`` given the tuple returns the first kind the method produces, see
:meth:`Task.kind_for`), the data capabilities it requires, its parameters with
their defaults (an experiment's ``task_params`` override them and enter the trial key),
its metrics, its primary metric and whether higher is better (reports rank by the primary
metric; claims use the direction). ``evaluate(output, split, **params)`` returns
``{metric: float}``; metric names ending in ``*`` in ``metrics`` stand for a family
(``coef_*``: one per coefficient).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dpbench.data.base import Split

Evaluate = Callable[..., dict[str, float]]


@dataclass(frozen=True)
class Task:
    """One way of scoring a fitted method (see the module docstring)."""

    name: str
    needs: type | tuple[type, ...]
    evaluate: Evaluate
    metrics: tuple[str, ...]
    primary: str
    higher_is_better: bool
    requires: frozenset[str] = frozenset()
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: ``check(split, **params)`` raises a one-line ValueError if the task cannot score this
    #: data with these parameters (run before any trial starts); None = nothing to check
    check: Callable[..., None] | None = None
    #: per output kind, the task parameters that output is made for: a method scored on
    #: that kind must take the task's value of each it has (query answers are for one
    #: workload); the grid refuses a cell that differs, before any fit
    matched: Mapping[type, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: the metrics a board may rank on, each with whether higher is better (the primary
    #: always among them); others (a count, a training error) are never ranked
    rankable: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))

    def ranked_metrics(self) -> dict[str, bool]:
        """The rankable metrics with their direction, the primary first."""
        return {self.primary: self.higher_is_better,
                **{m: h for m, h in self.rankable.items() if m != self.primary}}

    def __post_init__(self) -> None:
        if self.primary not in self.metrics:
            raise ValueError(f"task {self.name!r}: primary metric {self.primary!r} is not "
                             f"among its metrics {self.metrics}")
        unknown = sorted(set(self.rankable) - set(self.metrics))
        if unknown:
            raise ValueError(f"task {self.name!r}: rankable metrics {unknown} are not among "
                             f"its metrics {self.metrics}")

    @property
    def kinds(self) -> tuple[type, ...]:
        """The output kinds this task scores, in order of preference."""
        return self.needs if isinstance(self.needs, tuple) else (self.needs,)

    def kind_for(self, produces: tuple[type, ...]) -> type | None:
        """The kind a method producing ``produces`` is scored on: the first of
        :attr:`kinds` it produces (None: it produces none of them)."""
        return next((k for k in self.kinds if k in produces), None)

    def resolve_params(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults overridden by ``given``; an unknown name is a one-line ValueError."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise ValueError(f"task {self.name!r} has no parameter {unknown[0]!r}; valid: "
                             f"{', '.join(sorted(self.params)) or '(none)'}")
        return {**self.params, **given}

    def mismatch(self, kind: type | None, method_params: Mapping[str, Any],
                 task_params: Mapping[str, Any]) -> str | None:
        """Why a method whose (complete) parameters are ``method_params``, scored on
        ``kind``, cannot be scored with ``task_params`` (:attr:`matched`); None if it can."""
        params = self.resolve_params(task_params)
        for name in self.matched.get(kind, ()) if kind is not None else ():
            if name in method_params and method_params[name] != params.get(name):
                return (f"its {kind.__name__} are for {name}={method_params[name]!r} but the "
                        f"task scores {name}={params.get(name)!r}: give the method the "
                        f"task's value (e.g. experiment.method_params_by_dataset)")
        return None

    def check_split(self, split: Split, params: Mapping[str, Any]) -> None:
        """``check`` on a loaded split (a no-op for tasks without one)."""
        if self.check is not None:
            self.check(split, **self.resolve_params(params))

    def score(self, output: Any, split: Split, params: Mapping[str, Any]) -> dict[str, float]:
        """``evaluate`` on an output of a kind this task needs."""
        if not isinstance(output, self.kinds):
            raise TypeError(f"task {self.name!r} needs a "
                            f"{' or a '.join(k.__name__ for k in self.kinds)}, got "
                            f"{type(output).__name__}")
        return self.evaluate(output, split, **self.resolve_params(params))
