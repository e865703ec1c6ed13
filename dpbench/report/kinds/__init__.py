"""Figure and table kinds: ``KINDS[kind](frame, fig, out) -> written paths``.

A kind draws only from the results frame (``report.frame``) and a paper's printed numbers
(``report.numbers``; ``function_approx`` also evaluates the target function the frame
names, from ``dpbench.data.functions``), and writes through ``report.render``; its keys
are documented in its module. No kind imports a method module, another kind, or names a
paper, dataset or method: those live in the figure specs (``conf/figure/*.yaml`` or an
experiment's inline ``figures:``) and ``papers/<paper>/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.report.figure_keys import MODULES

Builder = Callable[[pd.DataFrame, dict[str, Any], Path], list[Path]]

#: kind -> its builder: the function of that name in the module ``figure_keys.MODULES``
#: names for it (the one list of kinds; a new kind is a module here and a line there)
KINDS: dict[str, Builder] = {
    kind: getattr(importlib.import_module(f"dpbench.report.kinds.{module}"), kind)
    for kind, module in MODULES.items()}


#: per kind, the spec keys its module reads (its ``KEYS``) besides the common ones
KEYS: dict[str, frozenset[str]] = {
    kind: importlib.import_module(f"dpbench.report.kinds.{module}").KEYS
    for kind, module in MODULES.items()}
