"""``function_approx``: each method's fitted polynomial against the target function, and
(optionally) its error curve, over the data's interval; one figure per dataset.

For data that is a known function sampled on a grid (``dpbench.data.functions``): the
fitted polynomial is redrawn from the stored coefficient metrics ``<coef>0``, ``<coef>1``,
... as monomial coefficients (the loader's basis is [1, x, ..., x^d]); the target from the
function name and interval stored as dataset parameters, looked up in the one function
registry. Deterministic fits are expected; with several trials or epsilons the mean
coefficient is drawn.

Keys: ``function``, ``lower``, ``upper`` (the columns holding the function name and the
interval; defaults ``dataset.function``, ``dataset.lower``, ``dataset.upper``), ``coef``
(coefficient metric prefix, default ``coef_``), ``error`` (metric shown in the legend,
default ``max_abs_error``; none if absent), ``panels`` (a list of ``{title, methods}``,
one column of panels each; default one panel with every method), ``errors`` (default
true: a second row with p(x) - f(x)), ``points`` (default 1001), ``target_label``
(default ``f(x)``), ``xlabel`` (default ``x``), ``ylabel``, ``caption`` (text under the
figure, e.g. how each curve was computed).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from numpy.polynomial import polynomial as P

from dpbench.data.functions import target_function
from dpbench.report.render import save

#: the figure-spec keys this kind reads besides the common ones (report.build.COMMON_KEYS)
KEYS = frozenset({"caption", "coef", "error", "errors", "function", "lower", "panels", "points",
                  "target_label", "upper", "xlabel", "ylabel"})


def fitted_coefficients(rows: pd.DataFrame, prefix: str) -> np.ndarray:
    """Mean over ``rows`` of ``<prefix>0``, ``<prefix>1``, ... (as many as stored)."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    found = sorted((int(m.group(1)), c) for c in rows.columns if (m := pattern.fullmatch(c)))
    return np.array([float(rows[c].mean()) for _, c in found])


def _panels(part: pd.DataFrame, fig: dict[str, Any]) -> list[tuple[str, list[str]]]:
    present = list(pd.unique(part["method"]))
    spec = fig.get("panels") or [{"title": "", "methods": present}]
    out = [(str(p.get("title", "")), [m for m in p["methods"] if m in present]) for p in spec]
    return [p for p in out if p[1]]


def _one(part: pd.DataFrame, fig: dict[str, Any], stem: Path) -> list[Path]:
    first = part.iloc[0]
    name = str(first[fig.get("function", "dataset.function")])
    lo = float(first[fig.get("lower", "dataset.lower")])
    hi = float(first[fig.get("upper", "dataset.upper")])
    x = np.linspace(lo, hi, int(fig.get("points", 1001)))
    fx = target_function(name)(x)
    panels = _panels(part, fig)
    if not panels:
        return []
    rows = 2 if fig.get("errors", True) else 1
    f, axes = plt.subplots(rows, len(panels), figsize=(5.0 * len(panels), 3.3 * rows),
                           squeeze=False, sharex=True)
    error = fig.get("error", "max_abs_error")
    for j, (title, methods) in enumerate(panels):
        top = axes[0, j]
        top.plot(x, fx, color="black", lw=2.2, label=fig.get("target_label", "f(x)"))
        for m in methods:
            g = part[part["method"] == m]
            px = P.polyval(x, fitted_coefficients(g, fig.get("coef", "coef_")))
            label = str(g["method_label"].iloc[0])
            if error in g:
                label += f" (max err {float(g[error].mean()):.3f})"
            line, = top.plot(x, px, lw=1.3, ls="--", label=label)
            if rows == 2:
                axes[1, j].plot(x, px - fx, lw=1.3, color=line.get_color(), label=label)
        top.set_title(title)
        top.set_ylabel(fig.get("ylabel", "value"))
        top.legend(fontsize=7)
        top.grid(True, alpha=0.3)
        if rows == 2:
            axes[1, j].axhline(0.0, color="black", lw=0.8)
            axes[1, j].set_ylabel("p(x) - f(x)")
            axes[1, j].grid(True, alpha=0.3)
        axes[-1, j].set_xlabel(fig.get("xlabel", "x"))
    f.tight_layout()
    if fig.get("caption"):
        f.text(0.01, -0.02, textwrap.fill(str(fig["caption"]), 75 * len(panels)), ha="left",
               va="top", fontsize=8)
    return save(f, stem)


def function_approx(frame: pd.DataFrame, fig: dict[str, Any], out: Path) -> list[Path]:
    """One figure per dataset (``<name>`` for one dataset, else ``<name>_<dataset>``)."""
    if frame.empty:
        return []
    datasets = list(pd.unique(frame["dataset"]))
    paths: list[Path] = []
    for d in datasets:
        stem = out / (fig["name"] if len(datasets) == 1 else f"{fig['name']}_{d}")
        paths += _one(frame[frame["dataset"] == d], fig, stem)
    return paths
