"""folktables ACS loader on a tiny fake PUMS person file (no network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _data_root import tmp_data_root  # noqa: F401  (fixture used below)

from dpbench.data import acs
from dpbench.data.files import DataError, data_root

pytestmark = pytest.mark.usefixtures("tmp_data_root")

COLUMNS = ["RT", "SERIALNO", "SPORDER", "PUMA", "ST", "PWGTP", "AGEP", "COW", "SCHL", "MAR",
           "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P", "PINCP", "DIS", "ESP", "CIT", "MIG",
           "MIL", "ANC", "NATIVITY", "DEAR", "DEYE", "DREM", "ESR", "FER", "PUBCOV"]


def fake_pums(n: int = 80, seed: int = 0) -> pd.DataFrame:
    """Rows shaped like psam_p06.csv (2018): codes from the data dictionary, blanks = N/A."""
    r = np.random.default_rng(seed)
    age = r.integers(0, 90, n)
    df = pd.DataFrame({
        "RT": "P", "SERIALNO": [f"2018GQ{1000000 + i:07d}" for i in range(n)],
        "SPORDER": 1, "PUMA": 3701, "ST": 6, "PWGTP": r.integers(1, 200, n), "AGEP": age,
        "COW": r.integers(1, 10, n).astype(float), "SCHL": r.integers(1, 25, n).astype(float),
        "MAR": r.integers(1, 6, n), "OCCP": r.integers(10, 9900, n).astype(float),
        "POBP": r.integers(1, 555, n), "RELP": r.integers(0, 18, n),
        "WKHP": r.integers(1, 99, n).astype(float), "SEX": r.integers(1, 3, n),
        "RAC1P": r.integers(1, 10, n), "PINCP": r.choice([-5000, 0, 2000, 15000, 29000, 60000,
                                                          120000], n).astype(float),
        "DIS": r.integers(1, 3, n), "ESP": r.integers(1, 9, n).astype(float),
        "CIT": r.integers(1, 6, n), "MIG": r.integers(1, 4, n).astype(float),
        "MIL": r.integers(1, 5, n).astype(float), "ANC": r.choice([1, 2, 3, 4, 8], n),
        "NATIVITY": r.integers(1, 3, n), "DEAR": r.integers(1, 3, n),
        "DEYE": r.integers(1, 3, n), "DREM": r.integers(1, 3, n).astype(float),
        "ESR": r.integers(1, 7, n).astype(float), "FER": r.integers(1, 3, n).astype(float),
        "PUBCOV": r.integers(1, 3, n),
    })
    young = age < 16
    for col in ("COW", "WKHP", "ESR", "FER", "MIL", "ESP", "DREM"):  # N/A by universe
        df.loc[young, col] = np.nan
    df.loc[age < 3, "SCHL"] = np.nan
    df.loc[age < 15, "PINCP"] = np.nan
    return df[COLUMNS]



def _write(root, frame):
    d = root / "cache" / "acs_raw" / "2018" / "1-Year"
    d.mkdir(parents=True)
    frame.to_csv(d / "psam_p06.csv", index=False)


def test_missing_raw_fails_at_once_with_url_and_path():
    with pytest.raises(DataError) as err:
        acs.load_acs(rng=np.random.default_rng(0), task="ACSIncome", n_test=5)
    msg = str(err.value)
    assert "\n" not in msg
    assert "www2.census.gov/programs-surveys/acs/data/pums/2018/1-Year/csv_pca.zip" in msg
    assert "cache/acs_raw/2018/1-Year/psam_p06.csv" in msg


def test_income_task_filters_discretises_and_caches():
    raw = fake_pums()
    _write(data_root(), raw)
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
    raw = fake_pums(seed=1)
    _write(data_root(), raw)
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
    # ESR is N/A (-1 after folktables) for the under-16s: the last one-hot level (index 6)
    assert (full["ESR"] == 6).sum() == (kept.AGEP < 16).sum()
    # target PUBCOV == 1
    assert full["PUBCOV"].sum() == (kept.PUBCOV == 1).sum()


def test_unknown_task_rejected():
    with pytest.raises(ValueError, match="ACSIncome"):
        acs.load_acs(rng=np.random.default_rng(0), task="ACSTravel")
