"""Fire (DataSF CSV) and Taxi (TLC parquet) loaders on tiny local files (no network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _data_root import tmp_data_root  # noqa: F401  (fixture used below)

from dpbench.data import remote
from dpbench.data.files import DataError, data_root

pytestmark = pytest.mark.usefixtures("tmp_data_root")


def fake_fire(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Rows shaped like the DataSF export: its header (typo included), text values."""
    r = np.random.default_rng(seed)
    pick = lambda *v: r.choice(list(v), n)  # noqa: E731
    years = pick("2015", "2016", "2016", "2017")
    df = pd.DataFrame({
        "Call Number": r.integers(10**8, 10**9, n), "Unit ID": pick("E01", "M14", "T03"),
        "Call Type": pick("Medical Incident", "Alarms", "Structure Fire"),
        "Received DtTm": [f"03/{d:02d}/{y} 01:02:03 PM" for d, y in
                          zip(r.integers(1, 28, n), years, strict=True)],
        "Call Final Disposition": pick("Code 2 Transport", "Fire", "Other"),
        "City": pick("San Francisco", "Treasure Isla", ""), "Zipcode of Incident":
            pick("94102", "94103", "94110"), "Battalion": pick("B01", "B02", "B10"),
        "Station Area": pick("01", "03", "36"), "Original Priority": pick("2", "3", "E"),
        "Priority": pick("2", "3", "E"), "Final Priority": pick("2", "3"),
        "ALS Unit": pick("true", "false"), "Call Type Group": pick("Fire", "Alarm", ""),
        "Unit Type": pick("ENGINE", "MEDIC", "TRUCK"),
        "Fire Prevention District": pick("1", "2", "None"),
        "Supervisor District": pick("1", "6", "9"),
        "Neighborhooods - Analysis Boundaries": pick("Mission", "Tenderloin", "Nob Hill"),
    })
    return df


def test_fire_missing_raw_names_url_and_path():
    with pytest.raises(DataError) as err:
        remote.load_fire(rng=np.random.default_rng(0), target="Priority")
    msg = str(err.value)
    assert "\n" not in msg and "data.sfgov.org/api/views/nuek-vuh3" in msg
    assert "cache/fire_raw/Fire_Department_Calls_for_Service.csv" in msg


def test_fire_keeps_2016_calls_and_codes_sorted_levels():
    raw = fake_fire()
    path = remote.fire_raw_path()
    path.parent.mkdir(parents=True)
    raw.to_csv(path, index=False)
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
    r = np.random.default_rng(1)
    n = 40
    raw = pd.DataFrame({
        "VendorID": r.integers(1, 3, n), "tpep_pickup_datetime": pd.Timestamp("2019-01-01"),
        "passenger_count": r.integers(0, 9, n).astype(float),
        "trip_distance": r.uniform(0, 40, n), "RatecodeID": r.choice([1.0, 2.0, 5.0], n),
        "store_and_fwd_flag": "N", "PULocationID": r.integers(1, 266, n),
        "DOLocationID": r.integers(1, 266, n), "payment_type": r.integers(1, 5, n),
        "fare_amount": r.uniform(-5, 150, n), "extra": 0.5, "mta_tax": 0.5,
        "tip_amount": r.uniform(0, 30, n), "tolls_amount": r.uniform(0, 10, n),
        "improvement_surcharge": 0.3, "total_amount": r.uniform(0, 200, n),
    })
    raw.loc[3, "passenger_count"] = np.nan           # incomplete row: dropped
    path = remote.taxi_raw_path("2019-01")
    path.parent.mkdir(parents=True)
    raw.to_parquet(path)
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
