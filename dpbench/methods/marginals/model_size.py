"""Model sizes of many candidate junction trees at once, equal to mbi's one-by-one sizes.

AIM keeps only the candidates r whose junction tree with the measured cliques fits
the size limit, i.e. ``mbi.junction_tree.hypothetical_model_size(domain, base + [r])``
for every r in the workload's downward closure, every round: one networkx junction
tree per candidate (~5 ms each; 1,500 a run on Adult's pairs, 2,000 a round with a
4-way workload), which was nearly all of AIM's selection time.

Here the same quantity is computed for all candidates together, as bitmask arrays
(candidates x attributes), following mbi step for step:

- the graph joins attributes that share a clique (``_make_graph``); if it is a tree,
  mbi triangulates along a DFS post-order, which adds no edge: the maximal cliques
  are its edges;
- otherwise mbi eliminates greedily (``greedy_order``): at each step the remaining
  attribute whose clique union (its closed neighbourhood in the elimination graph; an
  attribute in no clique costs 1) has the fewest cells, the first in domain order on
  ties; eliminating it joins its neighbours (``_triangulated``). The maximal cliques of
  the triangulated graph are the maximal sets {v} + neighbours of v when v is
  eliminated;
- size = cells of the maximal cliques, summed, x 8 / 2^20 MB.

Cell counts are exact integers (int64 when the whole domain fits in 62 bits, Python
ints otherwise), so ties break as in mbi and the sizes are equal to the bit
(tests/methods/test_aim.py compares them on random clique sets).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from dpbench.data.workloads import Clique

#: beyond this many attributes the masks do not fit int64 (the caller falls back to mbi)
MAX_ATTRIBUTES = 62


def model_sizes_mb(attributes: Sequence[str], sizes: Mapping[str, int],
                   base: Sequence[Clique], candidates: Sequence[Clique]) -> np.ndarray:
    """``hypothetical_model_size(domain, [*base, c])`` in MB for every c in ``candidates``."""
    attrs = list(attributes)
    d = len(attrs)
    if d > MAX_ATTRIBUTES:
        raise ValueError(f"{d} attributes; at most {MAX_ATTRIBUTES}")
    index = {a: i for i, a in enumerate(attrs)}
    card = [int(sizes[a]) for a in attrs]
    dtype = np.int64 if math.prod(card) < 2**62 else object
    n = len(candidates)
    base_adj, base_cov = _adjacency([base], index, d)
    cand_adj, cand_cov = _adjacency([[c] for c in candidates], index, d)
    adj = base_adj | cand_adj                       # (n, d) neighbour masks, self excluded
    covered = base_cov | cand_cov                   # (n,) mask of attributes in some clique
    edges = sum(_popcount(adj[:, j]) for j in range(d)) // 2
    tree = (edges == d - 1) & (edges > 0) & _connected(adj, d)
    cells = np.zeros(n, dtype=dtype)
    if tree.any():
        cells[tree] = _tree_cells(adj[tree], card, dtype)
    if (~tree).any():
        cells[~tree] = _greedy_cells(adj[~tree], covered[~tree], card, dtype)
    return np.array([int(c) * 8 / 2**20 for c in cells], dtype=float)


def _adjacency(groups: Sequence[Sequence[Clique]], index: Mapping[str, int], d: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour masks (len(groups), d), covered masks (len(groups),)) of clique groups."""
    adj = np.zeros((len(groups), d), dtype=np.int64)
    cov = np.zeros(len(groups), dtype=np.int64)
    for g, cliques in enumerate(groups):
        for cl in cliques:
            mask = 0
            for a in cl:
                mask |= 1 << index[a]
            cov[g] |= mask
            for a in cl:
                adj[g, index[a]] |= mask & ~(1 << index[a])
    return adj, cov


def _bit(masks: np.ndarray, j: int) -> np.ndarray:
    return (masks >> j) & 1 == 1


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.array([int(m).bit_count() for m in masks], dtype=np.int64)


def _connected(adj: np.ndarray, d: int) -> np.ndarray:
    """Whether each graph (rows of neighbour masks) is connected."""
    reach = np.ones(len(adj), dtype=np.int64)       # from attribute 0
    for _ in range(d):
        grown = reach.copy()
        for j in range(d):
            grown |= np.where(_bit(reach, j), adj[:, j], 0)
        reach = grown
    return reach == (1 << d) - 1


def _cells(masks: np.ndarray, card: Sequence[int], dtype: object) -> np.ndarray:
    """Cells of the attribute sets given as masks (product of their sizes)."""
    out = np.ones(masks.shape, dtype=dtype)
    for j, size in enumerate(card):
        out = np.where(_bit(masks, j), out * size, out)
    return out


def _tree_cells(adj: np.ndarray, card: Sequence[int], dtype: object) -> np.ndarray:
    """A tree's junction tree has its edges as cliques: sum of size(a) size(b) per edge."""
    d = adj.shape[1]
    total = np.zeros(len(adj), dtype=dtype)
    for j in range(d):
        for k in range(j + 1, d):                     # each edge once, from its lower end
            total = total + np.where(_bit(adj[:, j], k), card[j] * card[k], 0)
    return total


def _greedy_cells(adj: np.ndarray, covered: np.ndarray, card: Sequence[int], dtype: object
                  ) -> np.ndarray:
    """Cells of the junction tree from mbi's greedy elimination, for each graph."""
    n, d = adj.shape
    adj = adj.copy()
    rows = np.arange(n)
    remaining = np.ones((n, d), dtype=bool)
    self_bits = np.array([1 << j for j in range(d)], dtype=np.int64)
    elim = np.zeros((n, d), dtype=np.int64)           # {v} + neighbours when v is eliminated
    big = np.array(2**62 if dtype is np.int64 else math.prod(card) + 1, dtype=dtype)
    for _ in range(d):
        closed = adj | self_bits
        cost = _cells(closed, card, dtype)
        cost = np.where(_bit(covered[:, None], np.arange(d)[None, :]) | ~remaining, cost, 1)
        cost = np.where(remaining, cost, big)
        v = _first_argmin(cost)
        nb = adj[rows, v]
        elim[rows, v] = nb | self_bits[v]
        for j in range(d):                            # neighbours of v become a clique
            joined = np.where(_bit(nb, j), (adj[:, j] | nb) & ~self_bits[j], adj[:, j])
            adj[:, j] = joined & ~self_bits[v]
        adj[rows, v] = 0
        remaining[rows, v] = False
    maximal = np.ones((n, d), dtype=bool)
    for u in range(d):
        inside = (elim & ~elim[:, u:u + 1]) == 0      # E_v within E_u
        inside[:, u] = False
        maximal &= ~inside
    return np.where(maximal, _cells(elim, card, dtype), 0).sum(axis=1)


def _first_argmin(cost: np.ndarray) -> np.ndarray:
    """Per row, the first column of the minimum (as ``min`` over an ordered dict)."""
    if cost.dtype != object:
        return np.argmin(cost, axis=1)
    return np.array([min(range(len(r)), key=r.__getitem__) for r in cost], dtype=np.int64)
