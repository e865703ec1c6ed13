"""Function-approximation metrics: how well a linear fit on a basis matches y on a grid."""

from __future__ import annotations

import numpy as np

from dpbench.data.base import Split
from dpbench.methods.outputs import LinearFit


def evaluate(model: LinearFit, split: Split) -> dict[str, float]:
    """Sup error max |X coef - y| over the test grid (primary; the uniform error the fit
    approximates when the grid is dense) and the fitted coefficients ``coef_j`` (so a
    report can redraw the fitted function from the stored results)."""
    err = np.abs(model.predict(split.test.X) - np.asarray(split.test.y, dtype=float))
    out = {"max_abs_error": float(np.max(err))}
    out.update({f"coef_{j}": float(c) for j, c in enumerate(np.asarray(model.coef))})
    return out
