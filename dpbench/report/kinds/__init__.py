"""Figure and table kinds: ``KINDS[kind](frame, fig, out) -> written paths``.

A kind draws only from the results frame (``report.frame``) and a paper's printed numbers
(``report.numbers``; ``function_approx`` also evaluates the target function the frame
names, from ``dpbench.data.functions``), and writes through ``report.render``; its keys
are documented in its module. No kind imports a method module, another kind, or names a
paper, dataset or method: those live in the figure specs (``conf/figure/*.yaml`` or an
experiment's inline ``figures:``) and ``papers/<paper>/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.report.kinds.bars import bars
from dpbench.report.kinds.best_over_sweep import best_over_sweep
from dpbench.report.kinds.function_approx import function_approx
from dpbench.report.kinds.histogram import histogram
from dpbench.report.kinds.metric_vs_eps import metric_vs_eps
from dpbench.report.kinds.metric_vs_param import metric_vs_param
from dpbench.report.kinds.paper_table import paper_table
from dpbench.report.kinds.posterior import posterior_density, posterior_ecdf

Builder = Callable[[pd.DataFrame, dict[str, Any], Path], list[Path]]

KINDS: dict[str, Builder] = {
    "metric_vs_eps": metric_vs_eps,
    "metric_vs_param": metric_vs_param,
    "histogram": histogram,
    "posterior_ecdf": posterior_ecdf,
    "posterior_density": posterior_density,
    "paper_table": paper_table,
    "function_approx": function_approx,
    "bars": bars,
    "best_over_sweep": best_over_sweep,
}


#: per kind, the spec keys its module reads (its ``KEYS``) besides the common ones
KEYS: dict[str, frozenset[str]] = {kind: sys.modules[fn.__module__].KEYS
                                   for kind, fn in KINDS.items()}
