"""MWEM (Hardt, Ligett & McSherry 2012) as the query-release paper runs it (Liu, Vietri &
Wu, NeurIPS 2021, App. B.2 and F.1): the App. B.1 template (alpha 0.5) over an explicit
distribution on the full domain, D_0 uniform, the last iterate as output; with past-query
replay (the paper's "MWEM", its default) or without (vanilla MWEM, Fig. 7).

Update after measuring query q_t as a~_t, with \\hat a_i = q_i(D_{t-1}) the round's answers:

    D(x) <- D(x) exp(q_i(x) (a~_i - \\hat a_i) / 2), normalised,

first for q_t, then (``replay``) for every measured query whose stale error
|a~_i - \\hat a_i| is at least ``replay_threshold`` (0.5) times q_t's, in random order, each
with the same stale \\hat a (the pseudocode of Liu et al. 2021, "Leveraging public data for
practical private query release", as the authors' ``mwem.py`` implements it). A query
measured again keeps only its newest measurement. The replay set of the authors' code holds
q_t itself, so q_t is applied twice per round; that is the default
(``replay_includes_new: true``), ``false`` applies it once.

Sign: the standard multiplicative-weights update above (Hardt et al.; the authors' code).
App. B.2 / B.3 print it reversed, D(x) proportional to exp(-sum_i q_i(x)(a~_i - q_i(D_{i-1})));
``update_sign: paper`` runs that literal sign (with the code's step 1/2) to show that it
moves D away from the measurements and the error grows.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dpbench.data.queries import MAX_HISTOGRAM_CELLS
from dpbench.methods.query_release.histogram import DomainHistogram, HistogramMethod

UPDATE_SIGNS = ("standard", "paper")


class MWEM(HistogramMethod):
    """MWEM with (``replay: true``) or without past-query replay (module docstring)."""

    def __init__(self, T: int, alpha: float = 0.5, replay: bool = True,
                 replay_threshold: float = 0.5, replay_includes_new: bool = True,
                 update_sign: str = "standard", selection: str = "b1",
                 workload: str = "all_3way", number: int | None = None, seed: int = 0,
                 max_cells: int | str | None = None,
                 max_domain_cells: int | None = MAX_HISTOGRAM_CELLS) -> None:
        if update_sign not in UPDATE_SIGNS:
            raise ValueError(f"update_sign={update_sign!r} is unknown; valid: "
                             f"{', '.join(UPDATE_SIGNS)}")
        if not isinstance(replay, bool) or not isinstance(replay_includes_new, bool):
            raise ValueError("replay and replay_includes_new must be true or false")
        if isinstance(replay_threshold, bool) or not isinstance(replay_threshold, int | float) \
                or not replay_threshold >= 0:
            raise ValueError(f"replay_threshold={replay_threshold!r} must be a number >= 0")
        super().__init__(T, alpha, selection, workload, number, seed, max_cells,
                         max_domain_cells, replay=replay,
                         replay_threshold=float(replay_threshold),
                         replay_includes_new=replay_includes_new, update_sign=update_sign)

    def _start(self) -> None:
        self.measured_: dict[int, float] = {}
        self.updates_ = 0

    def _update(self, hist: DomainHistogram, t: int, position: int, measured: float,
                fake: NDArray, rng: np.random.Generator) -> None:
        p = self.params
        self.measured_[position] = measured
        order = [position]
        if p["replay"]:
            past = np.fromiter(self.measured_, dtype=np.int64, count=len(self.measured_))
            values = np.fromiter(self.measured_.values(), dtype=float, count=len(past))
            errors = np.abs(values - fake[past])
            keep = past[errors >= p["replay_threshold"] * abs(measured - fake[position])]
            if not p["replay_includes_new"]:
                keep = keep[keep != position]
            order += [int(i) for i in rng.permutation(keep)]  # not privacy noise: replay order
        sign = 1.0 if p["update_sign"] == "standard" else -1.0
        for i in order:
            hist.scale(i, math.exp(sign * (self.measured_[i] - fake[i]) / 2))
        self.updates_ += len(order)

    def info(self) -> dict:
        return {**super().info(), "updates": self.updates_,
                "distinct_measured": len(self.measured_)}
