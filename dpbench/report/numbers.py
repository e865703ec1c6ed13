"""A paper's printed numbers (``papers/<paper>/numbers.csv``) and how far ours are from them.

One row a printed number: ``table, dataset, method, metric, stat, epsilon, value, digits,
comparable, note`` and, optionally, ``se``, ``k`` and ``deterministic``, keyed by our
dataset and method ids; ``digits`` is the number of printed decimals, ``comparable: false``
marks a stand-in (proxy) dataset. ``se`` is the standard error the paper prints beside the
number (blank: none printed); ``k`` is how many independent repetitions the printed number
is over, each the size of one of our trials (blank: unknown, the paper's number then counts
as exact up to its rounding); ``deterministic: true`` marks a computed quantity with no
sampling noise (one trial is its value). Both the ``paper_table`` figure kind and the
``matches_paper`` claim kind read it here and compare with :func:`compare`, so a table cell
and a claim row give the same z or the same "no verdict".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MIN_TRIALS = 3
"""Fewer trials than this in a cell: no z and no verdict. A trial is one row of the results
frame (one fit of the method); what a task averages within a trial (e.g. its re-splits of
the same fit) counts once, since those values are not independent."""

NO_VERDICT = f"fewer than {MIN_TRIALS} trials: no verdict"

Z_NOTE = ("z = (ours - paper) / sqrt(s.e. ours^2 + s.e. paper^2 + r^2), r = 10^-digits / "
          "sqrt(12) (the paper's rounding); s.e. paper = the one it prints or, where it "
          "prints a mean over k trials, our per-trial sd / sqrt(k) (k per number: the "
          "paper's numbers.csv), else 0; s.e. ours over trials (one per fit; what a trial "
          f"averages, e.g. its re-splits, counts once); {NO_VERDICT} (no z) in a cell "
          f"with fewer than {MIN_TRIALS} trials, unless the number is deterministic.")


def _floats(nums: pd.DataFrame, column: str) -> list[float]:
    if column not in nums:
        return [math.nan] * len(nums)
    return [float(v) if v.strip() else math.nan for v in nums[column]]


def _flags(nums: pd.DataFrame, column: str) -> pd.Series:
    if column not in nums:
        return pd.Series(False, index=nums.index)
    return nums[column].str.strip().str.lower().isin(["true", "1", "yes"])


def read_numbers(path: Path) -> pd.DataFrame:
    """numbers.csv with value as float, digits as int (3 when blank), comparable and
    deterministic as bool (deterministic False when absent), epsilon, se and k as float
    (nan when blank or absent); the other columns as text."""
    nums = pd.read_csv(path, dtype=str, keep_default_na=False)
    return nums.assign(
        value=nums["value"].astype(float),
        digits=[int(d) if d.strip() else 3 for d in nums["digits"]],
        comparable=_flags(nums, "comparable"),
        deterministic=_flags(nums, "deterministic"),
        epsilon=_floats(nums, "epsilon"), se=_floats(nums, "se"), k=_floats(nums, "k"))


def z_value(ours: float, se: float, paper: float, digits: int, paper_se: float = 0.0) -> float:
    """(ours - paper) / sqrt(se^2 + paper_se^2 + r^2), r = 10^-digits / sqrt(12): the sd of
    the paper's rounding to its printed decimals, so a deterministic result (both s.e. 0)
    that matches the printed value has |z| <= 1.7."""
    return (ours - paper) / math.sqrt(se**2 + paper_se**2 + (10.0**-digits) ** 2 / 12)


def paper_se(se: float, n: int, printed_se: float = math.nan, k: float = math.nan) -> float:
    """The paper's s.e.: the one it prints; else, for a number over ``k`` trials, ours
    scaled from our ``n`` trials to its ``k``, se * sqrt(n / k) (for a mean: our per-trial
    sd / sqrt(k); for a share the binomial s.e. at k; for an sd about its s.e.); else 0."""
    if math.isfinite(printed_se):
        return float(printed_se)
    if math.isfinite(k) and k > 0 and math.isfinite(se) and n > 0:
        return se * math.sqrt(n / k)
    return 0.0


@dataclass(frozen=True)
class Gap:
    """How far ours is from one printed number: ``z`` (None: no verdict), the two s.e.
    behind it and ``text`` (the z as printed, or why there is none)."""

    z: float | None
    se: float
    paper_se: float
    text: str


def compare(ours: float, se: float, n: int, row: Mapping[str, Any]) -> Gap:
    """Ours (a statistic over ``n`` trials with s.e. ``se``; nan when the statistic has
    none, e.g. a median, which then counts as exact) against a numbers.csv ``row``
    (``read_numbers``): no verdict with fewer than ``MIN_TRIALS`` trials unless the row is
    deterministic, else z by :func:`z_value` with the paper's s.e. by :func:`paper_se`."""
    value, digits = float(row["value"]), int(row["digits"])
    deterministic = bool(row.get("deterministic", False))
    if not math.isfinite(ours) or n < 1:
        return Gap(None, math.nan, math.nan, "—")
    if n < MIN_TRIALS and not deterministic:
        return Gap(None, se, math.nan, NO_VERDICT)
    ours_se = float(np.nan_to_num(se)) if not deterministic else 0.0
    theirs = paper_se(ours_se, n, float(row.get("se", math.nan)), float(row.get("k", math.nan)))
    z = z_value(ours, ours_se, value, digits, theirs)
    return Gap(z, ours_se, theirs, f"{z:+.1f}")


def sd_se(values: pd.Series | np.ndarray) -> tuple[float, float]:
    """Sample sd (ddof 1) and its standard error sd / sqrt(2 (n - 1))."""
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v, ddof=1))
    return sd, sd / math.sqrt(2 * (v.size - 1))
