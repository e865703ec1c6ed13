"""PrivTree (Zhang, Xiao & Xie 2016) as the BinAgg paper's Appendix C states it.

Every visited node v gets a biased count b(v) = max(c(v) - depth(v) * delta, theta - delta),
a Laplace(lambda) perturbation, and is split into ``fanout`` equal children along its
widest dimension iff the noisy value exceeds ``theta``. With
lambda = (2 kappa - 1) / (kappa - 1) / epsilon and delta = lambda * ln(kappa)
(Corollary 1 of Zhang et al.) the set of leaves is epsilon-DP (add/remove one record).

Only the boxes are released; the counts stay private (the paper's Alg. 1 re-counts them
with Gaussian noise). Two stopping rules that depend on the domain only are allowed
because they are post-processing of the unbounded tree (prune below a depth):
``max_depth`` and boxes too narrow to halve in floating point.

Privacy trace: the split tests are drawn by :class:`dpbench.privacy.noise.PrivTree`, which
records the whole tree as one ``privtree`` draw (Zhang et al.'s analysis covers all its
Laplace draws together; per-node composition would not) with its Laplace scale, decay and
fan-out, and the biased counts b(v) of the nodes that drew noise (BFS order) as its
``value``: one record moves each by at most 1 (linf). The label names the split decisions,
so two runs are compared node by node only when they visited the same nodes.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpbench.privacy import noise

#: Zhang et al.'s Corollary 1 (and BinAgg's Thm 4.1) are for one record added or removed
NEIGHBOURS = "add_remove"
WIDTH_RULES: tuple[str, ...] = ("absolute", "relative")


@dataclass(frozen=True)
class Partition:
    """Leaves of the tree: box k is prod_i [lower[k, i], upper[k, i])."""

    lower: NDArray
    upper: NDArray
    depth: NDArray

    @property
    def n_bins(self) -> int:
        return int(self.lower.shape[0])

    @property
    def key(self) -> str:
        """A short fingerprint of the boxes (names the bins in a trace label)."""
        return digest(self.lower, self.upper)

    def sensitivity(self) -> NDArray:
        """Per-bin, per-coordinate bound max(|L_ki|, |U_ki|) on a record's features (Alg. 1)."""
        return np.maximum(np.abs(self.lower), np.abs(self.upper))


def privtree_params(epsilon: float, fanout: int = 2) -> tuple[float, float]:
    """(lambda, delta) of Corollary 1: lambda = (2k-1)/(k-1)/eps, delta = lambda ln k."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon={epsilon!r} must be a finite number > 0")
    if int(fanout) != fanout or fanout < 2:
        raise ValueError(f"fanout={fanout!r} must be an integer >= 2")
    lam = (2 * fanout - 1) / (fanout - 1) / epsilon
    return lam, lam * math.log(fanout)


def privtree(X: NDArray, lower: NDArray, upper: NDArray, epsilon: float,
             rng: np.random.Generator, *, theta: float = 0.0, fanout: int = 2,
             width: str = "absolute", max_depth: int | None = None
             ) -> tuple[Partition, NDArray]:
    """Run PrivTree on the rows of X inside the public box [lower, upper].

    Returns the leaves and, for each row, the index of its leaf (private; used
    only to aggregate). Rows must lie inside the box (callers clip first). A
    child's interval is half-open [a, b) except at the domain's upper edge.
    ``width='relative'`` picks the widest dimension relative to the root box
    (an option; the paper splits the widest in absolute units).
    """
    X = np.asarray(X, dtype=float)
    lo0, hi0 = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    _check_inputs(X, lo0, hi0, width, max_depth)
    lam, delta = privtree_params(epsilon, fanout)
    scale = (hi0 - lo0) if width == "relative" else np.ones_like(lo0)
    scale = np.where(scale > 0, scale, 1.0)
    leaf_of = np.empty(X.shape[0], dtype=np.int64)
    lows, highs, depths = [], [], []
    tests = noise.PrivTree(lam, delta, theta, fanout, relation=NEIGHBOURS)
    decisions: list[bool] = []
    queue = deque([(lo0, hi0, 0, np.arange(X.shape[0]))])
    while queue:
        lo, hi, depth, rows = queue.popleft()
        dim = int(np.argmax((hi - lo) / scale))
        cuts = lo[dim] + (hi[dim] - lo[dim]) * np.arange(1, fanout) / fanout
        can_split = (max_depth is None or depth < max_depth) and bool(
            np.all(np.diff(np.concatenate([[lo[dim]], cuts, [hi[dim]]])) > 0))
        split = can_split and tests.split(rows.size, depth, rng)
        if can_split:
            decisions.append(split)
        if split:
            which = np.searchsorted(cuts, X[rows, dim], side="right")
            edges = np.concatenate([[lo[dim]], cuts, [hi[dim]]])
            for j in range(fanout):
                c_lo, c_hi = lo.copy(), hi.copy()
                c_lo[dim], c_hi[dim] = edges[j], edges[j + 1]
                queue.append((c_lo, c_hi, depth + 1, rows[which == j]))
        else:
            leaf_of[rows] = len(lows)
            lows.append(lo)
            highs.append(hi)
            depths.append(depth)
    part = Partition(np.array(lows), np.array(highs), np.array(depths, dtype=np.int64))
    tests.close(f"privtree (split decisions {digest(np.array(decisions))})")
    return part, leaf_of


def digest(*arrays: NDArray) -> str:
    """A short fingerprint of public arrays (names a release's query in a trace label)."""
    h = hashlib.blake2b(digest_size=4)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _check_inputs(X: NDArray, lo: NDArray, hi: NDArray, width: str,
                  max_depth: int | None) -> None:
    if X.ndim != 2 or lo.shape != (X.shape[1],) or hi.shape != lo.shape:
        raise ValueError(f"need X (n, d) and bounds (d,), got {X.shape}, {lo.shape}, {hi.shape}")
    if np.any(hi < lo):
        raise ValueError("every upper bound must be >= its lower bound")
    if X.size and (np.any(X < lo) or np.any(X > hi)):
        raise ValueError("rows of X must lie inside [lower, upper]; clip to the bounds first")
    if width not in WIDTH_RULES:
        raise ValueError(f"width={width!r}; valid: {', '.join(WIDTH_RULES)}")
    if max_depth is not None and max_depth < 0:
        raise ValueError(f"max_depth={max_depth!r} must be None or >= 0")
