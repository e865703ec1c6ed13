"""Gaussian product moments by Isserlis' (Wick's) theorem.

For w ~ N(0, C): E[w_{i_1} ... w_{i_2k}] = sum over the (2k-1)!! perfect
matchings of the positions of prod C[i_a, i_b]; odd orders vanish. Index
tuples are static (numpy); C may be a traced JAX array.
"""

from __future__ import annotations

from functools import cache

from dpbench.methods.bayes import _jax  # noqa: F401  (first: JAX in float64)

# isort: split
import jax.numpy as jnp
import numpy as np
from numpy.typing import NDArray


@cache
def pairings(m: int) -> NDArray:
    """All perfect matchings of range(m) as an int array (count, m // 2, 2)."""
    if m % 2:
        raise ValueError(f"order m={m} must be even")

    def rec(items: tuple[int, ...]) -> list[list[tuple[int, int]]]:
        if not items:
            return [[]]
        first, rest = items[0], items[1:]
        out = []
        for k, other in enumerate(rest):
            for tail in rec(rest[:k] + rest[k + 1:]):
                out.append([(first, other), *tail])
        return out

    return np.array(rec(tuple(range(m))), dtype=int).reshape(-1, m // 2, 2)


def moments(C: jnp.ndarray, tuples: NDArray) -> jnp.ndarray:
    """E[prod_j w_{tuples[k, j]}] for each row k of an int array (K, m)."""
    tuples = np.asarray(tuples, dtype=int)
    K, m = tuples.shape
    if m == 0:
        return jnp.ones(K)
    if m % 2:
        return jnp.zeros(K)
    P = pairings(m)
    left = tuples[:, P[:, :, 0]]   # (K, n_pairings, m // 2)
    right = tuples[:, P[:, :, 1]]
    return jnp.sum(jnp.prod(C[left, right], axis=-1), axis=-1)
