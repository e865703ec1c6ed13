"""ACS PUMS tasks built with folktables (Ding et al. 2021), as the DD-SSP paper uses them:
survey year 2018, 1-Year, person records, California; the paper's feature lists
(App. G.1, Table 1), which drop folktables' high-cardinality OCCP / POBP (ACSIncome)
and the constant ST (ACSPublicCoverage).

Raw data: the Census Bureau's ``csv_p<st>.zip`` holding ``psam_p<code>.csv``, kept where
folktables puts it, ``data/cache/acs_raw/<year>/1-Year/``. Preparation applies the
folktables task (its row filter, target, N/A -> 0: see below) and then the public discretisation
rules below (values and N/A codes from the 2018 PUMS data dictionary), and writes the
level codes to ``data/cache/acs_<task>_<state>_<year>/`` with sha256 manifests.

Discretisation (our choice; the paper does not list its bins):
- integers kept as levels over a fixed range (AGEP, SCHL, WKHP);
- categorical codes as in the data dictionary, N/A last for one-hot attributes and
  first for scalar ones (so the scalar order stays monotone). folktables' tasks declare
  ``postprocess=lambda x: np.nan_to_num(x, -1)``, whose second positional argument is
  ``copy``, so N/A becomes 0.0, not -1; no column coded here uses 0 as a value (RELP and
  AGEP do, but are never N/A), so 0 is read as N/A, which is what the authors' folktables
  data held too;
- PINCP (ACSPublicCoverage feature; <= 30,000 by the task filter) in 11 bins with edges
  0, 3000, ..., 30000; targets binary as folktables defines them (PINCP > 50,000;
  PUBCOV == 1).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dpbench.data import prepared
from dpbench.data.base import Split
from dpbench.data.discretise import discretise_frame
from dpbench.data.files import DataError

_BIN = {"codes": [1, 2]}
_BIN_NA = {"codes": [0, 1, 2]}      # scalar-encoded: N/A (0 after folktables) first


def _cat(*values: int) -> dict[str, list[int]]:
    """One-hot attribute: data-dictionary codes, N/A (0 after folktables) last (the first
    level is dropped)."""
    return {"codes": [*values, 0]}


RULES: dict[str, dict[str, dict[str, Any]]] = {
    "ACSIncome": {
        "AGEP": {"range": [17, 96]},
        "COW": _cat(*range(1, 10)),
        "SCHL": {"range": [1, 24]},
        "MAR": _cat(*range(1, 6)),
        "RELP": _cat(*range(0, 18)),
        "WKHP": {"range": [1, 99]},
        "SEX": _BIN,
        "RAC1P": _cat(*range(1, 10)),
        "PINCP": {"codes": [0, 1]},          # folktables target: PINCP > 50000
    },
    "ACSPublicCoverage": {
        "AGEP": {"range": [0, 64]},
        "SCHL": {"range": [0, 24]},          # 0 = N/A (under 3 years)
        "MAR": _cat(*range(1, 6)),
        "SEX": _BIN,
        "DIS": _BIN,
        "ESP": _cat(*range(1, 9)),
        "CIT": _cat(*range(1, 6)),
        "MIG": _cat(1, 2, 3),
        "MIL": _cat(1, 2, 3, 4),
        "ANC": _cat(1, 2, 3, 4, 8),
        "NATIVITY": _BIN,
        "DEAR": _BIN,
        "DEYE": _BIN,
        "DREM": _BIN_NA,
        "PINCP": {"bins": list(range(0, 30001, 3000))},
        "ESR": _cat(*range(1, 7)),
        "FER": _BIN_NA,
        "RAC1P": _cat(*range(1, 10)),
        "PUBCOV": {"codes": [0, 1]},         # folktables target: PUBCOV == 1
    },
}
TASKS = tuple(RULES)
DATASET_NAMES = {"ACSIncome": "acs_income", "ACSPublicCoverage": "acs_public_coverage"}


def _problem(task: str) -> Any:
    import folktables

    if task not in RULES:
        raise ValueError(f"ACS task {task!r} unknown; valid: {', '.join(TASKS)}")
    return getattr(folktables, task)


def raw_root() -> Path:
    return prepared.cache_path("acs_raw")


def pums_file(year: int, state: str) -> tuple[Path, str]:
    """Where folktables expects the person file, and the Census URL of its zip."""
    from folktables.load_acs import _STATE_CODES

    if state not in _STATE_CODES:
        raise ValueError(f"state {state!r} unknown; valid: {', '.join(sorted(_STATE_CODES))}")
    path = raw_root() / str(year) / "1-Year" / f"psam_p{_STATE_CODES[state]}.csv"
    url = (f"https://www2.census.gov/programs-surveys/acs/data/pums/{year}/1-Year/"
           f"csv_p{state.lower()}.zip")
    return path, url


def prepared_name(task: str, year: int, state: str) -> str:
    return f"acs_{task}_{state}_{year}"


def prepare_acs(task: str, *, year: int = 2018, state: str = "CA",
                download_raw: bool = False) -> Path:
    """Build data/cache/acs_<task>_<state>_<year>/ from the raw PUMS file."""
    from folktables import ACSDataSource

    problem = _problem(task)
    path, url = pums_file(year, state)
    if not path.exists():
        if not download_raw:
            raise prepared.missing_raw(DATASET_NAMES[task], f"{path.name} (inside the zip)",
                                       url, path)
        zpath = prepared.download(url, path.with_name(f"csv_p{state.lower()}.zip"))
        with zipfile.ZipFile(zpath) as zf:
            zf.extract(path.name, path.parent)
    raw_sha = prepared.check_pinned(path)
    source = ACSDataSource(survey_year=str(year), horizon="1-Year", survey="person",
                           root_dir=str(raw_root()))
    data = source.get_data(states=[state], download=False)
    features, label, _ = problem.df_to_pandas(data)
    rules = RULES[task]
    target = problem.target
    table = features.assign(**{target: np.asarray(label).reshape(-1).astype(int)})
    codes, domain = discretise_frame(table, rules)
    return prepared.write_prepared(prepared_name(task, year, state), codes, domain,
                          {"source": url, "raw_file": path.name, "raw_sha256": raw_sha,
                           "folktables_task": task, "rows": int(len(codes))})


def load_acs(*, rng: np.random.Generator, task: str, year: int = 2018, state: str = "CA",
             download: bool = False, **params: Any) -> Split:
    """Loader for ``conf/dataset/acs_*.yaml``: prepares the cache on first use.

    Offline with neither the prepared cache nor the raw file present, this fails at
    once with a one-line error naming the Census URL and where to put the file.
    """
    import pandas as pd

    _problem(task)
    name = prepared_name(task, year, state)
    if not prepared.is_prepared(name):
        try:
            prepare_acs(task, year=year, state=state, download_raw=download)
        except (KeyError, pd.errors.ParserError) as exc:
            raise DataError(f"{pums_file(year, state)[0]} is not a usable PUMS person file "
                            f"({exc})") from None
    return prepared.load_prepared(rng=rng, name=name, target=_problem(task).target,
                         **params)
