"""TrialSpec: a frozen, fully resolved description of one trial, and its identity.

The spec's content hash is the trial's key in the store; both random seeds are
derived from content (numpy SeedSequence), so a result never depends on
execution order, worker count or backend.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from dpbench.checksum import canonical_json, digest  # noqa: F401  (spec.digest: the key)


@dataclass(frozen=True)
class TrialSpec:
    """One (dataset, method, epsilon, delta, trial) cell with every setting resolved.

    ``meta`` holds presentation-only fields (labels) and is excluded from the key.
    ``key_as`` pins the identity: ``{"dataset": ..., "dataset_target": ..., "method": ...,
    "method_target": ...}`` values hashed in place of the yaml names and import paths
    (from a yaml's ``key_as: {name, target}``), so renaming a yaml or moving a module keeps
    every stored key and seed. ``task_params`` and ``relation`` enter the key only when
    set (so a cell an arena shares with a paper's experiment is the same trial).
    ``delta`` is a number or a rule in n (training rows), e.g. ``"n**-1.1"``.
    ``epsilon`` is in ``budget_unit``: epsilon itself, or a mu-GDP mu / zCDP rho
    that the runner converts to the equivalent epsilon at ``delta``.
    """

    dataset: str
    dataset_target: str
    dataset_params: dict[str, Any]
    method: str
    method_target: str
    method_params: dict[str, Any]
    task: str
    epsilon: float
    delta: float | str
    budget_unit: str
    trial: int
    task_params: dict[str, Any] = field(default_factory=dict)
    key_as: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    #: the neighbouring relation the cell's (epsilon, delta) is stated for, when it is not
    #: the method's own (privacy/relations.py: the method then runs at the budget whose
    #: group-privacy guarantee is the cell's); None = the method's own relation
    relation: str | None = None

    def identity(self) -> dict[str, Any]:
        """Everything that determines the result (the hashed content)."""
        # a shallow field map (asdict's deep copy dominated a figures run's time); callers
        # only read it, and the hash serialises it as it is
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("meta", "key_as", "task_params", "relation")}
        d.update(self.key_as)
        if self.task_params:
            d["task_params"] = self.task_params
        if self.relation is not None:
            d["relation"] = self.relation
        return d

    @cached_property
    def key(self) -> str:
        """The hash of :meth:`identity`, computed once per spec (a spec is never mutated
        after the grid builds it; report and store look keys up ~10^5 times per figures
        run)."""
        return digest(self.identity())

    def data_identity(self) -> dict[str, Any]:
        """What determines the trial's data split: shared by all methods and epsilons."""
        ident = self.identity()
        return {"dataset": ident["dataset"], "target": ident["dataset_target"],
                "params": self.dataset_params, "trial": self.trial}

    def data_rng(self) -> np.random.Generator:
        return np.random.default_rng(_seed(digest(self.data_identity())))

    def method_rng(self) -> np.random.Generator:
        return np.random.default_rng(_seed(self.key))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], key: str | None = None) -> TrialSpec:
        """The spec of :meth:`to_dict`'s ``d``; ``key``: its key, when the caller has
        checked it against ``d`` already (a reference line), so it is not hashed again."""
        spec = cls(**d)
        if key is not None:
            spec.__dict__["key"] = key      # what the cached property would compute
        return spec


def _seed(hexdigest: str) -> np.random.SeedSequence:
    return np.random.SeedSequence(int(hexdigest[:32], 16))
