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

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench import lazy
from dpbench.report.figure_keys import COMMON_KEYS, check_figure  # noqa: F401 (re-exported)
from dpbench.report.frame import Shortfall, method_name, missing_values
from dpbench.report.privacy import alerts, budget_note, neighbours_note
from dpbench.report.render import incomplete_cells, provenance

# what draws (matplotlib) and checks claims: imported when a figure or claim is built, not by
# the readers of this module's frame checks (finite_shortfalls)
claims_engine = lazy.module("dpbench.report.claims.engine")
figure_kinds = lazy.module("dpbench.report.kinds")


def budget_unit(frame: pd.DataFrame) -> str:
    """The frame's budget unit (epsilon, mu or rho)."""
    return str(frame["budget_unit"].iloc[0]) if "budget_unit" in frame and len(frame) \
        else "epsilon"


def cells_of(shortfalls: Sequence[Shortfall], fig: Mapping[str, Any], unit: str) -> list[str]:
    """The texts of the incomplete cells a figure shows: those of its ``methods`` (ids or
    names) if it lists any, else all; a cell short of a metric's values only where the
    figure draws that metric (:func:`figure_metrics`)."""
    methods = fig.get("methods")
    drawn = set(figure_metrics([fig]))
    keep = [s for s in shortfalls
            if (not methods or s.method in methods or method_name(s.method) in methods)
            and (s.metric is None or s.metric in drawn)]
    return [s.text(unit) for s in keep]


def figure_metrics(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metric columns ``figures`` draw (``metric``, ``metrics``, ``reference``,
    ``columns[].metric``), in order, each once."""
    out: list[str] = []
    for fig in figures:
        names = [fig.get("metric"), *(fig.get("metrics") or []), fig.get("reference"),
                 *(c.get("metric") for c in fig.get("columns") or [] if isinstance(c, Mapping))]
        out += [n for n in names if isinstance(n, str) and n not in out]
    return out


def finite_shortfalls(frame: pd.DataFrame, figures: Sequence[Mapping[str, Any]]
                      ) -> list[Shortfall]:
    """The cells short of finite values of a metric the figures draw (``frame.
    missing_values``): marked in those figures, in the claims and on the site page."""
    return missing_values(frame, [m for m in figure_metrics(figures) if "{" not in m])


#: the stem of the figures and tables of the methods no figure of the experiment shows
OTHER_METHODS = "other_methods"


def selects(fig: Mapping[str, Any], ident: str) -> bool:
    """Does figure spec ``fig`` show method id ``ident``? By the keys its kind selects
    methods with (``methods``, ``method``, ``panels``, ``columns``, ``keep``); a kind that
    selects none shows every method."""
    kind, name = fig.get("kind"), method_name(ident)
    listed = [str(m) for m in fig.get("methods") or []]
    if kind == "histogram":
        return fig.get("method") in (ident, name)
    if kind == "function_approx" and fig.get("panels"):
        return any(ident in (p.get("methods") or []) for p in fig["panels"])
    if kind == "paper_table":
        if listed and ident not in listed:
            return False
        columns = fig.get("columns") or []
        if columns and all(c.get("method") and not c.get("others") for c in columns):
            return any(c["method"] in (ident, name) for c in columns)
        keep = fig.get("keep")
        return not keep or ident in keep or name in keep
    return not listed or ident in listed or name in listed


def unshown(methods: Sequence[str], figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The method ids of ``methods`` that none of ``figures`` shows (:func:`selects`)."""
    return [m for m in methods if not any(selects(f, m) for f in figures)]


def other_methods(frame: pd.DataFrame, figures: Sequence[Mapping[str, Any]]
                  ) -> tuple[list[str], list[dict[str, Any]]]:
    """The methods of ``frame`` that no figure shows (a method added to a paper's line-up on the
    command line) and the figure specs that show them: ``metric_vs_eps`` of each metric the
    experiment's figures plot (else the task's first), ``other_methods[_<metric>]``, so a
    method that ran is never left out of every table. Empty for an experiment whose figures
    show each of its methods."""
    methods = list(dict.fromkeys(frame["method"])) if "method" in frame else []
    left = unshown(methods, figures)
    if not left:
        return [], []
    metrics: list[str] = []
    for fig in figures:
        for m in [fig.get("metric"), *(fig.get("metrics") or [])]:
            if isinstance(m, str) and m in frame and m not in metrics:
                metrics.append(m)
    metrics = metrics or [m for m in frame.attrs.get("metrics", []) if m in frame][:1]
    first = figures[0] if figures else {}
    return left, [{"kind": "metric_vs_eps", "metric": m, "methods": left,
                   "name": OTHER_METHODS if len(metrics) == 1 else f"{OTHER_METHODS}_{m}",
                   "title": f"{first.get('title') or 'experiment'}: methods in none of its "
                            "figures"}
                  for m in metrics]


def build_figures(frame: pd.DataFrame, figures: Sequence[Mapping[str, Any]], out: Path,
                  shortfalls: Sequence[Shortfall] = ()) -> list[Path]:
    """Every figure / table of the experiment, each by its kind's builder; then those of
    the methods none of them shows (:func:`other_methods`), from their rows only."""
    unit = budget_unit(frame)
    paths: list[Path] = []
    left, extra = other_methods(frame, figures)
    if left:
        print(f"note: {', '.join(left)} in none of the experiment's figures: shown in "
              f"{', '.join(f['name'] for f in extra)}", file=sys.stderr)
    for i, fig in enumerate([*figures, *extra]):
        check_figure(fig)
        kind = fig["kind"]
        rows = frame[frame["method"].isin(fig["methods"])] if i >= len(figures) else frame
        with incomplete_cells(cells_of(shortfalls, fig, unit)):
            paths += figure_kinds.KINDS[kind](rows, dict(fig), out)
    return paths


def build_claims(frame: pd.DataFrame, experiment: Mapping[str, Any], out: Path,
                 shortfalls: Sequence[Shortfall] = ()) -> list[Path]:
    """The claims of the experiment's paper checked on its results: claims.md and
    claims.json (dpbench/report/claims/engine.py)."""
    unit = budget_unit(frame)
    with incomplete_cells([s.text(unit) for s in shortfalls]):
        return claims_engine.build_claims(frame, experiment, out)


def build_report(frame: pd.DataFrame, experiment: Mapping[str, Any],
                 figures: Sequence[Mapping[str, Any]], out: Path,
                 shortfalls: Sequence[Shortfall] = (), origin: str | None = None) -> list[Path]:
    """Figures and tables, then claims; the written paths in order. ``origin`` (e.g.
    ``smoke profile, 2 trials per cell``) and the privacy facts of the trials (neighbouring
    relation, a budget not given as epsilon, any under-stated spend or unprotected rows:
    ``report.privacy``) are stated on every one of them."""
    stated = "; ".join(filter(None, [origin, budget_note(frame), neighbours_note(frame)]))
    short = [*shortfalls, *finite_shortfalls(frame, figures)]
    with provenance(stated or None, alerts(frame)):
        return (build_figures(frame, figures, out, short)
                + build_claims(frame, experiment, out, short))
