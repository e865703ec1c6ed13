"""Small files in the real raw formats of the datasets that cannot ship (ACS PUMS person
CSV, DataSF fire-calls CSV, TLC yellow-cab parquet; the query-release paper's processed IPUMS
ACS extract), written where the loaders look for them under dpbench's data root. Used by the
loader tests and the experiments' smoke tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.data import acs, remote
from dpbench.data.files import data_root

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


def fake_taxi(n: int = 40, seed: int = 1) -> pd.DataFrame:
    """Rows shaped like yellow_tripdata_2019-01.parquet (TLC column names and types)."""
    r = np.random.default_rng(seed)
    return pd.DataFrame({
        "VendorID": r.integers(1, 3, n), "tpep_pickup_datetime": pd.Timestamp("2019-01-01"),
        "passenger_count": r.integers(0, 9, n).astype(float),
        "trip_distance": r.uniform(0, 40, n), "RatecodeID": r.choice([1.0, 2.0, 5.0], n),
        "store_and_fwd_flag": "N", "PULocationID": r.integers(1, 266, n),
        "DOLocationID": r.integers(1, 266, n), "payment_type": r.integers(1, 5, n),
        "fare_amount": r.uniform(-5, 150, n), "extra": 0.5, "mta_tax": 0.5,
        "tip_amount": r.uniform(0, 30, n), "tolls_amount": r.uniform(0, 10, n),
        "improvement_surcharge": 0.3, "total_amount": r.uniform(0, 200, n),
    })


def write_pums(frame: pd.DataFrame, year: int = 2018, state: str = "CA") -> Path:
    """Put a person file where folktables (and dpbench.data.acs) expect it."""
    path, _ = acs.pums_file(year, state)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def write_fire(frame: pd.DataFrame) -> Path:
    path = remote.fire_raw_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def write_taxi(frame: pd.DataFrame, month: str = "2019-01") -> Path:
    path = remote.taxi_raw_path(month)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path)
    return path


def fake_ipums_extract(attributes: list[str], n: int = 90, seed: int = 0,
                       domain: dict[str, int] | None = None) -> tuple[pd.DataFrame,
                                                                     dict[str, int]]:
    """Rows shaped like iterative-dp's processed IPUMS file (Util/process_data/
    process_ipums.py output, e.g. acs_2018_1yr.csv): a STATE column (PA, CA, OH), every other
    column label-encoded 0..m-1 (AGEORIG too), and its domain json's dict (drawn unless
    given: the processing encodes every year of an extract on one domain)."""
    r = np.random.default_rng(seed)
    if domain is None:
        domain = {a: int(r.integers(2, 5)) for a in [*attributes, "AGEORIG"]}
    states = ("PA", "CA", "OH")
    frame = pd.DataFrame({"STATE": r.choice(list(states), n)})
    for a, m in domain.items():
        frame[a] = r.integers(0, m, n)
    return frame, domain


def write_ipums_extract(frame: pd.DataFrame, domain: dict[str, int],
                        name: str = "acs_2018_1yr") -> Path:
    """Put a processed extract and its domain json where conf/dataset/qr/qr_acs*.yaml look."""
    out = data_root() / "cache" / "itdp_acs"
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}-domain.json").write_text(json.dumps(domain))
    return out / f"{name}.csv"
