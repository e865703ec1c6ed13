"""What the record baselines (``uniform``, ``independent``) share: the tasks their records
serve, the output as a synthetic table in the data's encoding."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpbench.data.base import Encoding
from dpbench.methods.base import Method
from dpbench.methods.outputs import SyntheticTable
from dpbench.methods.records import synthetic_table

if TYPE_CHECKING:
    import pandas as pd


class RecordsBaseline(Method):
    """A baseline whose fit sets ``records_`` (every attribute's codes) and ``encoding_``."""

    serves = frozenset({"query_release", "tstr", "synthetic_utility"})
    requires = frozenset({"discrete"})
    produces = (SyntheticTable,)
    records_: pd.DataFrame
    encoding_: Encoding | None

    def output(self, kind: type) -> Any:
        if kind is SyntheticTable:
            return synthetic_table(self.records_, self.encoding_, type(self).__name__)
        return super().output(kind)

    def info(self) -> dict[str, Any]:
        return {"n_synthetic": len(self.records_), "neighbours": self.neighbours}
