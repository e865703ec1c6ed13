"""PrivTree (BinAgg App. C): noise scale, depth penalty, splitting rule, partition validity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.methods.binagg.privtree import privtree, privtree_params
from dpbench.privacy.noise import PrivTree


class _ZeroNoise:
    """Stands in for a Generator: every Laplace draw is 0 (deterministic splitting)."""

    def laplace(self, loc: float, scale: float) -> float:
        return 0.0


def test_params_follow_corollary_1() -> None:
    # lambda = (2k-1)/(k-1)/eps, delta = lambda ln k; binary tree: 3/eps and 3 ln2/eps
    lam, delta = privtree_params(0.5, fanout=2)
    assert lam == pytest.approx(6.0, rel=1e-15)
    assert delta == pytest.approx(6.0 * math.log(2), rel=1e-15)
    lam4, delta4 = privtree_params(2.0, fanout=4)
    assert lam4 == pytest.approx(7 / 3 / 2.0, rel=1e-15)
    assert delta4 == pytest.approx(7 / 6 * math.log(4), rel=1e-15)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf")])
def test_params_reject_bad_epsilon(bad: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        privtree_params(bad)


class _Drawn:
    """A generator stand-in whose Laplace draw is a given number."""

    def __init__(self, z: float) -> None:
        self.z = z

    def laplace(self, loc: float, scale: float) -> float:
        return loc + self.z


def split_decision(count: int, depth: int, z: float, *, theta: float, delta: float) -> bool:
    """The privacy primitive's split test with its Laplace draw fixed to ``z``."""
    return PrivTree(1.0, delta, theta, 2, relation="add_remove").split(count, depth, _Drawn(z))


def test_split_decision_uses_depth_penalty_and_floor() -> None:
    # b = max(c - depth*delta, theta - delta); split iff b + noise > theta
    assert split_decision(5, 2, 0.0, theta=0.0, delta=2.0)          # 5 - 4 = 1 > 0
    assert not split_decision(4, 2, 0.0, theta=0.0, delta=2.0)      # 4 - 4 = 0, not > 0
    assert not split_decision(100, 0, -100.5, theta=0.0, delta=2.0)  # noise pulls it under
    # floor: a nearly empty deep node keeps theta - delta, so noise > delta splits it
    assert split_decision(0, 50, 2.01, theta=1.0, delta=2.0)
    assert not split_decision(0, 50, 1.99, theta=1.0, delta=2.0)


def test_deterministic_tree_splits_widest_dimension_at_midpoints() -> None:
    # eps = 1 -> delta = 3 ln 2 = 2.08. Zero noise: split iff count - depth*delta > 0.
    # Domain [0,4] x [0,1]: root (10 pts) splits dim 0 at 2; left [0,2)x[0,1] has 7 points
    # (7 - 2.08 > 0) -> splits dim 0 (width 2 > 1) at 1; right [2,4] has 3 (3 - 2.08 > 0)
    # -> splits at 3. Depth-2 nodes need > 4.16 points: [0,1) has 5 -> splits dim 0 or 1?
    # widths (1, 1): ties go to the first dimension -> at 0.5; depth 3 needs > 6.24: stop.
    X = np.array([[0.1, 0.5], [0.2, 0.5], [0.3, 0.5], [0.6, 0.5], [0.9, 0.5],  # in [0,1)
                  [1.5, 0.5], [1.7, 0.5],                                      # in [1,2)
                  [2.5, 0.5], [3.5, 0.5], [4.0, 1.0]])                          # right half
    part, leaf_of = privtree(X, np.array([0.0, 0.0]), np.array([4.0, 1.0]), 1.0, _ZeroNoise())
    boxes = sorted(zip(part.lower[:, 0], part.upper[:, 0], part.depth, strict=True))
    assert boxes == [(0.0, 0.5, 3), (0.5, 1.0, 3), (1.0, 2.0, 2), (2.0, 3.0, 2), (3.0, 4.0, 2)]
    assert np.all(part.lower[:, 1] == 0.0) and np.all(part.upper[:, 1] == 1.0)
    # each row lies in its leaf; the domain's upper edge (4.0) belongs to the last leaf
    for x, k in zip(X, leaf_of, strict=True):
        assert np.all(part.lower[k] <= x) and np.all(x <= part.upper[k])
    assert part.upper[leaf_of[-1], 0] == 4.0
    # Alg. 1's sensitivity vector: max(|L|, |U|) per coordinate
    assert np.array_equal(part.sensitivity(), np.maximum(abs(part.lower), abs(part.upper)))


def test_leaves_partition_the_domain() -> None:
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 3, size=(2000, 3))
    lo, hi = np.array([-1.0, -1.0, -1.0]), np.array([3.0, 3.0, 3.0])
    part, leaf_of = privtree(X, lo, hi, 1.0, rng)
    vol = np.prod(part.upper - part.lower, axis=1)
    assert vol.sum() == pytest.approx(64.0, rel=1e-12)
    assert part.n_bins > 8                       # 2,000 points: the tree must grow
    inside = (X >= part.lower[leaf_of]) & (
        (X < part.upper[leaf_of]) | (part.upper[leaf_of] == hi))
    assert inside.all()


def test_root_split_probability_matches_laplace_scale() -> None:
    # max_depth=1 makes the children forced leaves, so K > 1 iff the root split.
    # eps = 1: lambda = 3, delta = 3 ln2.
    #  (a) count 2, theta 0:  P = P(2 + Lap(3) > 0) = 1 - exp(-2/3)/2 = 0.7433
    #      (with a wrong scale lambda = 1/eps it would be 0.932)
    #  (b) count 0, theta 5: b = theta - delta = 2.92, P = P(Lap(3) > delta) = exp(-ln2)/2 = 0.25
    # 4,000 runs each, seed 11; tolerance 4 binomial sd (0.028 / 0.027).
    rng = np.random.default_rng(11)
    lo, hi = np.zeros(1), np.ones(1)
    cases = [(np.array([[0.2], [0.7]]), 0.0, 1 - math.exp(-2 / 3) / 2),
             (np.zeros((0, 1)), 5.0, 0.25)]
    for X, theta, p in cases:
        runs = 4000
        hits = sum(privtree(X, lo, hi, 1.0, rng, theta=theta, max_depth=1)[0].n_bins > 1
                   for _ in range(runs))
        assert abs(hits / runs - p) < 4 * math.sqrt(p * (1 - p) / runs), (theta, hits / runs, p)


def test_rejects_rows_outside_the_box_and_bad_options() -> None:
    with pytest.raises(ValueError, match="inside"):
        privtree(np.array([[2.0]]), np.zeros(1), np.ones(1), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="width"):
        privtree(np.zeros((1, 1)), np.zeros(1), np.ones(1), 1.0, np.random.default_rng(0),
                 width="diagonal")
