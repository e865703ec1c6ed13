"""Which keys a figure spec may hold, read without drawing anything.

Each kind's module declares the spec keys it reads as a literal ``KEYS = frozenset({...})``
(``report.kinds``). Checking a spec (``plan``, ``run``, ``figures``: a typo is refused, not
ignored) needs only those sets, so they are read from the modules' source here instead of
importing the modules (and matplotlib with them); tests/contracts/test_figure_keys.py holds
them equal to the imported ``report.kinds.KEYS``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpbench.runner.schema import COMMON_FIGURE_KEYS, FigureSpec, figure_spec

#: the figure-spec keys every kind takes (the experiment fills title, paper and note)
COMMON_KEYS = COMMON_FIGURE_KEYS
KINDS_DIR = Path(__file__).resolve().parent / "kinds"
#: kind -> the module (in report/kinds/) that draws it, with a function of the kind's name:
#: the one registry of figure kinds (report.kinds.KINDS imports the builders from it)
MODULES = {"metric_vs_eps": "metric_vs_eps", "metric_vs_param": "metric_vs_param",
           "histogram": "histogram", "posterior_ecdf": "posterior",
           "posterior_density": "posterior", "paper_table": "paper_table",
           "function_approx": "function_approx", "bars": "bars",
           "best_over_sweep": "best_over_sweep"}


@functools.cache
def declared_keys() -> dict[str, frozenset[str]]:
    """Per kind, the ``KEYS`` literal of its module's source."""
    return {kind: _module_keys(module) for kind, module in MODULES.items()}


@functools.cache
def _module_keys(module: str) -> frozenset[str]:
    """The module's top-level ``KEYS = frozenset({...})``: only that statement is parsed
    (the shortest source from it that parses), not the whole module (~50 ms a plan)."""
    src = (KINDS_DIR / f"{module}.py").read_text(encoding="utf-8")
    start = src.find("\nKEYS = frozenset(") + 1
    end = start
    while start and (end := src.find(")", end) + 1):
        try:
            (node,) = ast.parse(src[start:end]).body
        except SyntaxError:
            continue
        call = node.value if isinstance(node, ast.Assign) else None
        if isinstance(call, ast.Call) and len(call.args) == 1:
            return frozenset(ast.literal_eval(call.args[0]))
        break
    raise RuntimeError(f"report/kinds/{module}.py declares no literal KEYS = frozenset({{...}})")


def check_figure(fig: Mapping[str, Any]) -> FigureSpec:
    """The figure spec as a typed ``FigureSpec``, or a one-line ConfigError for one without a
    kind or a name, of an unknown kind or with a key its kind does not read (a typo would
    otherwise be ignored silently): ``runner.schema.figure_spec`` with this registry."""
    return figure_spec(fig, declared_keys())
