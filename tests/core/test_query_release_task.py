"""The query_release task on synthetic tables (issue 14, scope item 5): a tiny synthetic
table scored against hand counts, the records' columns matched by name, one-line refusals,
and the task contract that lets one task score several output kinds (the first kind a
method produces, as the runner asks for it)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpbench.data.base import Split, TabularData
from dpbench.data.encoding import build_encoding
from dpbench.methods.base import Method
from dpbench.methods.outputs import LinearFit, PosteriorDraws, QueryAnswers, SyntheticTable
from dpbench.tasks import TASKS

DOMAIN = {"a": 2, "b": 3}
REAL = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 2, 2]})
SYNTH = pd.DataFrame({"a": [0, 1, 1], "b": [0, 0, 2]})


def split_of(frame: pd.DataFrame) -> Split:
    enc = build_encoding(DOMAIN, "a", (), None, "raw")
    X, y = enc.encode(frame)
    data = TabularData(X=X, y=y, x_bound=2.0, y_bound=1.0, feature_names=enc.columns,
                       target="a", discrete=frame, domain=dict(DOMAIN), encoding=enc)
    return Split(train=data, test=data)


def table(records: pd.DataFrame | None) -> SyntheticTable:
    return SyntheticTable(np.zeros((3, 1)), np.zeros(3), records)


def test_a_synthetic_table_is_scored_against_hand_counts() -> None:
    task, split = TASKS["query_release"], split_of(REAL)
    # 1-way: a=0, a=1, b=0, b=1, b=2. Real 2/4, 2/4, 1/4, 1/4, 2/4; synthetic 1/3, 2/3,
    # 2/3, 0, 1/3; errors 1/6, 1/6, 5/12, 1/4, 1/6
    got = task.score(table(SYNTH), split, {"workload": "all_1way"})
    errors = np.array([2, 2, 5, 3, 2]) / 12
    assert got["n_queries"] == 5
    assert got["max_error"] == pytest.approx(5 / 12, rel=1e-14)
    assert got["mean_error"] == pytest.approx(errors.mean(), rel=1e-14)      # 7/30
    assert got["rmse"] == pytest.approx(math.sqrt(46 / 720), rel=1e-14)
    # 2-way (a, b), cells in C order (0,0) (0,1) (0,2) (1,0) (1,1) (1,2): real 1/4, 1/4, 0,
    # 0, 0, 2/4; synthetic 1/3, 0, 0, 1/3, 0, 1/3: the largest error is (1,0)'s 1/3
    got = task.score(table(SYNTH), split, {"workload": "all_2way"})
    assert got["n_queries"] == 6
    assert got["max_error"] == pytest.approx(1 / 3, rel=1e-14)
    assert got["mean_error"] == pytest.approx((1 / 12 + 1 / 4 + 1 / 3 + 1 / 6) / 6, rel=1e-14)
    # the real rows themselves score 0; columns are matched by name, extra ones ignored
    assert task.score(table(REAL), split, {"workload": "all_2way"})["max_error"] == 0.0
    shuffled = SYNTH[["b", "a"]].assign(extra=[9, 9, 9])
    assert task.score(table(shuffled), split, {"workload": "all_2way"}) == got


@pytest.mark.parametrize("records,message", [
    (None, "scores a synthetic table through its records"),
    (SYNTH[["a"]], r"the synthetic records lack the attributes \['b'\]"),
    (SYNTH.iloc[:0], "the synthetic table has no rows"),
    (pd.DataFrame({"a": [0, 2], "b": [0, 0]}), "outside"),
])
def test_unusable_synthetic_tables_are_refused_in_one_line(records, message: str) -> None:
    with pytest.raises(ValueError, match=message) as exc:
        TASKS["query_release"].score(table(records), split_of(REAL), {"workload": "all_1way"})
    assert "\n" not in str(exc.value)


class _Both(Method):
    """A stub producing answers and a table that disagree, to see which one is scored."""

    produces = (QueryAnswers, SyntheticTable)

    def fit(self, data, accountant, rng):  # pragma: no cover - never fitted
        return self

    def output(self, kind):
        if kind is QueryAnswers:
            return QueryAnswers(np.full(5, 0.5), "all_1way")
        if kind is SyntheticTable:
            return table(SYNTH)
        return super().output(kind)


def test_one_task_scores_several_kinds_the_first_a_method_produces() -> None:
    task = TASKS["query_release"]
    assert task.kinds == (QueryAnswers, SyntheticTable)
    assert task.kind_for((LinearFit, SyntheticTable)) is SyntheticTable
    assert task.kind_for((SyntheticTable, QueryAnswers)) is QueryAnswers
    assert task.kind_for((LinearFit,)) is None
    assert TASKS["tstr"].kinds == (SyntheticTable,)
    # the runner's call, model.output(task.needs): the answers, not the table
    out = _Both().output(task.needs)
    assert isinstance(out, QueryAnswers)
    # answers 0.5 everywhere: the real 1-way answers are 1/2, 1/2, 1/4, 1/4, 1/2
    assert task.score(out, split_of(REAL), {"workload": "all_1way"})["max_error"] == 0.25
    with pytest.raises(TypeError, match="_Both produces none of LinearFit, PosteriorDraws; "
                                        "it produces QueryAnswers, SyntheticTable"):
        _Both().output((LinearFit, PosteriorDraws))
    with pytest.raises(TypeError, match="task 'query_release' needs a QueryAnswers or a "
                                        "SyntheticTable, got LinearFit"):
        task.score(LinearFit(np.zeros(1)), split_of(REAL), {})
