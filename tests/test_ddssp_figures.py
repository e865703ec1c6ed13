"""Fig. 4 builder: histogram pooling over trials and written files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpbench.methods.classification.objpert import MARGIN_EDGES, margin_histogram
from dpbench.report.ddssp_figures import margin_counts, nearest_epsilon, objpert_margins


def _frame() -> pd.DataFrame:
    rows = []
    for trial, margins in enumerate([np.array([-7.0, 0.1, 0.2, 5.9]), np.array([6.5, 100.0])]):
        rows.append({"method": "objpert", "epsilon": 1.0, "dataset_label": "Toy", "trial": trial,
                     "info.margin_hist": json.dumps(margin_histogram(margins))})
    rows.append({"method": "objpert", "epsilon": 0.1, "dataset_label": "Toy", "trial": 0,
                 "info.margin_hist": json.dumps(margin_histogram(np.zeros(3)))})
    return pd.DataFrame(rows)


def test_counts_pool_trials_and_clip_outliers():
    c = margin_counts(_frame(), "objpert", 1.0)["Toy"]
    assert c.sum() == 6 and len(c) == len(MARGIN_EDGES) - 1
    assert c[-1] == 1  # 100 clipped into the last bin
    centers = (MARGIN_EDGES[:-1] + MARGIN_EDGES[1:]) / 2
    # within +-6: 0.1, 0.2, 5.9 (bin centres inside) -> 3 of 6
    assert c[np.abs(centers) <= 6].sum() == 3
    assert nearest_epsilon(_frame(), "objpert", 0.7) == pytest.approx(1.0)


def test_builder_writes_png_pdf_and_table(tmp_path):
    paths = objpert_margins(_frame(), {"name": "fig4", "epsilon": 1.0}, tmp_path)
    assert {p.suffix for p in paths} == {".png", ".pdf", ".md", ".tex"}
    assert "| Toy | 0.5000 | 6 |" in (tmp_path / "fig4.md").read_text()
    assert r"Toy & 0.5000 & 6 \\" in (tmp_path / "fig4.tex").read_text()
