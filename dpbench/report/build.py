"""One experiment's report from its results frame: figures and tables, then its claims.

``build_report(frame, experiment, figures, out)`` is the only entry point the CLI uses.
``figures`` are resolved figure specs (a ``conf/figure`` yaml or an inline dict, each with
``kind``, ``name`` and the kind's own keys); the experiment's ``paper`` names the folder
whose claims are checked (``papers/<paper>/claims.yaml``). ``shortfalls`` are the grid's
cells with fewer ok trials than it asks (``report.frame.shortfalls``): each figure, table
and claims file is written inside ``render.incomplete_cells`` with those of its methods, so
it names them instead of averaging the remaining trials silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.report.figure_keys import COMMON_KEYS, check_figure  # noqa: F401 (re-exported)
from dpbench.report.frame import Shortfall, method_name
from dpbench.report.privacy import alerts, budget_note, neighbours_note
from dpbench.report.render import incomplete_cells, provenance


def budget_unit(frame: pd.DataFrame) -> str:
    """The frame's budget unit (epsilon, mu or rho)."""
    return str(frame["budget_unit"].iloc[0]) if "budget_unit" in frame and len(frame) \
        else "epsilon"


def cells_of(shortfalls: Sequence[Shortfall], fig: Mapping[str, Any], unit: str) -> list[str]:
    """The texts of the incomplete cells a figure shows: those of its ``methods`` (ids or
    names) if it lists any, else all."""
    methods = fig.get("methods")
    keep = [s for s in shortfalls
            if not methods or s.method in methods or method_name(s.method) in methods]
    return [s.text(unit) for s in keep]


def build_figures(frame: pd.DataFrame, figures: Sequence[Mapping[str, Any]], out: Path,
                  shortfalls: Sequence[Shortfall] = ()) -> list[Path]:
    """Every figure / table of the experiment, each by its kind's builder."""
    from dpbench.report.kinds import KINDS

    unit = budget_unit(frame)
    paths: list[Path] = []
    for fig in figures:
        check_figure(fig)
        kind = fig["kind"]
        with incomplete_cells(cells_of(shortfalls, fig, unit)):
            paths += KINDS[kind](frame, dict(fig), out)
    return paths


def build_claims(frame: pd.DataFrame, experiment: Mapping[str, Any], out: Path,
                 shortfalls: Sequence[Shortfall] = ()) -> list[Path]:
    """The claims of the experiment's paper checked on its results: claims.md and
    claims.json (dpbench/report/claims/engine.py)."""
    from dpbench.report.claims.engine import build_claims as check_claims

    unit = budget_unit(frame)
    with incomplete_cells([s.text(unit) for s in shortfalls]):
        return check_claims(frame, experiment, out)


def build_report(frame: pd.DataFrame, experiment: Mapping[str, Any],
                 figures: Sequence[Mapping[str, Any]], out: Path,
                 shortfalls: Sequence[Shortfall] = (), origin: str | None = None) -> list[Path]:
    """Figures and tables, then claims; the written paths in order. ``origin`` (e.g.
    ``smoke profile, 2 trials per cell``) and the privacy facts of the trials (neighbouring
    relation, a budget not given as epsilon, any under-stated spend or unprotected rows:
    ``report.privacy``) are stated on every one of them."""
    stated = "; ".join(filter(None, [origin, budget_note(frame), neighbours_note(frame)]))
    with provenance(stated or None, alerts(frame)):
        return (build_figures(frame, figures, out, shortfalls)
                + build_claims(frame, experiment, out, shortfalls))
