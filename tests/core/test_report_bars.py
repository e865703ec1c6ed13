"""``bars`` kind: groups by method id (swept ids in numeric order) or by target, the epsilon
filter, the table's mean ± s.e. cells, and the written files."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbench.report.kinds import KINDS
from dpbench.report.kinds.bars import bars, order_ids

# the package's ``bars`` attribute is the function, so fetch the module itself
bars_module = importlib.import_module("dpbench.report.kinds.bars")
RNG = np.random.default_rng(7)


def _trials(n: int, centre: float) -> np.ndarray:
    return centre + RNG.normal(0.0, 0.05, n)


def _cell(values: np.ndarray) -> str:
    """``mean ± s.e.`` computed here, independently of the kind (s.e. = sd(ddof=1) / sqrt n)."""
    v = np.asarray(values, dtype=float)
    return f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(v.size):.3f}"


def _rows(dataset: str, method: str, label: str, eps: float, values: np.ndarray,
          private: bool = True, **cols: np.ndarray | str | float) -> list[dict]:
    out = []
    for t, v in enumerate(values):
        row = {"dataset": dataset.lower(), "dataset_label": dataset, "method": method,
               "method_label": label, "epsilon": eps, "trial": t, "acc": v,
               "privacy.private": private}
        row.update({k: (c[t] if isinstance(c, np.ndarray) else c) for k, c in cols.items()})
        out.append(row)
    return out


def _table(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.startswith("| ")]


@pytest.fixture
def drawn(monkeypatch) -> list:
    """The matplotlib figures the kind saves, kept for inspection."""
    figures = []
    real_save = bars_module.save

    def keep(fig, stem):
        figures.append(fig)
        return real_save(fig, stem)

    monkeypatch.setattr(bars_module, "save", keep)
    return figures


def _method_frame() -> tuple[pd.DataFrame, dict[tuple[str, str], np.ndarray]]:
    """Two datasets; a method swept per dataset, a non-private reference, an unlisted one."""
    values = {("Beta", "m[k=300]"): _trials(3, 0.7), ("Beta", "m[k=100]"): _trials(3, 0.6),
              ("Beta", "m[k=20]"): _trials(4, 0.5), ("Beta", "ref"): _trials(3, 0.9),
              ("Alpha", "m[k=450]"): _trials(5, 0.8), ("Alpha", "ref"): _trials(2, 0.95)}
    rows = []
    for (d, m), v in values.items():
        label = "Ref" if m == "ref" else f"M (k={m[4:-1]})"
        rows += _rows(d, m, label, 1.0, v, private=m != "ref")
    rows += _rows("Beta", "other", "Other", 1.0, _trials(3, 0.1))
    return pd.DataFrame(rows), values


def test_registered():
    assert KINDS["bars"] is bars


def test_swept_ids_by_numeric_value_then_strings():
    ids = ["m[k=300]", "m[k=100]", "x", "m[k=20]", "m", "m[k=1e-05]"]
    assert order_ids(ids, ["m", "x"]) == ["m", "m[k=1e-05]", "m[k=20]", "m[k=100]",
                                          "m[k=300]", "x"]
    assert order_ids(["m[o=b]", "m[o=a]", "m[o=10]"], ["m"]) == ["m[o=10]", "m[o=a]", "m[o=b]"]
    assert order_ids(["a[k=2]", "b", "a[k=1]"], ["b", "a"]) == ["b", "a[k=1]", "a[k=2]"]


def test_group_by_method_table_files_and_bars(tmp_path, drawn):
    frame, values = _method_frame()
    fig = {"name": "acc_bars", "metric": "acc", "ylabel": "accuracy", "methods": ["m", "ref"],
           "title": "Accuracy", "note": "eps = 1, three trials", "ylim": [0, 1]}
    paths = bars(frame, fig, tmp_path)
    assert [p.name for p in paths] == ["acc_bars.png", "acc_bars.pdf", "acc_bars.md",
                                       "acc_bars.tex"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    md = (tmp_path / "acc_bars.md").read_text()
    assert md.startswith("## Accuracy: accuracy at ε=1 (mean ± s.e.)\n")
    assert "- eps = 1, three trials" in md
    # panels sorted by label; in each, m's ids by sweep value, then ref; "other" not listed
    assert _table(tmp_path / "acc_bars.md") == [
        "| dataset | method | accuracy | n |",
        f"| Alpha | M (k=450) | {_cell(values['Alpha', 'm[k=450]'])} | 5 |",
        f"| Alpha | Ref | {_cell(values['Alpha', 'ref'])} | 2 |",
        f"| Beta | M (k=20) | {_cell(values['Beta', 'm[k=20]'])} | 4 |",
        f"| Beta | M (k=100) | {_cell(values['Beta', 'm[k=100]'])} | 3 |",
        f"| Beta | M (k=300) | {_cell(values['Beta', 'm[k=300]'])} | 3 |",
        f"| Beta | Ref | {_cell(values['Beta', 'ref'])} | 3 |"]
    (f,) = drawn
    alpha, beta = f.axes[:2]
    assert [ax.get_title() for ax in (alpha, beta)] == ["Alpha", "Beta"]
    assert [t.get_text() for t in beta.get_xticklabels()] == ["M (k=20)", "M (k=100)",
                                                              "M (k=300)", "Ref"]
    heights = [p.get_height() for p in beta.patches]
    assert heights == pytest.approx([values["Beta", i].mean() for i in
                                     ("m[k=20]", "m[k=100]", "m[k=300]", "ref")])
    # one colour per method id, the non-private reference hatched, no series legend
    assert len({p.get_facecolor() for p in beta.patches}) == 4
    assert [bool(p.get_hatch()) for p in beta.patches] == [False, False, False, True]
    assert beta.get_ylim() == (0, 1)


def test_default_methods_are_every_name(tmp_path):
    frame, _ = _method_frame()
    bars(frame, {"name": "all", "metric": "acc"}, tmp_path)
    labels = [ln.split(" | ")[1] for ln in _table(tmp_path / "all.md")[1:]]
    assert labels == ["M (k=450)", "Ref", "M (k=20)", "M (k=100)", "M (k=300)", "Other",
                      "Ref"]


def _target_frame() -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """One generator on two datasets, metrics of the main target unsuffixed, others
    suffixed; ``c`` lacks the real series, ``d`` has it only as NaN; on ``Two`` one trial
    lacks the real series (``n``: the most trials of a series)."""
    n = 4
    v = {k: _trials(n, c) for k, c in [("accuracy", 0.8), ("real_accuracy", 0.85),
                                        ("accuracy_b", 0.6), ("real_accuracy_b", 0.7),
                                        ("accuracy_a", 0.5), ("real_accuracy_a", 0.55),
                                        ("accuracy_c", 0.4), ("accuracy_d", 0.3)]}
    rows = _rows("One", "gen", "Gen", 1.0, v["accuracy"], **{"dataset.target": "income"},
                 **{k: c for k, c in v.items()}, real_accuracy_d=np.full(n, np.nan))
    real_two = np.r_[np.nan, v["real_accuracy"][1:]]  # n = 3 for Real, 4 for Gen
    other = _rows("Two", "gen", "Gen", 1.0, v["accuracy"], **{"dataset.target": np.nan},
                  accuracy=v["accuracy"], real_accuracy=real_two)
    return pd.DataFrame(rows + other), v


def test_group_by_target(tmp_path, drawn):
    frame, v = _target_frame()
    fig = {"name": "tgt", "group_by": "target", "ylabel": "accuracy",
           "series": [{"metric": "real_accuracy", "label": "Real"},
                      {"metric": "accuracy", "label": "Gen"}]}
    paths = bars(frame, fig, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".md", ".tex"]
    assert _table(tmp_path / "tgt.md") == [
        "| dataset | target | Real | Gen | n |",
        f"| One | income | {_cell(v['real_accuracy'])} | {_cell(v['accuracy'])} | 4 |",
        f"| One | a | {_cell(v['real_accuracy_a'])} | {_cell(v['accuracy_a'])} | 4 |",
        f"| One | b | {_cell(v['real_accuracy_b'])} | {_cell(v['accuracy_b'])} | 4 |",
        f"| Two | target | {_cell(v['real_accuracy'][1:])} | {_cell(v['accuracy'])} | 4 |"]
    one = drawn[0].axes[0]
    assert [t.get_text() for t in one.get_xticklabels()] == ["income", "a", "b"]
    # one colour per series, and a legend naming them
    assert len({p.get_facecolor() for p in one.patches}) == 2
    legend = [t.get_text() for ax in drawn[0].axes if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    assert legend == ["Real", "Gen"]


def test_group_by_target_needs_one_method(tmp_path):
    frame, _ = _target_frame()
    frame = pd.concat([frame, frame.assign(method="gen2", method_label="Gen2")])
    with pytest.raises(ValueError, match="gen, gen2"):
        bars(frame, {"name": "x", "metric": "accuracy", "group_by": "target"}, tmp_path)


def test_epsilon_filter_and_error(tmp_path):
    low, high = _trials(3, 0.2), _trials(3, 0.9)
    frame = pd.DataFrame(_rows("D", "m", "M", 0.5, low) + _rows("D", "m", "M", 1.0, high))
    with pytest.raises(ValueError, match=r"epsilons 0\.5, 1;"):
        bars(frame, {"name": "e", "metric": "acc"}, tmp_path)
    bars(frame, {"name": "e", "metric": "acc", "epsilon": 0.5}, tmp_path)
    assert _table(tmp_path / "e.md")[1] == f"| D | M | {_cell(low)} | 3 |"
    assert (tmp_path / "e.md").read_text().startswith("## e: acc at ε=0.5 (mean ± s.e.)")
    assert bars(frame, {"name": "none", "metric": "acc", "epsilon": 3}, tmp_path) == []
    assert not (tmp_path / "none.png").exists()
    # with one epsilon in the selected rows it is the default
    bars(frame[frame["epsilon"] == 1.0], {"name": "one", "metric": "acc"}, tmp_path)
    assert _table(tmp_path / "one.md")[1] == f"| D | M | {_cell(high)} | 3 |"


def test_empty_selection_and_no_table(tmp_path):
    frame, _ = _method_frame()
    assert bars(frame, {"name": "x", "metric": "acc", "methods": ["nope"]}, tmp_path) == []
    assert bars(frame.iloc[0:0], {"name": "x", "metric": "acc"}, tmp_path) == []
    paths = bars(frame, {"name": "y", "metric": "acc", "table": False}, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf"]


@pytest.mark.parametrize(("fig", "message"), [
    ({"group_by": "dataset", "metric": "acc"}, r"group_by 'dataset' is not one of method, "
                                                r"target"),
    ({"series": [{"label": "A"}]}, r"series entry \{'label': 'A'\} has no metric"),
    ({"ylabel": "acc"}, r"needs series"),
])
def test_spec_errors(tmp_path, fig, message):
    frame, _ = _method_frame()
    with pytest.raises(ValueError, match=message):
        bars(frame, {"name": "bad", **fig}, tmp_path)
