"""Fire (DataSF CSV) and Taxi (TLC parquet) loaders on tiny local files (no network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _data_root import tmp_data_root  # noqa: F401  (fixture used below)
from raw_fixtures import fake_fire, fake_taxi, write_fire, write_taxi

from dpbench.data import remote
from dpbench.data.files import DataError, data_root

pytestmark = pytest.mark.usefixtures("tmp_data_root")


def test_fire_missing_raw_names_url_and_path():
    with pytest.raises(DataError) as err:
        remote.load_fire(rng=np.random.default_rng(0), target="Priority")
    msg = str(err.value)
    assert "\n" not in msg and "data.sfgov.org/api/views/nuek-vuh3" in msg
    assert "cache/fire_raw/Fire_Department_Calls_for_Service.csv" in msg


def test_fire_keeps_2016_calls_and_codes_sorted_levels():
    raw = fake_fire()
    write_fire(raw)
    split = remote.load_fire(rng=np.random.default_rng(0), target="Priority", n_test=5,
                             categorical=["Call Type", "City"], n_train_max=None)
    kept = raw[raw["Received DtTm"].str[6:10] == "2016"]
    assert split.train.n + split.test.n == len(kept)
    domain = json.loads((data_root() / "cache/fire_2016/domain.json").read_text())
    assert list(domain) == list(remote.FIRE_COLUMNS)
    full = pd.concat([split.train.discrete, split.test.discrete])
    # City levels sorted: "NA" (blank) < "San Francisco" < "Treasure Isla"
    assert (full["City"] == 0).sum() == (kept["City"] == "").sum()
    assert (full["Priority"] == 2).sum() == (kept["Priority"] == "E").sum()


def test_taxi_first_rows_bins_and_zones():
    raw = fake_taxi()
    raw.loc[3, "passenger_count"] = np.nan           # incomplete row: dropped
    write_taxi(raw)
    split = remote.load_taxi(rng=np.random.default_rng(0), n_rows=30, target="totalamount",
                             n_test=5, n_train_max=None,
                             categorical=["RatecodeID", "PULocationID", "DOLocationID",
                                          "paymenttype"])
    assert split.train.n + split.test.n == 30
    domain = json.loads((data_root() / "cache/taxi_2019-01_30/domain.json").read_text())
    assert domain["PULocationID"] == 265 and domain["totalamount"] == 32
    assert domain["passengercount"] == 7
    kept = raw.dropna().head(30)
    full = pd.concat([split.train.discrete, split.test.discrete])
    # total $200 clipped to 120 -> last bin; $0-3.75 -> bin 0
    assert (full["totalamount"] == 31).sum() == (kept["total_amount"] >= 120 - 120 / 32).sum()
    assert sorted(full["PULocationID"]) == sorted(kept["PULocationID"] - 1)


def test_taxi_missing_raw():
    with pytest.raises(DataError, match="yellow_tripdata_2019-01.parquet"):
        remote.load_taxi(rng=np.random.default_rng(0), target="totalamount")
