"""Turning raw columns into level codes 0..m-1 with public, documented rules.

A rule is a small dict (kept next to each dataset's feature list):

- ``{"range": [lo, hi]}``: integers clipped into [lo, hi]; code = value - lo.
- ``{"codes": [v0, v1, ...]}``: code = position of the value in the list (the list
  is the data dictionary's value set; an unlisted value is a DataError).
- ``{"bins": [e1, ..., ek]}``: code = number of edges strictly below the value
  (k + 1 levels: (-inf, e1], (e1, e2], ..., (ek, inf)).
- ``{"equal": [lo, hi, k]}``: k equal-width bins over [lo, hi], values clipped.
- ``{"sorted": true}``: the distinct values present, sorted (the domain then
  comes from the data, as in the NIST / hd-datasets preparations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpbench.data.files import DataError

if TYPE_CHECKING:
    import pandas as pd


RULES = ("range", "codes", "bins", "equal", "sorted")


def discretise(values: pd.Series, rule: Mapping[str, Any]) -> tuple[NDArray, int]:
    """(codes, number of levels) of one column under ``rule``."""
    import pandas as pd

    kind = [k for k in RULES if k in rule]
    if len(kind) != 1:
        raise ValueError(f"discretisation rule {dict(rule)} needs exactly one of {RULES}")
    kind = kind[0]
    spec = rule[kind]
    if kind == "sorted":
        levels = np.sort(values.astype(str).unique())
        return np.searchsorted(levels, values.astype(str).to_numpy()), len(levels)
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    if np.isnan(x).any():
        raise DataError(f"column {values.name!r} has missing or non-numeric values; "
                        "drop or recode them before discretising")
    if kind == "range":
        lo, hi = int(spec[0]), int(spec[1])
        return (np.clip(np.round(x), lo, hi) - lo).astype(np.int64), hi - lo + 1
    if kind == "codes":
        allowed = np.asarray(spec, dtype=float)
        hit = x[:, None] == allowed[None, :]
        if not hit.any(axis=1).all():
            bad = sorted(set(x[~hit.any(axis=1)].tolist()))[:5]
            raise DataError(f"column {values.name!r} has values {bad} outside its code list "
                            f"{list(spec)}")
        return hit.argmax(axis=1).astype(np.int64), len(allowed)
    if kind == "bins":
        edges = np.asarray(spec, dtype=float)
        return np.searchsorted(edges, x, side="left").astype(np.int64), len(edges) + 1
    lo, hi, k = float(spec[0]), float(spec[1]), int(spec[2])
    codes = np.floor((np.clip(x, lo, hi) - lo) / (hi - lo) * k)
    return np.minimum(codes, k - 1).astype(np.int64), k


def discretise_frame(frame: pd.DataFrame,
                     rules: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, dict[str, int]]:
    """Codes of every ruled column (in the rules' order) and the domain sizes."""
    import pandas as pd

    missing = [c for c in rules if c not in frame.columns]
    if missing:
        raise DataError(f"raw table lacks columns {missing}; has {list(frame.columns)[:20]}")
    out, domain = {}, {}
    for col, rule in rules.items():
        out[col], domain[col] = discretise(frame[col], rule)
    return pd.DataFrame(out), domain
