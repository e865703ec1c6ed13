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
    from dpbench.report.kinds import KINDS

    paths: list[Path] = []
    for fig in figures:
        kind = fig["kind"]
        if kind not in KINDS:
            raise ConfigError(f"figure {fig['name']!r}: unknown kind {kind!r}; valid: "
                             f"{', '.join(sorted(KINDS))}")
        paths += KINDS[kind](frame, dict(fig), out)
    return paths


def build_claims(frame: pd.DataFrame, experiment: Mapping[str, Any], out: Path) -> list[Path]:
    """The claims of the experiment's paper checked on its results: claims.md and
    claims.json (dpbench/report/claims/engine.py)."""
    from dpbench.report.claims.engine import build_claims as check_claims

    return check_claims(frame, experiment, out)


def build_report(frame: pd.DataFrame, experiment: Mapping[str, Any],
                 figures: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """Figures and tables, then claims; the written paths in order."""
    return build_figures(frame, figures, out) + build_claims(frame, experiment, out)
