"""JLT: OLS on a private Johnson-Lindenstrauss projection (Sheffet 2017, ICML, Alg. 1).

A = [X, y] (rows bounded by B = sqrt(||x||^2 + |y|^2)). With
w^2 = (8 B^2 / eps) (sqrt(2 r ln(8/delta)) + ln(8/delta)) and Z ~ Lap(4 B^2 / eps):
if sigma_min(A)^2 > w^2 + Z + 4 B^2 ln(1/delta) / eps, release R A, else release R A'
with A' = [A; w I_{d+1}]; R is r x (rows) with iid N(0, 1) entries. The estimate is
OLS on the projected rows. The whole release is (eps, delta)-DP.

Each row of R A' is N(0, A'^T A'), so we sample the r rows as Z L^T with L the
Cholesky factor of A'^T A' (the same distribution, O(r d^2) instead of O(r n d)).
Constants are those of Sheffet's Algorithm 1 as we read it (arXiv:1507.00056);
the BinAgg paper does not state r, so it is a parameter (default 1,000).
"""

from __future__ import annotations

import math
from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.regression._ssp import solve_ridge
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant


def jlt_threshold(bound: float, epsilon: float, delta: float, r: int) -> tuple[float, float]:
    """(w^2, Laplace scale) of Sheffet's Alg. 1."""
    ln8 = math.log(8 / delta)
    return 8 * bound**2 / epsilon * (math.sqrt(2 * r * ln8) + ln8), 4 * bound**2 / epsilon


class JLT(LinearModel):
    """Sheffet's private JL projection followed by OLS on the projected data."""

    accounting = "approx"

    def __init__(self, r: int = 1000) -> None:
        if int(r) != r or r < 1:
            raise ValueError(f"r={r!r} must be a positive integer (projection rows)")
        super().__init__(r=int(r))

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        eps, delta, r = accountant.epsilon, accountant.delta, self.params["r"]
        accountant.charge_eps_delta(eps, delta, "JL projection")
        A = np.column_stack([data.X, data.y])
        bound = math.hypot(data.x_bound, data.y_bound)
        w2, lap = jlt_threshold(bound, eps, delta, r)
        gram = A.T @ A
        smin2 = float(np.linalg.eigvalsh(gram)[0])
        # the threshold test's Laplace draw: one row (norm <= B) added or removed moves
        # sigma_min(A)^2 by at most B^2
        noisy = noise.laplace(smin2, lap, rng, sensitivity=bound**2, relation="add_remove",
                              label="JL threshold test")
        self.altered_ = not smin2 > w2 + (noisy - smin2) + 4 * bound**2 * math.log(
            1 / delta) / eps
        if self.altered_:
            gram = gram + w2 * np.eye(gram.shape[0])
        L = np.linalg.cholesky(gram + 1e-12 * np.trace(gram) * np.eye(gram.shape[0])
                               if not self.altered_ else gram)
        # R (r x rows, iid N(0, 1)) projects A': (eps / 2, delta / 2)-DP when
        # sigma_min(A')^2 >= w^2 (Blocki et al. 2012, Thm. 3.1), which the test ensures but
        # with probability delta / 2 (Sheffet's analysis)
        RA = noise.jl_projection(r, gram.shape[0], rng, threshold_sq=w2, row_norm_sq=bound**2,
                                 relation="add_remove", label="JL projection") @ L.T
        Xp, yp = RA[:, :-1], RA[:, -1]
        self.coef_ = solve_ridge(Xp.T @ Xp, Xp.T @ yp)
        return self

    def info(self) -> dict[str, float]:
        return {"altered": float(self.altered_)}
