"""Fire and Taxi (DD-SSP paper, App. G.1) prepared from their public sources.

Fire (paper: Ridgeway et al. 2021, the 2018 NIST DP challenge data): San Francisco
Fire Department Calls for Service from DataSF (dataset nuek-vuh3), restricted to calls
received in 2016 as in the challenge's competitor pack (the paper has 305,119 rows), with
the paper's 15 columns. Every column is categorical in the raw export; levels are the
sorted distinct values ("NA" for blanks), which is how the challenge coded them too
(its integer codes themselves were assigned in another order, so Priority's numeric
order differs from the paper's).

Taxi (paper: Gregoire et al. 2021, SDNist; NYC TLC yellow-cab trip records): one month
of ``yellow_tripdata_<month>.parquet`` from the TLC (the paper does not say which; the
default 2019-01 is our choice), its first 1,048,575 complete rows (the paper's row
count), the paper's 11 columns. Money and distance in 32 equal-width bins over fixed
ranges (values clipped), passenger count as levels 0..6, location IDs as the 265 TLC
zones, VendorID / RatecodeID / payment type as sorted distinct values.

Both are written to data/cache/<name>/ in the vendored format (see prepared.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpbench.data.base import Split
from dpbench.data.discretise import discretise_frame
from dpbench.data.files import DataError
from dpbench.data.prepared import (
    cache_path,
    check_pinned,
    download,
    is_prepared,
    load_prepared,
    missing_raw,
    write_prepared,
)

FIRE_URL = "https://data.sfgov.org/api/views/nuek-vuh3/rows.csv?accessType=DOWNLOAD"
FIRE_COLUMNS = ("ALS Unit", "Battalion", "Call Final Disposition", "Call Type",
                "Call Type Group", "City", "Final Priority", "Fire Prevention District",
                "Neighborhooods - Analysis Boundaries", "Original Priority", "Priority",
                "Station Area", "Supervisor District", "Unit Type", "Zipcode of Incident")
FIRE_DATE = "Received DtTm"

TAXI_URL = "https://d37ci6vzurychx.cloudfront.net/trip-data/yellow_tripdata_{month}.parquet"
TAXI_COLUMNS = {  # TLC parquet name -> the paper's name
    "VendorID": "VendorID", "passenger_count": "passengercount",
    "trip_distance": "tripdistance", "RatecodeID": "RatecodeID",
    "PULocationID": "PULocationID", "DOLocationID": "DOLocationID",
    "payment_type": "paymenttype", "fare_amount": "fareamount", "tip_amount": "tipamount",
    "tolls_amount": "tollsamount", "total_amount": "totalamount",
}
TAXI_RULES: dict[str, dict[str, Any]] = {
    "VendorID": {"sorted": True},
    "passengercount": {"range": [0, 6]},
    "tripdistance": {"equal": [0, 30, 32]},         # miles
    "RatecodeID": {"sorted": True},
    "PULocationID": {"range": [1, 265]},
    "DOLocationID": {"range": [1, 265]},
    "paymenttype": {"sorted": True},
    "fareamount": {"equal": [0, 100, 32]},          # dollars
    "tipamount": {"equal": [0, 20, 32]},
    "tollsamount": {"equal": [0, 20, 32]},
    "totalamount": {"equal": [0, 120, 32]},
}
TAXI_ROWS = 1_048_575


def _raw(name: str, url: str, path: Path, what: str, fetch: bool) -> Path:
    if not path.exists():
        if not fetch:
            raise missing_raw(name, what, url, path)
        download(url, path)
    return path


# ----------------------------------------------------------------------------- Fire
def fire_raw_path() -> Path:
    return cache_path("fire_raw", "Fire_Department_Calls_for_Service.csv")


def prepare_fire(*, year: int = 2016, download_raw: bool = False) -> Path:
    """data/cache/fire_<year>/ from the DataSF export (read in chunks: it is several GB)."""
    import pandas as pd

    path = _raw("fire", FIRE_URL, fire_raw_path(), "the DataSF CSV export", download_raw)
    raw_sha = check_pinned(path)
    parts = []
    try:
        chunks = pd.read_csv(path, usecols=[*FIRE_COLUMNS, FIRE_DATE], dtype=str,
                             keep_default_na=False, chunksize=500_000)
        for chunk in chunks:
            when = pd.to_datetime(chunk[FIRE_DATE], format="%m/%d/%Y %I:%M:%S %p",
                                  errors="coerce")
            if when.isna().all():  # newer exports write ISO timestamps
                when = pd.to_datetime(chunk[FIRE_DATE], format="ISO8601", errors="coerce")
            parts.append(chunk.loc[when.dt.year == year, list(FIRE_COLUMNS)])
    except ValueError as exc:  # usecols not in the header
        raise DataError(f"{path} is not the DataSF fire-calls export ({exc})") from None
    table = pd.concat(parts, ignore_index=True).replace("", "NA")
    if table.empty:
        raise DataError(f"{path} has no calls received in {year}")
    codes, domain = discretise_frame(table, {c: {"sorted": True} for c in FIRE_COLUMNS})
    return write_prepared(f"fire_{year}", codes, domain,
                          {"source": FIRE_URL, "raw_sha256": raw_sha, "year": year,
                           "rows": int(len(codes))})


def load_fire(*, rng: np.random.Generator, year: int = 2016, download: bool = False,
              **params: Any) -> Split:
    """Loader for conf/dataset/remote/fire.yaml (target Priority); prepares on first use."""
    if not is_prepared(f"fire_{year}"):
        prepare_fire(year=year, download_raw=download)
    return load_prepared(rng=rng, name=f"fire_{year}", **params)


# ----------------------------------------------------------------------------- Taxi
def taxi_raw_path(month: str) -> Path:
    return cache_path("taxi_raw", f"yellow_tripdata_{month}.parquet")


def prepare_taxi(*, month: str = "2019-01", n_rows: int = TAXI_ROWS,
                 download_raw: bool = False) -> Path:
    """data/cache/taxi_<month>_<n_rows>/ from a TLC yellow-cab parquet file."""
    import pandas as pd

    url = TAXI_URL.format(month=month)
    path = _raw("taxi", url, taxi_raw_path(month), "the TLC parquet file", download_raw)
    raw_sha = check_pinned(path)
    try:
        table = pd.read_parquet(path, columns=list(TAXI_COLUMNS))
    except (ValueError, KeyError, OSError) as exc:
        raise DataError(f"{path} is not a TLC yellow-trip parquet file ({exc})") from None
    table = table.rename(columns=TAXI_COLUMNS).dropna().head(n_rows)
    codes, domain = discretise_frame(table, TAXI_RULES)
    return write_prepared(f"taxi_{month}_{n_rows}", codes, domain,
                          {"source": url, "raw_sha256": raw_sha, "rows": int(len(codes))})


def load_taxi(*, rng: np.random.Generator, month: str = "2019-01", n_rows: int = TAXI_ROWS,
              download: bool = False, **params: Any) -> Split:
    """Loader for conf/dataset/remote/taxi.yaml (target totalamount); prepares on first use."""
    if not is_prepared(f"taxi_{month}_{n_rows}"):
        prepare_taxi(month=month, n_rows=n_rows, download_raw=download)
    return load_prepared(rng=rng, name=f"taxi_{month}_{n_rows}", **params)
