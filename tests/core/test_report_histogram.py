"""``histogram`` kind: pooling over trials, stored or spec edges, written files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpbench.methods.classification.objpert import MARGIN_EDGES, ObjPert, margin_histogram
from dpbench.report.kinds.histogram import histogram, nearest_epsilon, summed_counts

EDGES = {"start": -30, "stop": 30, "num": 121}
COUNTS = "info.margin_hist"


def _frame(with_edges: bool) -> pd.DataFrame:
    rows = []
    cells = [(1.0, 0, [-7.0, 0.1, 0.2, 5.9]), (1.0, 1, [6.5, 100.0]), (0.1, 0, [0.0] * 3)]
    for eps, trial, margins in cells:
        row = {"method": "m", "epsilon": eps, "dataset_label": "Toy", "trial": trial,
               "info.margin_hist": json.dumps(margin_histogram(np.array(margins)))}
        if with_edges:
            row["info.margin_edges"] = json.dumps(MARGIN_EDGES.tolist())
        rows.append(row)
    return pd.DataFrame(rows)


def test_counts_pool_trials_and_clip_outliers():
    c = summed_counts(_frame(False), "m", 1.0, COUNTS)["Toy"]
    assert c.sum() == 6 and len(c) == len(MARGIN_EDGES) - 1
    assert c[-1] == 1  # 100 clipped into the last bin
    centers = (MARGIN_EDGES[:-1] + MARGIN_EDGES[1:]) / 2
    # within +-6: 0.1, 0.2, 5.9 (bin centres inside) -> 3 of 6
    assert c[np.abs(centers) <= 6].sum() == 3
    assert nearest_epsilon(_frame(False), "m", 0.7, COUNTS) == pytest.approx(1.0)


@pytest.mark.parametrize("with_edges", [True, False])
def test_builder_writes_png_pdf_and_table(tmp_path, with_edges):
    fig = {"name": "fig4", "method": "m", "epsilon": 1.0, "column": COUNTS}
    if not with_edges:
        fig["edges"] = EDGES
    paths = histogram(_frame(with_edges), fig, tmp_path)
    assert {p.suffix for p in paths} == {".png", ".pdf", ".md", ".tex"}
    assert "| Toy | 0.5000 | 6 |" in (tmp_path / "fig4.md").read_text()
    assert r"Toy & 0.5000 & 6 \\" in (tmp_path / "fig4.tex").read_text()


def test_stored_edges_match_the_spec_fallback(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    histogram(_frame(True), {"name": "f", "method": "m", "column": COUNTS}, a)
    histogram(_frame(False), {"name": "f", "method": "m", "column": COUNTS, "edges": EDGES}, b)
    for suffix in (".png", ".pdf", ".md", ".tex"):
        assert (a / f"f{suffix}").read_bytes() == (b / f"f{suffix}").read_bytes()
    with pytest.raises(ValueError, match="edges"):
        histogram(_frame(False), {"name": "f", "method": "m", "column": COUNTS}, tmp_path)


def test_objpert_info_carries_its_edges():
    m = ObjPert.__new__(ObjPert)
    m.ridge_, m.sigma_, m.margin_in_6_, m.margin_counts_ = 1.0, 1.0, 0.5, [0] * 120
    assert json.loads(m.info()["margin_edges"]) == MARGIN_EDGES.tolist()
