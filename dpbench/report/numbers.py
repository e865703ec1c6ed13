"""A paper's printed numbers (``papers/<paper>/numbers.csv``) and how far ours are from them.

One row a printed number: ``table, dataset, method, metric, stat, epsilon, value, digits,
comparable, note``, keyed by our dataset and method ids; ``digits`` is the number of
printed decimals, ``comparable: false`` marks a stand-in (proxy) dataset. Both the
``paper_table`` figure kind and the ``matches_paper`` claim kind read it here.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd


def read_numbers(path: Path) -> pd.DataFrame:
    """numbers.csv with value as float, digits as int (3 when blank), comparable as bool and
    epsilon as float (nan when blank); the other columns as text."""
    nums = pd.read_csv(path, dtype=str, keep_default_na=False)
    return nums.assign(
        value=nums["value"].astype(float),
        digits=[int(d) if d.strip() else 3 for d in nums["digits"]],
        comparable=nums["comparable"].str.strip().str.lower().isin(["true", "1", "yes"]),
        epsilon=[float(e) if e.strip() else math.nan for e in nums["epsilon"]])


def z_value(ours: float, se: float, paper: float, digits: int) -> float:
    """(ours - paper) / sqrt(se^2 + r^2), r = 10^-digits / sqrt(12): the sd of the paper's
    rounding to its printed decimals, so a deterministic result (se = 0) that matches the
    printed value has |z| <= 1.7."""
    return (ours - paper) / math.sqrt(se**2 + (10.0**-digits) ** 2 / 12)


def sd_se(values: pd.Series | np.ndarray) -> tuple[float, float]:
    """Sample sd (ddof 1) and its standard error sd / sqrt(2 (n - 1))."""
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v, ddof=1))
    return sd, sd / math.sqrt(2 * (v.size - 1))
