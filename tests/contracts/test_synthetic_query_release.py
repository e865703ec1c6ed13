"""A synthetic-data generator is scored on a query-release workload through the contracts
alone (issue 14, scope item 5): AIM and MST, as their yamls configure them, pass the
(task, dataset, method) check on ADULT (reduced), the runner's ``model.output(task.needs)``
hands the task their synthetic table, and the task's errors are those of the records'
own answers."""

from __future__ import annotations

import numpy as np
import pytest

from dpbench.data.queries import QuerySet, resolve_workload
from dpbench.methods.outputs import SyntheticTable
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, cell_problem, load_entry, task_view
from dpbench.tasks import TASKS


@pytest.mark.parametrize("method", ["aim_tstr", "mst_synth"])
def test_a_synthetic_table_is_scored_on_the_query_release_workload(method: str) -> None:
    task, dataset = TASKS["query_release"], "qr_adult_reduced"
    view = task_view(dataset, load_entry("dataset", dataset), task.name)
    me = load_entry("method", method)
    params = _merged_params(me, "smoke")
    assert cell_problem(task, dataset, view, method, me, params) is None
    split = import_object(view["_target_"])(rng=np.random.default_rng(0),
                                            **_merged_params(view, "smoke"))
    cls = import_object(me["_target_"])
    assert task.kind_for(cls.produces) is SyntheticTable
    model = cls(**params)
    model.check_data(split.train)
    n = split.train.n
    ledger = Accountant(1.0, 1 / n**2, currency=cls.accounting)
    model.fit(split.train, ledger, np.random.default_rng(1))
    assert 0 < ledger.rho_spent <= ledger.rho_total * (1 + 1e-9)
    out = model.output(task.needs)                      # what the runner asks for
    assert isinstance(out, SyntheticTable) and out.records is not None
    metrics = task.score(out, split, {"workload": "all_3way"})
    domain = dict(split.train.domain)
    qs = QuerySet.build(domain, resolve_workload(domain, n, "all_3way"))
    err = np.abs(qs.answers(split.train.discrete) - qs.answers(out.records[list(domain)]))
    assert metrics["n_queries"] == qs.n_queries
    assert metrics["max_error"] == pytest.approx(float(err.max()), rel=1e-12)
    assert metrics["rmse"] == pytest.approx(float(np.sqrt(np.mean(err**2))), rel=1e-12)
    assert 0 < metrics["max_error"] < 0.5
