"""Numpy tables over named attributes: lining one table's axes up with another's.

Kept apart from the mbi adapter (_mbi.py) and the junction-tree code (junction.py), which
both use it, so neither imports the other for a numpy helper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def aligned(attrs: Sequence[str], values: np.ndarray, target: Sequence[str]) -> np.ndarray:
    """``values`` over ``attrs`` transposed and reshaped to broadcast over ``target``
    (an attribute of ``target`` missing from ``attrs`` gets an axis of length 1)."""
    order = [a for a in target if a in attrs]
    v = np.transpose(values, [list(attrs).index(a) for a in order])
    return v.reshape([v.shape[order.index(a)] if a in order else 1 for a in target])
