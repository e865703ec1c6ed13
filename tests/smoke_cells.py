"""The smoke cell of a method yaml: the first small shipped dataset it serves, and its split.

Shared by the method contracts (tests/contracts) and the privacy audit (tests/privacy),
which both fit every method yaml once on such a cell with its ``smoke`` profile.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, cell_problem, load_entry, task_view
from dpbench.tasks import TASKS

# small shipped datasets, one or more per task, tried in order
SMOKE_DATA = [("regression", "adult"), ("classification", "adult"),
              ("inference", "binagg_sim_d5"), ("tstr", "mpdp_compas"),
              ("synthetic_utility", "binagg_liver"),
              ("posterior", "bayesglm_synth_logistic"), ("posterior", "bayesglm_synth_poisson"),
              ("approximation", "exrisk_fig1_grid"), ("query_release", "qr_adult_reduced"),
              ("classification", "mpdp_compas_public")]


def view(dataset: str, task: str) -> dict:
    """The dataset yaml as ``task`` sees it."""
    return task_view(dataset, load_entry("dataset", dataset), task)


def smoke_cell(method: str) -> tuple[str, str]:
    """(task, dataset): the first of :data:`SMOKE_DATA` that ``plan`` accepts for ``method``,
    among the tasks its own output serves if any (a generator's other tasks otherwise)."""
    me = load_entry("method", method)
    params = _merged_params(me, "smoke")
    own = import_object(me["_target_"]).tasks_served(params)
    # the tasks its own output serves first, then those it serves through its records
    for task, dataset in sorted(SMOKE_DATA, key=lambda c: c[0] not in own):
        if cell_problem(TASKS[task], dataset, view(dataset, task), method, me,
                        params) is None:
            return task, dataset
    raise AssertionError(f"method {method!r} serves none of the smoke datasets {SMOKE_DATA}")


def smoke_split(dataset: str, task: str) -> Any:
    """The dataset's smoke-profile split, drawn with seed 0."""
    de = view(dataset, task)
    return import_object(de["_target_"])(rng=np.random.default_rng(0),
                                          **_merged_params(de, "smoke"))
