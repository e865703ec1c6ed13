"""folktables ACS loader on a tiny fake PUMS person file (no network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _data_root import tmp_data_root  # noqa: F401  (fixture used below)
from raw_fixtures import fake_pums, write_pums

from dpbench.data import acs
from dpbench.data.files import DataError, data_root

pytestmark = pytest.mark.usefixtures("tmp_data_root")


def test_missing_raw_fails_at_once_with_url_and_path():
    with pytest.raises(DataError) as err:
        acs.load_acs(rng=np.random.default_rng(0), task="ACSIncome", n_test=5)
    msg = str(err.value)
    assert "\n" not in msg
    assert "www2.census.gov/programs-surveys/acs/data/pums/2018/1-Year/csv_pca.zip" in msg
    assert "cache/acs_raw/2018/1-Year/psam_p06.csv" in msg


def test_income_task_filters_discretises_and_caches():
    raw = fake_pums()
    write_pums(raw)
    split = acs.load_acs(rng=np.random.default_rng(0), task="ACSIncome", n_test=5,
                         target_kind="binary_pm1", categorical=["COW", "MAR", "RELP", "RAC1P"])
    kept = raw[(raw.AGEP > 16) & (raw.PINCP > 100) & (raw.WKHP > 0) & (raw.PWGTP >= 1)]
    assert split.train.n + split.test.n == len(kept)
    cache = data_root() / "cache" / "acs_ACSIncome_CA_2018"
    domain = json.loads((cache / "domain.json").read_text())
    assert list(domain) == ["AGEP", "COW", "SCHL", "MAR", "RELP", "WKHP", "SEX", "RAC1P",
                            "PINCP"]
    assert domain["AGEP"] == 80 and domain["COW"] == 10 and domain["PINCP"] == 2
    manifest = json.loads((cache / "MANIFEST.json").read_text())
    assert manifest["provenance"]["rows"] == len(kept)
    # target: folktables' PINCP > 50000, as +-1
    full = pd.concat([split.train.discrete, split.test.discrete])
    assert full["PINCP"].sum() == (kept.PINCP > 50000).sum()
    assert set(np.unique(split.train.y)) <= {-1.0, 1.0}
    # AGEP kept as a scalar level age - 17, rescaled to [-1, 1]
    assert full["AGEP"].min() >= 0 and full["AGEP"].max() <= 79
    # the raw file is pinned; changing it afterwards is detected on the next preparation
    assert (data_root() / "cache/acs_raw/2018/1-Year/psam_p06.csv.sha256").exists()


def test_public_coverage_na_codes_and_income_bins():
    raw = fake_pums(n=2000, seed=1)
    raw.loc[:19, "MIG"] = np.nan                     # N/A (under 1 year old in the PUMS)
    write_pums(raw)
    split = acs.load_acs(rng=np.random.default_rng(0), task="ACSPublicCoverage", n_test=5,
                         target_kind="binary_pm1",
                         categorical=["MAR", "ESP", "CIT", "MIG", "MIL", "ANC", "ESR", "FER",
                                      "RAC1P"])
    kept = raw[(raw.AGEP < 65) & (raw.PINCP <= 30000)]
    full = pd.concat([split.train.discrete, split.test.discrete])
    assert len(full) == len(kept)
    # PINCP bins: <=0 -> 0, (0,3000] -> 1, (12000,15000] -> 5, (27000,30000] -> 10
    counts = full["PINCP"].value_counts().to_dict()
    expect = {0: (kept.PINCP <= 0).sum(), 1: (kept.PINCP == 2000).sum(),
              5: (kept.PINCP == 15000).sum(), 10: (kept.PINCP == 29000).sum()}
    assert {k: v for k, v in expect.items() if v} == counts
    # folktables turns N/A into 0 (np.nan_to_num(x, -1): -1 is `copy`); one-hot N/A is the
    # last level: ESR (index 6) for the under-16s, MIG (index 3), ESP (index 8)
    assert (kept.AGEP < 16).sum() > 0 and kept.MIG.isna().sum() > 0
    assert (full["ESR"] == 6).sum() == (kept.AGEP < 16).sum()
    assert (full["MIG"] == 3).sum() == kept.MIG.isna().sum()
    assert (full["ESP"] == 8).sum() == kept.ESP.isna().sum()
    # target PUBCOV == 1
    assert full["PUBCOV"].sum() == (kept.PUBCOV == 1).sum()


def test_unknown_task_rejected():
    with pytest.raises(ValueError, match="ACSIncome"):
        acs.load_acs(rng=np.random.default_rng(0), task="ACSTravel")
