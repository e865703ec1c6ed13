"""A positive number read from an environment variable, or a one-line refusal naming it."""

from __future__ import annotations

import math


def positive(name: str, raw: str, valid: str) -> float:
    """``raw`` (the value of ``name``) as a finite positive float; else a ValueError that
    names the variable, its value and ``valid`` (the valid choices, in words)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={raw!r}: valid values are {valid}")
    return value
