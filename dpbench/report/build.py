"""One experiment's report from its results frame: figures and tables, then its claims.

``build_report(frame, experiment, figures, out)`` is the only entry point the CLI uses.
``figures`` are resolved figure specs (a ``conf/figure`` yaml or an inline dict, each with
``kind``, ``name`` and the kind's own keys); the experiment's ``paper`` names the folder
whose claims are checked (``papers/<paper>/claims.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.runner.grid import ConfigError


def build_figures(frame: pd.DataFrame, figures: Sequence[Mapping[str, Any]],
                  out: Path) -> list[Path]:
    """Every figure / table of the experiment, each by its kind's builder."""
    from dpbench.report.figures import FIGURE_KINDS

    paths: list[Path] = []
    for fig in figures:
        kind = fig["kind"]
        if kind not in FIGURE_KINDS:
            raise ConfigError(f"figure {fig['name']!r}: unknown kind {kind!r}; valid: "
                             f"{', '.join(sorted(FIGURE_KINDS))}")
        paths += FIGURE_KINDS[kind](frame, dict(fig), out)
    return paths


def build_claims(frame: pd.DataFrame, experiment: Mapping[str, Any], out: Path) -> list[Path]:
    """The experiment's claim checks (to be replaced by papers/<paper>/claims.yaml)."""
    from dpbench.runner.execute import import_object

    paths: list[Path] = []
    for check in experiment.get("checks") or []:
        paths += import_object(check)(frame, out)
    return paths


def build_report(frame: pd.DataFrame, experiment: Mapping[str, Any],
                 figures: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """Figures and tables, then claims; the written paths in order."""
    return build_figures(frame, figures, out) + build_claims(frame, experiment, out)
