"""``best_over_sweep`` kind: per (dataset, method name, eps) the sweep point with the best
mean is drawn with its own s.e., per metric, labelled as non-private tuning; its table names
the chosen point, the points table keeps every point; hand-built frames, numbers computed
here."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbench.report.kinds import KINDS
from dpbench.report.kinds.best_over_sweep import TUNING, choose

module = importlib.import_module("dpbench.report.kinds.best_over_sweep")

# (method id, label, eps) -> the trials' max_error; mean_error ranks the points the other way
MEANS = {("m[T=10]", "M (T=10)", 0.1): 0.30, ("m[T=20]", "M (T=20)", 0.1): 0.20,
         ("m[T=10]", "M (T=10)", 1.0): 0.05, ("m[T=20]", "M (T=20)", 1.0): 0.08,
         ("p[T=5]", "P (T=5)", 0.1): 0.25, ("p[T=5]", "P (T=5)", 1.0): 0.04,
         ("base", "Base", 0.1): 0.5, ("base", "Base", 1.0): 0.4}


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = []
    for (method, label, eps), centre in MEANS.items():
        for t, v in enumerate(centre + rng.normal(0, 0.005, 4)):
            rows.append({"dataset": "d", "dataset_label": "D", "method": method,
                         "method_label": label, "epsilon": eps, "trial": t, "max_error": v,
                         "mean_error": 1.0 - v})
    return pd.DataFrame(rows)


def _cell(values: pd.Series) -> str:
    v = values.to_numpy(float)
    return f"{v.mean():.4f} ± {v.std(ddof=1) / np.sqrt(v.size):.4f}"


def test_registered() -> None:
    assert KINDS["best_over_sweep"] is module.best_over_sweep


def test_choose_takes_the_best_mean_per_name_and_eps() -> None:
    from dpbench.report.frame import summarise

    chosen = choose(summarise(_frame(), "max_error"), sign=-1.0)
    got = {(r.name, r.epsilon): (r.method, r.points) for r in chosen.itertuples()}
    assert got[("m", 0.1)] == ("m[T=20]", 2) and got[("m", 1.0)] == ("m[T=10]", 2)
    assert got[("p", 0.1)] == ("p[T=5]", 1) and got[("base", 1.0)] == ("base", 1)
    higher = choose(summarise(_frame(), "max_error"), sign=1.0)
    assert set(higher.loc[higher["name"] == "m", "method"]) == {"m[T=10]", "m[T=20]"}


def test_figure_and_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = []
    real_save = module.save
    monkeypatch.setattr(module, "save", lambda f, stem: figures.append(f) or real_save(f, stem))
    frame = _frame()
    spec = {"name": "fig", "metrics": ["max_error", "mean_error"], "methods": ["m", "p"],
            "ylabel": {"max_error": "max error"}, "note": "a note"}
    paths = KINDS["best_over_sweep"](frame, spec, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["fig.md", "fig.pdf", "fig.png", "fig.tex", "fig_points.md",
                     "fig_points.tex"]
    # two rows of panels (one per metric), one line per name with the chosen point's s.e.
    (fig,) = figures
    axes = fig.axes
    assert len(axes) == 2 and fig._suptitle.get_text() == TUNING
    lines = {c.get_label(): c.lines[0] for c in axes[0].containers}
    assert sorted(lines) == ["M", "P"]                       # labels without "(T=..)"
    m = frame[frame["method"].isin(["m[T=20]", "m[T=10]"])]
    want = [m[(m.method == "m[T=20]") & (m.epsilon == 0.1)]["max_error"].mean(),
            m[(m.method == "m[T=10]") & (m.epsilon == 1.0)]["max_error"].mean()]
    assert np.allclose(lines["M"].get_ydata(), want)
    assert axes[0].get_xscale() == "log"
    table = (tmp_path / "fig.md").read_text()
    sel = frame[(frame.method == "m[T=20]") & (frame.epsilon == 0.1)]
    assert f"| max error | D | M | {_cell(sel['max_error'])} [T=20] |" in table
    # mean_error ranks the points the other way round: T=10 at 0.1 is chosen there
    sel = frame[(frame.method == "m[T=10]") & (frame.epsilon == 0.1)]
    assert f"| mean_error | D | M | {_cell(sel['mean_error'])} [T=10] |" in table
    assert TUNING in table and "a note" in table and "Base" not in table
    points = (tmp_path / "fig_points.md").read_text()
    assert [ln.split(" | ")[2] for ln in points.splitlines() if ln.startswith("| max")] == \
        ["m[T=10]", "m[T=20]", "p[T=5]"]                     # every point, sweep order
    assert r"$\varepsilon$=0.1" in (tmp_path / "fig.tex").read_text()


def test_digits_per_metric(tmp_path: Path) -> None:
    # metrics of different scales: {metric: decimals}; unlisted metrics keep the default 4
    frame = _frame()
    spec = {"name": "fig", "metrics": ["max_error", "mean_error"], "methods": ["m"],
            "digits": {"max_error": 6}}
    KINDS["best_over_sweep"](frame, spec, tmp_path)
    table = (tmp_path / "fig.md").read_text()
    sel = frame[(frame.method == "m[T=20]") & (frame.epsilon == 0.1)]["max_error"].to_numpy()
    want = f"{sel.mean():.6f} ± {sel.std(ddof=1) / np.sqrt(sel.size):.6f} [T=20]"
    assert f"| max_error | D | M | {want} |" in table
    sel = frame[(frame.method == "m[T=10]") & (frame.epsilon == 0.1)]["mean_error"]
    assert f"| mean_error | D | M | {_cell(sel)} [T=10] |" in table


def test_refusals_and_empty_frames(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs metric: or metrics"):
        KINDS["best_over_sweep"](_frame(), {"name": "x"}, tmp_path)
    with pytest.raises(ValueError, match="better 'smaller'; valid: lower, higher"):
        KINDS["best_over_sweep"](_frame(), {"name": "x", "metric": "max_error",
                                            "better": "smaller"}, tmp_path)
    assert KINDS["best_over_sweep"](_frame(), {"name": "x", "metric": "rmse"}, tmp_path) == []
    assert KINDS["best_over_sweep"](_frame(), {"name": "x", "metric": "max_error",
                                               "methods": ["q"]}, tmp_path) == []
