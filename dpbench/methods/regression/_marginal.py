"""Shared plumbing of the regression methods built on a private marginal release."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbench.data.base import Encoding, TabularData
from dpbench.data.workloads import build_workload
from dpbench.methods.base import NEIGHBOUR_RELATIONS, LinearModel
from dpbench.methods.marginals.model import MarginalModel
from dpbench.methods.marginals.release import (
    AIM_PARAMS,
    MST_PARAMS,
    build_settings,
    release_marginals,
)
from dpbench.privacy.accountant import Accountant

MODELS = ("linear", "logistic")


class MarginalMethod(LinearModel):
    """A linear/logistic model fitted from an AIM or MST release (composes in zCDP).

    Parameters: ``model`` (linear | logistic), ``mechanism`` (aim | mst),
    ``workload`` (AIM's; default all 2-way marginals, the paper's; ``all_<k>way`` for k-way),
    ``max_cells`` (drop workload marginals with more cells; None keeps all), and the
    mechanism settings (None keeps the mechanism's default, which is the
    paper's): AIM ``max_model_size`` (MB), ``max_iters``, ``final_iters``,
    ``rounds``, ``rounds_per_attribute``, ``alpha``, ``estimator`` (mrf | mixture),
    ``mixture_components``, ``mixture_lr``, ``oracle`` (hugin | guarded | semistable:
    the mrf estimator's belief propagation, same mechanism and noise, different arithmetic),
    ``shared_max_cells`` (models up to this many cells are fitted by one program per size
    class, flat.py, instead of one per structure; 0: always per structure); MST
    ``max_iters``, ``select_iters``, ``compress``, ``threshold``; ``relation``
    (add_remove, the papers'; replace_one: the mechanisms at the replace-one sensitivities,
    for a comparison stated under that relation).
    """

    accounting = "zcdp"
    relations = NEIGHBOUR_RELATIONS
    serves = frozenset({"regression", "inference", "classification"})
    requires = frozenset({"discrete"})
    #: values of ``model`` this method accepts
    models: tuple[str, ...] = MODELS

    @classmethod
    def tasks_served(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """A linear model serves regression and inference, a logistic one classification."""
        model = params.get("model", "linear")
        if model in ("logistic", "default_logistic"):
            return frozenset({"classification"})
        if model == "none":
            return frozenset()
        return frozenset({"regression", "inference"})

    @classmethod
    def data_required(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """Discrete data; a logistic model also needs binary labels (so that a generator
        fitting one is not offered a regression target through its records)."""
        if params.get("model", "linear") in ("logistic", "default_logistic"):
            return cls.requires | {"binary_label"}
        return cls.requires

    def __init__(self, model: str = "linear", mechanism: str = "aim",
                 workload: str = "all_pairs", max_cells: float | None = None,
                 relation: str = "add_remove", **mechanism_params: Any) -> None:
        if model not in self.models:
            raise ValueError(f"model={model!r}; valid: {', '.join(self.models)}")
        # each name once: max_iters is both an AIM and an MST setting
        full = {k: mechanism_params.pop(k, None)
                for k in dict.fromkeys((*AIM_PARAMS, *MST_PARAMS))}
        if mechanism_params:
            raise ValueError(f"unknown parameters {sorted(mechanism_params)}; valid: model, "
                             f"mechanism, workload, {', '.join(sorted(full))}")
        self.settings = build_settings(mechanism, full)
        if max_cells is not None and not float(max_cells) >= 1:
            raise ValueError(f"max_cells={max_cells} must be >= 1 or None")
        extra = {} if max_cells is None else {"max_cells": int(max_cells)}
        extra.update(self.own_relation(relation))      # the release is private under it
        super().__init__(model=model, mechanism=mechanism, workload=workload, **extra,
                         **{k: v for k, v in full.items() if v is not None})
        self._info: dict[str, Any] = {}

    def check_data(self, data: TabularData) -> None:
        """The workload must keep at least one marginal on this data's domain (``max_cells``)."""
        if self.params["mechanism"] != "aim" or data.discrete is None or data.encoding is None:
            return
        enc = data.encoding
        attrs = [*enc.attributes, enc.target]
        build_workload(self.params["workload"], attrs, target=enc.target,
                       domain={a: int(data.domain[a]) for a in attrs},
                       max_cells=self.params.get("max_cells"))

    def _release(self, data: TabularData, accountant: Accountant,
                 rng: np.random.Generator) -> MarginalModel:
        released, info = release_marginals(
            data, accountant, rng, mechanism=self.params["mechanism"],
            workload=self.params["workload"], settings=self.settings,
            max_cells=self.params.get("max_cells"), relation=self.neighbours)
        self._info = info
        return released

    def info(self) -> dict[str, Any]:
        return dict(self._info)


def label_values(encoding: Encoding) -> np.ndarray:
    """Target level values as +-1 labels (the logistic likelihood's convention):
    {-1, +1} as given, {0, 1} mapped to 2 y - 1."""
    v = np.asarray(encoding.target_values, dtype=float)
    if set(v.tolist()) == {-1.0, 1.0}:
        return v
    if set(v.tolist()) == {0.0, 1.0}:
        return 2 * v - 1
    raise ValueError(f"logistic regression needs a binary target valued {{0, 1}} or {{-1, 1}}; "
                     f"{encoding.target!r} has values {v.tolist()}")
