"""``metric_vs_eps``: the paper's printed values drawn beside ours, and the note saying when
the run's settings differ from the paper's."""

from __future__ import annotations

import sys

import pandas as pd

from dpbench.report.kinds.metric_vs_eps import metric_vs_eps, settings_note

NUMBERS = """table,dataset,method,metric,stat,epsilon,value,digits,comparable,note
2,ds,m,acc,mean_se,0.5,0.70,2,true,
2,ds,m,acc,mean_se,1.0,0.75,2,true,
2,ds,m,real_acc,mean_se,1.0,0.80,2,true,
2,ds,other,acc,mean_se,1.0,0.10,2,true,another method
"""


def _frame() -> pd.DataFrame:
    return pd.DataFrame([{"dataset": "ds", "dataset_label": "DS", "method": "m",
                          "method_label": "M", "epsilon": e, "trial": t, "budget_unit": "epsilon",
                          "privacy.private": True, "acc": 0.7 + 0.01 * t, "real_acc": 0.8,
                          "method.rounds": 3, "method.cap": 100.0}
                         for e in (0.5, 1.0) for t in range(3)])


def test_settings_note_names_only_the_settings_that_differ():
    fig = {"settings_vs_paper": {"text": "smaller than the paper's", "settings": [
        {"column": "method.rounds", "paper": 16, "label": "rounds"},
        {"column": "method.cap", "paper": 100.0, "label": "cap"},
        {"column": "method.absent", "paper": 1, "label": "absent"}]}}
    assert settings_note(_frame(), fig) == "smaller than the paper's: rounds 3 (paper 16)."
    assert settings_note(_frame().assign(**{"method.rounds": 16}), fig) is None
    assert settings_note(_frame(), {}) is None


def test_paper_values_drawn_and_note_in_the_table(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "papers" / "toy").mkdir(parents=True)
    (root / "papers" / "toy" / "numbers.csv").write_text(NUMBERS)
    monkeypatch.setenv("DPBENCH_PATH", str(root))
    drawn: list = []
    kind = sys.modules[metric_vs_eps.__module__]
    real_printed = kind._printed
    monkeypatch.setattr(kind, "_printed", lambda ax, rows, d, fig: (
        drawn.append((d, sorted(rows.loc[rows["dataset"] == d, "value"]))),
        real_printed(ax, rows, d, fig)))
    fig = {"name": "f", "paper": "toy", "metric": "acc", "reference": "real_acc",
           "paper_values": {"table": "2", "method": "m", "reference": "real_acc"},
           "settings_vs_paper": {"text": "smaller", "settings": [
               {"column": "method.rounds", "paper": 16, "label": "rounds"}]}}
    paths = metric_vs_eps(_frame(), fig, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".md", ".tex"]
    # the panel got the paper's rows of its dataset and method only (not 'other')
    assert drawn == [("ds", [0.70, 0.75, 0.80])]
    assert "smaller: rounds 3 (paper 16)." in paths[2].read_text()


def test_a_nan_metric_counts_as_a_missing_trial_not_as_a_value() -> None:
    """A trial whose metric is NaN (stored as such) is not averaged: the cell's mean is the
    other trials', and the cell is marked short of trials in the tables."""
    import pandas as pd

    from dpbench.report.frame import summarise
    from dpbench.report.render import wide_table

    frame = pd.DataFrame({"dataset": "d", "method": "m", "epsilon": 1.0, "dataset_label": "D",
                          "method_label": "M", "mse": [0.5, float("nan"), 0.7],
                          "trials_asked": 3})
    (row,) = summarise(frame, "mse").to_dict("records")
    assert row["mean"] == 0.6 and row["n"] == 2 and row["trials"] == 2 and row["asked"] == 3
    assert wide_table(summarise(frame, "mse"))["D"].loc["M", "1"].endswith("[2/3 trials]")
