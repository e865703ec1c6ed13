"""A fixture pointing dpbench's data root at a temporary folder (loader tests)."""

from __future__ import annotations

import pytest

from dpbench.data.discrete import _read_discrete


@pytest.fixture()
def tmp_data_root(tmp_path, monkeypatch):
    """DPBENCH_DATA_DIR = tmp_path, with the discrete-table cache emptied around the test."""
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(tmp_path))
    _read_discrete.cache_clear()
    yield tmp_path
    _read_discrete.cache_clear()
