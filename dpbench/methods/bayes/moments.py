"""Normal approximation of the summed statistics: s ~ N(N mu_s, N Sigma_s) (Sec. 3.3).

With x ~ N(0, Sigma) and u = x^T theta, every needed expectation has the form
E[monomial(x) * h(u)] with h a polynomial (a Taylor approximation of the
conditional moment E[y^p | x]). Adding u as a coordinate of the Gaussian,
w = (x, u) ~ N(0, [[Sigma, Sigma theta], [theta^T Sigma, theta^T Sigma theta]]),
turns each into a sum of Gaussian product moments, evaluated by Isserlis.

Conditional moments (p = power of y carried by a statistic pair):

- logistic, y in {-1, +1}: E[y^p|x] = 1 for even p, tanh(u/2) ~ u/2 - u^3/24
  for odd p. ``ey_sign="paper"`` uses the paper's eq. (6), (1-e^u)/(1+e^u) =
  -tanh(u/2) (the wrong sign for its own likelihood; it mirrors theta).
  ``cov_case_b="paper"`` uses the paper's case (b), E[y^(odd+odd)|x] taken as
  the odd moment; this gives Var(y x_j) = -m_j^2 < 0, so the model only runs
  when the DP noise variance outweighs it.
- Poisson, softplus link: E[y|x] = softplus(u) ~ log 2 + u/2 + u^2/8 - u^4/192,
  E[y^2|x] = mu + mu^2 with mu^2 ~ log^2 2 + u log 2 + u^2 (1 + log 2)/4 + u^3/8
  (Supplement Sec. 8.2). ``ey2="paper"`` keeps the supplement's mu^2 alone
  (it drops the Poisson variance mu).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from dpbench.methods.bayes import _jax  # noqa: F401  (first: JAX in float64)

# isort: split
import jax.numpy as jnp
import numpy as np
from numpy.typing import NDArray

from dpbench.methods.bayes import isserlis
from dpbench.methods.bayes.stats import Component, components

Poly = tuple[float, ...]  # coefficients of 1, u, u^2, ...

ONE: Poly = (1.0,)
TANH_HALF: Poly = (0.0, 0.5, 0.0, -1.0 / 24.0)
LN2 = math.log(2.0)
SOFTPLUS: Poly = (LN2, 0.5, 0.125, 0.0, -1.0 / 192.0)
SOFTPLUS_SQ: Poly = (LN2**2, LN2, (1.0 + LN2) / 4.0, 0.125)

CHOICES = {"ey_sign": ("corrected", "paper"), "cov_case_b": ("corrected", "paper"),
           "ey2": ("corrected", "paper")}


def _add(a: Poly, b: Poly) -> Poly:
    n = max(len(a), len(b))
    return tuple((a[i] if i < len(a) else 0.0) + (b[i] if i < len(b) else 0.0) for i in range(n))


def conditional_moment(glm: str, *, ey_sign: str = "corrected", cov_case_b: str = "corrected",
                       ey2: str = "corrected") -> Callable[[int, int], Poly]:
    """h(p_a, p_b): polynomial in u approximating E[y^(p_a+p_b) | x]."""
    for name, value in (("ey_sign", ey_sign), ("cov_case_b", cov_case_b), ("ey2", ey2)):
        if value not in CHOICES[name]:
            raise ValueError(f"{name}={value!r} is invalid; valid: {', '.join(CHOICES[name])}")
    if glm == "logistic":
        odd = TANH_HALF if ey_sign == "corrected" else tuple(-c for c in TANH_HALF)

        def h(pa: int, pb: int) -> Poly:
            if cov_case_b == "paper" and pa % 2 == 1 and pb % 2 == 1:
                return odd
            return ONE if (pa + pb) % 2 == 0 else odd

        return h
    if glm == "poisson":
        second = _add(SOFTPLUS, SOFTPLUS_SQ) if ey2 == "corrected" else SOFTPLUS_SQ
        table = {0: ONE, 1: SOFTPLUS, 2: second}
        return lambda pa, pb: table[pa + pb]
    raise ValueError(f"glm={glm!r} is invalid; valid: logistic, poisson")


@dataclass(frozen=True, eq=False)
class MomentProgram:
    """Static linear map from Gaussian moments to (mu_s, E[t t^T]).

    ``tuples[k]`` are index tuples of one even order (index d is u);
    ``mean_map`` (m, K) and ``second_map`` (m*m, K) weight the concatenated moments.
    """

    d: int
    m: int
    tuples: tuple[NDArray, ...]
    mean_map: NDArray
    second_map: NDArray

    def __call__(self, theta: jnp.ndarray, Sigma: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Per-record mean mu_s and covariance Sigma_s at (theta, Sigma)."""
        a = Sigma @ theta
        C = jnp.block([[Sigma, a[:, None]], [a[None, :], (theta @ a)[None, None]]])
        mom = jnp.concatenate([isserlis.moments(C, T) for T in self.tuples])
        mean = self.mean_map @ mom
        second = (self.second_map @ mom).reshape(self.m, self.m)
        return mean, second - jnp.outer(mean, mean)


def build_program(glm: str, d: int, **options: str) -> MomentProgram:
    """Compile the moment map for ``glm`` with d features (see module doc for options).

    Cached: equal arguments give the same object (its identity keys the sampler cache).
    """
    return _build(glm, d, tuple(sorted(options.items())))


@cache
def _build(glm: str, d: int, options: tuple[tuple[str, str], ...]) -> MomentProgram:
    comps = components(glm, d)
    h = conditional_moment(glm, **dict(options))
    u = d
    columns: dict[tuple[int, ...], int] = {}
    mean_rows: list[dict[int, float]] = []
    second_rows: list[dict[int, float]] = []

    def expand(index: tuple[int, ...], poly: Poly, weight: float) -> dict[int, float]:
        row: dict[int, float] = {}
        for k, c in enumerate(poly):
            tup = tuple(sorted(index + (u,) * k))
            if c == 0.0 or len(tup) % 2:
                continue  # odd Gaussian moments vanish
            col = columns.setdefault(tup, len(columns))
            row[col] = row.get(col, 0.0) + c * weight
        return row

    for a in comps:
        mean_rows.append(expand(a.index, h(a.y_power, 0), a.weight))
    for a in comps:
        for b in comps:
            second_rows.append(_pair(a, b, h, expand))

    by_order: dict[int, list[tuple[int, ...]]] = {}
    for tup in columns:
        by_order.setdefault(len(tup), []).append(tup)
    orders = sorted(by_order)
    order_cols = [columns[t] for o in orders for t in by_order[o]]
    position = np.empty(len(columns), dtype=int)
    position[order_cols] = np.arange(len(columns))
    tuples = tuple(np.array(by_order[o], dtype=int).reshape(-1, o) for o in orders)
    return MomentProgram(d, len(comps), tuples, _dense(mean_rows, position),
                         _dense(second_rows, position))


def _pair(a: Component, b: Component, h: Callable[[int, int], Poly],
          expand: Callable[[tuple[int, ...], Poly, float], dict[int, float]]) -> dict[int, float]:
    return expand(a.index + b.index, h(a.y_power, b.y_power), a.weight * b.weight)


def _dense(rows: list[dict[int, float]], position: NDArray) -> NDArray:
    out = np.zeros((len(rows), len(position)))
    for r, row in enumerate(rows):
        for col, v in row.items():
            out[r, position[col]] += v
    return out
