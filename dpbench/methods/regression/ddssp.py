"""DD-SSP (the DD-SSP paper, Algorithm 1 and Sec. 3.2-3.3): regression from private marginals.

The release (AIM by default, all 2-way marginals) is post-processed:
Z^T Z with Z = [X, y] is assembled blockwise as A_j <mu_jk> A_k^T from the
model's pairwise marginals, and the diagonal blocks as A_j diag(mu_j) A_j^T
from its 1-way marginals (Prop. 3.2), with A_j the encoding matrices and the
target's row of level values; X^T X and X^T y are read off the blocks (Eq. 1).

- linear: theta = (X^T X)^-1 X^T y (least-squares solution if singular);
- logistic (labels +-1): log-sigmoid phi(s) = -log(1 + e^-s) is replaced by its
  degree-2 Chebyshev interpolant on [-R, R] (R = 6), b0 + b1 s + b2 s^2, and
  theta maximises n b0 + b1 theta^T X^T y + b2 theta^T X^T X theta (Prop. 3.4).
  With b2 < 0 and X^T X positive definite the maximiser is the stationary point
  theta = -b1 / (2 b2) (X^T X)^-1 X^T y, which is what is computed: a positive
  multiple of the linear solution (so its AUC equals linear DD-SSP's).

Note: the authors' code uses the Chebyshev-basis coefficients of the
interpolant as if they were the monomial b_m; that only rescales theta (same
AUC). The paper's monomial coefficients are used here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

import numpy as np
from numpy.polynomial import Chebyshev, Polynomial
from numpy.typing import NDArray

from dpbench.data.base import Encoding, TabularData
from dpbench.methods.marginals.model import MarginalModel
from dpbench.methods.regression._marginal import MarginalMethod, label_values
from dpbench.methods.regression._ssp import solve_ridge
from dpbench.privacy.accountant import Accountant


def log_sigmoid(s: NDArray) -> NDArray:
    """phi(s) = -log(1 + exp(-s)), the logistic log-likelihood of margin s."""
    return -np.logaddexp(0.0, -np.asarray(s, dtype=float))


def chebyshev_coefficients(radius: float = 6.0, degree: int = 2) -> NDArray:
    """Monomial coefficients (b_0, ..., b_degree) of the Chebyshev interpolant of phi on
    [-radius, radius] (interpolation at the Chebyshev points of the first kind)."""
    if not radius > 0:
        raise ValueError(f"radius={radius} must be > 0")
    cheb = Chebyshev.interpolate(log_sigmoid, degree, domain=[-radius, radius])
    return cheb.convert(kind=Polynomial, domain=[-1, 1], window=[-1, 1]).coef


def block_matrices(encoding: Encoding, target_row: NDArray) -> list[NDArray]:
    """A_j of every feature attribute (encoding order), then the target's 1 x m row."""
    return [np.asarray(encoding.matrices[a], dtype=float) for a in encoding.attributes] + [
        np.asarray(target_row, dtype=float)[None, :]]


def ztz_from_marginals(matrices: list[NDArray], attributes: tuple[str, ...],
                       pairs: Mapping[tuple[str, str], NDArray],
                       singles: Mapping[str, NDArray]) -> NDArray:
    """Z^T Z assembled blockwise (Prop. 3.2) from pairwise and 1-way marginal counts.

    ``pairs[(a_j, a_k)]`` for j < k (in ``attributes`` order) has shape (m_j, m_k).
    """
    dims = [A.shape[0] for A in matrices]
    offs = np.concatenate([[0], np.cumsum(dims)])
    ztz = np.zeros((offs[-1], offs[-1]))
    for j, a in enumerate(attributes):
        Aj = matrices[j]
        sj = slice(offs[j], offs[j + 1])
        ztz[sj, sj] = (Aj * singles[a][None, :]) @ Aj.T
        for k in range(j + 1, len(attributes)):
            sk = slice(offs[k], offs[k + 1])
            block = Aj @ pairs[(a, attributes[k])] @ matrices[k].T
            ztz[sj, sk] = block
            ztz[sk, sj] = block.T
    return ztz


def sufficient_statistics(released: MarginalModel, encoding: Encoding,
                          target_row: NDArray) -> tuple[NDArray, NDArray, float]:
    """(X^T X, X^T y, n) from the released model (Algorithm 1, lines 2-3)."""
    attrs = (*encoding.attributes, encoding.target)
    pairs = [(attrs[j], attrs[k]) for j in range(len(attrs)) for k in range(j + 1, len(attrs))]
    marg = released.marginals([*[(a,) for a in attrs], *pairs])
    singles = {a: marg[(a,)] for a in attrs}
    ztz = ztz_from_marginals(block_matrices(encoding, target_row), attrs,
                             {p: marg[p] for p in pairs}, singles)
    p = ztz.shape[0] - 1
    return ztz[:p, :p], ztz[:p, p], float(singles[encoding.target].sum())


class DDSSP(MarginalMethod):
    """DD-SSP linear or logistic regression (``model``), see the module docstring.

    Extra parameter: ``chebyshev_radius`` R (logistic only; paper: 6).
    """

    def __init__(self, model: str = "linear", mechanism: str = "aim",
                 workload: str = "all_pairs", chebyshev_radius: float = 6.0,
                 **mechanism_params: object) -> None:
        super().__init__(model=model, mechanism=mechanism, workload=workload,
                         **mechanism_params)
        if not chebyshev_radius > 0:
            raise ValueError(f"chebyshev_radius={chebyshev_radius} must be > 0")
        self.params["chebyshev_radius"] = float(chebyshev_radius)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        released = self._release(data, accountant, rng)
        enc = data.encoding
        logistic = self.params["model"] == "logistic"
        row = label_values(enc) if logistic else enc.target_values
        xtx, xty, n = sufficient_statistics(released, enc, row)
        theta = solve_ridge(xtx, xty)
        if logistic:
            b0, b1, b2 = chebyshev_coefficients(self.params["chebyshev_radius"])
            if not b2 < 0 < b1:
                raise RuntimeError(f"Chebyshev coefficients b1={b1}, b2={b2} give no maximiser")
            theta = -b1 / (2 * b2) * theta
            self._info["chebyshev_b"] = [float(b0), float(b1), float(b2)]
        self.xtx_, self.xty_, self.n_ = xtx, xty, n
        self.coef_ = theta
        return self
