"""Every method yaml keeps its declared contract on a small dataset it serves.

For each ``conf/method`` yaml (smoke profile): pick the first (task, dataset) of
``SMOKE_DATA`` that ``plan`` would accept, fit under a fresh ledger, and check that a
private method charged something and (as claimed) no more than its target, a non-private one charged
nothing, every declared output kind comes back as that kind with finite numbers, and the
task scores it with its declared primary metric. Every dataset yaml's declared
``provides`` holds on its loaded data, and its ``tasks`` are known tasks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from smoke_cells import smoke_cell, smoke_split, view

from dpbench.data.base import CAPABILITIES, capabilities
from dpbench.data.files import DataError
from dpbench.methods.base import NEIGHBOUR_RELATIONS
from dpbench.methods.outputs import LinearFit, PosteriorDraws, SyntheticTable
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, cell_problem, load_entry
from dpbench.runner.schema import choices
from dpbench.tasks import TASKS


def _finite(out: object) -> bool:
    if isinstance(out, LinearFit):
        return bool(np.all(np.isfinite(out.coef)))
    if isinstance(out, SyntheticTable):
        return bool(np.all(np.isfinite(out.X)) and np.all(np.isfinite(out.y)))
    if isinstance(out, PosteriorDraws):
        return bool(np.all(np.isfinite(out.samples)))
    return True


@pytest.mark.slow
@pytest.mark.parametrize("method", choices("method"))
def test_method_yaml_keeps_its_contract(method: str) -> None:
    task_name, dataset = smoke_cell(method)
    task, me = TASKS[task_name], load_entry("method", method)
    split = smoke_split(dataset, task_name)
    cls = import_object(me["_target_"])
    assert task.kind_for(cls.produces) is not None, \
        f"{method} serves {task_name} but never produces " \
        f"{' or '.join(k.__name__ for k in task.kinds)}"
    assert cls.neighbours in NEIGHBOUR_RELATIONS, (method, cls.neighbours)
    model = cls(**_merged_params(me, "smoke"))
    ledger = Accountant(1.0, 1e-5, currency=cls.accounting)
    model.fit(split.train, ledger, np.random.default_rng(1))
    spent = ledger.summary()
    if cls.private:
        assert ledger.charges, f"private {method} charged nothing"
        # a paper's understated accounting (BinAgg's noise scaling) is recorded as such:
        # its claimed spend stays within the target, the true one is reported beside it
        claimed = spent.get("claimed_spent_epsilon", spent["spent_epsilon"])
        assert claimed <= 1.0 + 1e-9, spent
        if spent.get("understated"):
            assert spent["spent_epsilon"] > claimed, spent
    else:
        assert not ledger.charges
    for kind in cls.produces:
        out = model.output(kind)
        assert isinstance(out, kind) and _finite(out), (method, kind.__name__)
    metrics = task.score(model.output(cls.scored_kinds(task, _merged_params(me, "smoke"))),
                         split, {})
    assert task.primary in metrics
    assert math.isfinite(metrics[task.primary]), (method, task.primary, metrics[task.primary])


@pytest.mark.parametrize("dataset,task", [(d, t) for d in choices("dataset")
                                          for t in load_entry("dataset", d).get("tasks") or [None]])
def test_dataset_yaml_declares_what_it_provides(dataset: str, task: str | None) -> None:
    assert task in TASKS, f"{dataset}: unknown or missing task {task!r}"
    de = view(dataset, task)
    declared = set(de.get("provides") or ())
    assert declared <= set(CAPABILITIES), declared - set(CAPABILITIES)
    try:
        split = smoke_split(dataset, task)
    except DataError:
        pytest.skip(f"{dataset}: downloaded data, not shipped")
    assert declared <= capabilities(split.train), declared - capabilities(split.train)


def test_output_of_an_undeclared_kind_is_refused() -> None:
    from dpbench.methods.regression.public import PublicOLS

    model = PublicOLS()
    with pytest.raises(TypeError, match="produces no PosteriorDraws; it produces LinearFit"):
        model.output(PosteriorDraws)


def test_a_mismatched_cell_is_refused_with_its_reason() -> None:
    me = load_entry("method", "objpert")
    reason = cell_problem(TASKS["regression"], "adult", view("adult", "regression"),
                          "objpert", me, _merged_params(me, "smoke"))
    assert reason == "method 'objpert' serves classification, not regression"
    me = load_entry("method", "ddssp")
    reason = cell_problem(TASKS["inference"], "binagg_sim_d5",
                          load_entry("dataset", "binagg_sim_d5"), "ddssp", me, {})
    assert reason == "method 'ddssp' needs data with discrete"
