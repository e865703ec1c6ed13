"""BinAgg data (UCI loaders, simulation DGP), inference / synthetic-utility tasks, report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpbench.data.base import Split, TabularData
from dpbench.data.files import DataError
from dpbench.data.synthetic import linear_regression
from dpbench.data.uci import load_uci, read_table
from dpbench.methods.outputs import Intervals, LinearFit
from dpbench.methods.real_data import RealData
from dpbench.privacy import Accountant
from dpbench.report.kinds import KINDS
from dpbench.runner.grid import load_entry
from dpbench.tasks import TASKS, inference

# paper Table 4 sizes (n, d); D1 is the labelled proxy with the same shape
TABLE4 = {"intrusion_proxy": (182, 4), "liver": (345, 6), "abalone": (4177, 10),
          "parkinsons": (5875, 21), "wine": (6497, 12), "airquality": (9357, 12),
          "appliances": (19735, 27)}


@pytest.mark.parametrize("name", sorted(TABLE4))
def test_uci_shapes_match_table_4(name: str) -> None:
    X, y, feats, target = read_table(name)
    assert X.shape == TABLE4[name] and y.shape == (TABLE4[name][0],)
    assert len(feats) == X.shape[1] and target not in feats and np.isfinite(X).all()


def test_liver_target_reproduces_table_2_ols() -> None:
    # evidence for the target choice: in-sample OLS RelMSE 0.0835 vs the paper's 0.084
    s = load_uci(rng=np.random.default_rng(0), name="liver")
    b = np.linalg.lstsq(s.train.X, s.train.y, rcond=None)[0]
    assert inference.relmse(s.train.X, s.train.y, b) == pytest.approx(0.084, abs=0.001)


def test_uci_bounds_are_training_min_max_and_split_is_80_20() -> None:
    s = load_uci(rng=np.random.default_rng(1), name="abalone", test_fraction=0.2)
    assert (s.train.n, s.test.n) == (3342, 835)
    assert np.array_equal(s.train.x_range[:, 0], s.train.X.min(axis=0))
    assert np.array_equal(s.train.x_range[:, 1], s.train.X.max(axis=0))
    assert np.all(np.linalg.norm(s.train.X, axis=1) <= s.train.x_bound + 1e-12)
    assert np.abs(s.train.y).max() <= s.train.y_bound
    same = load_uci(rng=np.random.default_rng(1), name="abalone")
    assert same.test is same.train                            # Table 2: in-sample


def test_unavailable_dataset_fails_in_one_line(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setattr("urllib.request.urlopen",
                        lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(DataError) as err:
        load_uci(rng=np.random.default_rng(0), name="superconductivity")
    assert "\n" not in str(err.value) and "offline" in str(err.value)
    with pytest.raises(ValueError, match="valid"):
        load_uci(rng=np.random.default_rng(0), name="boston")


def test_simulation_dgp_bounds_and_fixed_beta() -> None:
    a = linear_regression(rng=np.random.default_rng(0), n=500, d=5, y_range=[0, 7],
                          x_upper=5.0, beta_seed=0)
    b = linear_regression(rng=np.random.default_rng(9), n=500, d=5, y_range=[0, 7],
                          beta_seed=0)
    assert np.array_equal(a.train.truth["beta"], b.train.truth["beta"])
    assert a.train.y.min() >= 0 and a.train.y.max() <= 7 and a.train.y_range == (0.0, 7.0)
    assert np.all(a.train.x_range == [0.0, 5.0]) and a.train.x_bound == pytest.approx(
        5 * math.sqrt(5))
    assert a.train.X.max() <= 1.0


_IV = Intervals(np.array([1.0, 2.0]), np.array([0.1, 0.1]), np.array([[0.9, 1.1], [2.5, 2.7]]))
_FITTED = LinearFit(_IV.coef, intervals=_IV, naive=_IV)


def test_inference_metrics_by_hand() -> None:
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 3.0])
    td = TabularData(X, y, 1.0, 3.0, ("a", "b"), "y", truth={"beta": np.array([1.0, 2.0])})
    m = inference.evaluate(_FITTED, Split(td, td))
    assert m["relmse"] == pytest.approx(1 / 10)                  # ||(1,2)-(1,3)||^2 / 10
    assert m["est_error"] == 0.0
    assert (m["covered_0"], m["covered_1"]) == (1.0, 0.0)        # 2 is outside [2.5, 2.7]
    assert m["bias_1"] == 0.0 and m["width_0"] == pytest.approx(0.2)


def test_synthetic_utility_original_learns_a_linear_signal() -> None:
    s = linear_regression(rng=np.random.default_rng(0), n=600, d=3, n_test=300,
                          noise_sd=0.1, y_range=[0, 6])
    model = RealData().fit(s.train, Accountant(1.0, 1e-5), np.random.default_rng(0))
    task = TASKS["synthetic_utility"]
    m = task.score(model.output(task.needs), s, {})
    assert {"relmse_xgboost", "relmse_rf", "relmse_svr", "relmse_mlp"} <= set(m)
    assert m["relmse"] < 0.2                      # 1 - R^2 of good regressors on y = Xb + e


def test_table1_spec_compares_with_the_printed_numbers(tmp_path) -> None:
    R = 1000
    rng = np.random.default_rng(0)
    rows = []
    for t in range(R):
        row = {"dataset": "binagg_sim_table1", "method": "binagg_sim", "method_label": "BinAgg",
               "dataset_label": "sim", "trial": t}
        for j in range(5):
            err = rng.normal(0, 0.25)
            row.update({f"bias_{j}": err, f"se_{j}": 0.25, f"naive_se_{j}": 0.1,
                        f"covered_{j}": float(abs(err) <= 1.96 * 0.25),
                        f"naive_covered_{j}": float(abs(err) <= 1.96 * 0.1)})
        rows.append(row)
    fig = {"name": "t1", "paper": "binagg", **load_entry("figure", "binagg_table1")}
    paths = KINDS[fig["kind"]](pd.DataFrame(rows), fig, tmp_path)
    md = paths[0].read_text()
    assert paths[0].name == "t1_binagg_sim.md" and paths[1].read_text().startswith("% Table 1")
    assert "| coef | Avg. bias | Empirical SD |" in md and "- 1000 replications;" in md
    # every coefficient's row carries the paper's printed theoretical SD and coverage
    for j, (sd, cov) in enumerate([("0.255", "0.953"), ("0.268", "0.950"), ("0.271", "0.947"),
                                   ("0.307", "0.947"), ("0.521", "0.957")]):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| β{j + 1} |"))
        assert f"0.250 ± 0.000 / {sd} (" in line and f" / {cov} (" in line


def test_discretised_codes_decode_to_their_bin() -> None:
    # continuous columns: 32 equal-width bins over the public range, decoded to midpoints
    # (within half a bin width of the value); few-valued columns keep their exact levels
    s = load_uci(rng=np.random.default_rng(0), name="abalone")
    tr = s.train
    Xd, yd = tr.encoding.encode(tr.discrete)
    width = (tr.x_range[:, 1] - tr.x_range[:, 0]) / 32
    sex = [i for i, f in enumerate(tr.feature_names) if f.startswith("Sex_")]
    assert np.array_equal(Xd[:, sex], tr.X[:, sex])
    cont = [i for i in range(tr.d) if i not in sex]
    assert np.all(np.abs(Xd[:, cont] - tr.X[:, cont]) <= width[cont] / 2 + 1e-12)
    assert np.array_equal(yd, tr.y)                    # Rings: 28 distinct values <= 32
    assert all(tr.domain[a] <= 32 for a in tr.domain)
