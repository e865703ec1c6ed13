"""PEP, private entropy projection (Liu, Vietri & Wu, NeurIPS 2021, Sec. 2.1, App. C,
Alg. 2), as the authors' ``pep.py`` runs it: the App. B.1 template (alpha 0.5) over an
explicit distribution on the full domain, D_0 uniform; after each measurement, D is moved
towards the maximum-entropy distribution that agrees with every measurement so far by
``min(max_iters, 2 t)`` steps of iterative projection (t = 1, 2, ... the round;
``max_iters`` is Table 1's T_max = 25). Output: the last D.

One projection step takes the measured query i with the largest |q_i(D) - a~_i| and sets

    D(x) <- D(x) exp(lambda q_i(x)),  lambda = ln(a~ (1 - q) / ((1 - a~) q)), normalised,

with a~ and q = q_i(D) clipped to [1e-6, 1 - 1e-6]: the exact I-projection of D onto the
one constraint q_i(D) = a~_i (afterwards q_i(D) equals the clipped a~_i), so repeated
steps converge to the entropy projection onto all of them (Alg. 2 with tolerance 0). As in
the code there is no tolerance gamma (the paper's gamma = log(|Q|/beta)/eps mixes in a
Laplace bound; its loop would stop as soon as every gap is below gamma), and a query
measured twice keeps both measurements. The template clips each a~ to [0, 1] first, which
the step's own clip makes immaterial except for which gap is the largest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dpbench.data.queries import MAX_HISTOGRAM_CELLS
from dpbench.methods.query_release.histogram import DomainHistogram, HistogramMethod

#: answers are clipped to [CLIP, 1 - CLIP] in a projection step (the authors' offset)
CLIP = 1e-6


def projection_step(hist: DomainHistogram, positions: NDArray[np.int64],
                    targets: NDArray) -> float:
    """One step (module docstring) over the measured ``positions`` / ``targets``; returns
    the largest gap |q_i(D) - a~_i| before the step."""
    current = hist.answers()[positions]
    gaps = current - targets
    i = int(np.argmax(np.abs(gaps)))
    a = min(max(float(targets[i]), CLIP), 1 - CLIP)
    q = min(max(float(current[i]), CLIP), 1 - CLIP)
    hist.scale(int(positions[i]), a * (1 - q) / ((1 - a) * q), track=True)  # = e^lambda
    return float(abs(gaps[i]))


def project(hist: DomainHistogram, positions: Sequence[int], targets: Sequence[float],
            steps: int) -> float:
    """``steps`` projection steps onto the measurements; returns the largest gap left."""
    pos = np.asarray(positions, dtype=np.int64)
    tgt = np.asarray(targets, dtype=float)
    for _ in range(steps):
        projection_step(hist, pos, tgt)
    return float(np.max(np.abs(hist.answers()[pos] - tgt)))


class PEP(HistogramMethod):
    """Private entropy projection (module docstring)."""

    def __init__(self, T: int, alpha: float = 0.5, max_iters: int = 25,
                 selection: str = "b1", workload: str = "all_3way",
                 number: int | None = None, seed: int = 0,
                 max_cells: int | str | None = None,
                 max_domain_cells: int | None = MAX_HISTOGRAM_CELLS) -> None:
        if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1:
            raise ValueError(f"max_iters={max_iters!r} must be a whole number >= 1 (T_max, "
                             "projection steps per round)")
        super().__init__(T, alpha, selection, workload, number, seed, max_cells,
                         max_domain_cells, max_iters=max_iters)

    def _start(self) -> None:
        self.positions_: list[int] = []
        self.targets_: list[float] = []
        self.steps_ = 0
        self.gap_ = math.nan

    def _update(self, hist: DomainHistogram, t: int, position: int, measured: float,
                fake: NDArray, rng: np.random.Generator) -> None:
        del fake, rng
        self.positions_.append(position)
        self.targets_.append(measured)
        steps = min(self.params["max_iters"], 2 * (t + 1))
        self.gap_ = project(hist, self.positions_, self.targets_, steps)
        self.steps_ += steps

    def info(self) -> dict:
        return {**super().info(), "projection_steps": self.steps_,
                "max_measured_gap": self.gap_}
