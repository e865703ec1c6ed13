"""Marginal workloads: which attribute subsets a mechanism is asked to preserve.

A clique is a tuple of attribute names in *canonical order* (the order of the
attribute list the workload was built from), so every list built here is
deterministic: cliques are sorted by size, then by the positions of their
attributes in that list. Nothing depends on set or hash order.

A workload may also be a seeded random subset of those cliques (``number``/``seed`` of
:func:`build_workload`, drawn by :func:`sample_cliques`): the query-release paper's
ADULT* and LOANS workloads (Liu, Vietri & Wu 2021, App. F.6: 64 of the 3-way marginals
with at most N cells, drawn with seed 0).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

Clique = tuple[str, ...]

WORKLOADS: tuple[str, ...] = ("all_pairs", "target_pairs", "all_triples", "all_<k>way")
_KWAY = re.compile(r"all_([1-9][0-9]*)way")


def is_workload(name: str) -> bool:
    """Whether ``name`` is a workload :func:`build_workload` knows."""
    return name in WORKLOADS[:3] or _KWAY.fullmatch(name) is not None


def canonical(clique: Iterable[str], order: Sequence[str]) -> Clique:
    """The clique's attributes sorted by their position in ``order``."""
    pos = {a: i for i, a in enumerate(order)}
    items = tuple(clique)
    unknown = [a for a in items if a not in pos]
    if unknown:
        raise ValueError(f"clique attributes {unknown} are not in {list(order)}")
    if len(set(items)) != len(items):
        raise ValueError(f"clique {items} repeats an attribute")
    return tuple(sorted(items, key=pos.__getitem__))


def sort_cliques(cliques: Iterable[Iterable[str]], order: Sequence[str]) -> list[Clique]:
    """Canonicalise, deduplicate and sort cliques by (size, attribute positions)."""
    pos = {a: i for i, a in enumerate(order)}
    unique = {canonical(c, order) for c in cliques}
    return sorted(unique, key=lambda c: (len(c), [pos[a] for a in c]))


def all_kway(attributes: Sequence[str], k: int) -> list[Clique]:
    """Every k-subset of ``attributes`` (k >= 1), in lexicographic position order."""
    if not 1 <= k <= len(attributes):
        raise ValueError(f"k={k} must lie in [1, {len(attributes)}] (number of attributes)")
    return [tuple(c) for c in itertools.combinations(attributes, k)]


def downward_closure(cliques: Iterable[Clique], order: Sequence[str]) -> list[Clique]:
    """All non-empty subsets of the given cliques, sorted by size then position."""
    subsets: list[Clique] = []
    for cl in cliques:
        for r in range(1, len(cl) + 1):
            subsets.extend(itertools.combinations(cl, r))
    return sort_cliques(subsets, order)


def clique_size(clique: Clique, domain: Mapping[str, int]) -> int:
    """Number of cells of the clique's marginal."""
    return math.prod(int(domain[a]) for a in clique)


def filter_by_size(cliques: Iterable[Clique], domain: Mapping[str, int],
                   max_cells: int | None) -> list[Clique]:
    """Keep the cliques whose marginal has at most ``max_cells`` cells (None keeps all)."""
    if max_cells is None:
        return list(cliques)
    if max_cells < 1:
        raise ValueError(f"max_cells={max_cells} must be >= 1 or None")
    return [c for c in cliques if clique_size(c, domain) <= max_cells]


def sample_cliques(cliques: Sequence[Clique], number: int, seed: int = 0) -> list[Clique]:
    """``number`` of ``cliques`` drawn without replacement, as the query-release paper's
    authors draw their random workloads (``np.random.RandomState(seed).choice(len(cliques),
    number, replace=False)`` over the list in the order given, itertools order for
    :func:`all_kway`), in draw order; all of them, in order, if there are at most ``number``.

    Independent of any trial's generator: a workload is public and the same in every trial.
    """
    if isinstance(number, bool) or not isinstance(number, int | np.integer) or number < 1:
        raise ValueError(f"number={number!r} of marginals must be an integer >= 1")
    items = list(cliques)
    if len(items) <= number:
        return items
    # not privacy noise: public
    picks = np.random.RandomState(int(seed)).choice(len(items), int(number), replace=False)
    return [items[int(i)] for i in picks]


def distinct(attributes: Iterable[str]) -> list[str]:
    """``attributes`` as a list, refused (ValueError) when a name repeats: a marginal over
    a repeated attribute would count one column twice."""
    attrs = list(attributes)
    if len(set(attrs)) != len(attrs):
        raise ValueError(f"attributes repeat a name: {attrs}")
    return attrs


def build_workload(name: str, attributes: Sequence[str], target: str | None = None,
                   domain: Mapping[str, int] | None = None,
                   max_cells: int | None = None, *, number: int | None = None,
                   seed: int = 0) -> list[Clique]:
    """A named workload over ``attributes`` (which must include ``target`` if one is needed).

    - ``all_pairs``: every 2-way marginal (the DD-SSP paper's workload, Sec. G.2);
    - ``target_pairs``: every (feature, target) pair;
    - ``all_triples``: every 3-way marginal;
    - ``all_<k>way`` (e.g. ``all_4way``): every k-way marginal (the excess-risk paper's
      workload is ``all_4way`` with ``max_cells`` 1e6).
    ``max_cells`` drops cliques with more cells (needs ``domain``); a workload left empty
    is an error. ``number`` then keeps that many of the remaining cliques, drawn by
    :func:`sample_cliques` with ``seed`` (None, the default, keeps all); the result is
    sorted as every workload is, so the draw decides which cliques, not their order.
    """
    attrs = distinct(attributes)
    if name == "all_pairs":
        out = all_kway(attrs, 2)
    elif name == "all_triples":
        out = all_kway(attrs, 3)
    elif (kway := _KWAY.fullmatch(name)) is not None:
        out = all_kway(attrs, int(kway.group(1)))
    elif name == "target_pairs":
        if target not in attrs:
            raise ValueError(f"target={target!r} is not among the attributes {attrs}")
        out = [canonical((a, target), attrs) for a in attrs if a != target]
    else:
        raise ValueError(f"workload={name!r} is unknown; valid: {', '.join(WORKLOADS)}")
    if max_cells is not None:
        if domain is None:
            raise ValueError("max_cells needs the domain sizes")
        out = filter_by_size(out, domain, max_cells)
    if not out:
        raise ValueError(f"workload {name!r}: every marginal over {attrs} has more than "
                         f"max_cells={max_cells} cells")
    if number is not None:
        out = sample_cliques(out, number, seed)
    return sort_cliques(out, attrs)


def workload_weights(workload: Sequence[Clique], order: Sequence[str]) -> dict[Clique, float]:
    """AIM's candidate weights w_r = sum_{s in W} c_s |r & s| over the downward closure
    of the workload, with every workload weight c_s = 1 (AIM paper, Alg. 2 line 8).
    Returned in the closure's deterministic order.

    Since |r & s| counts the attributes of r that s holds, w_r = sum over a in r of the
    number of workload cliques holding a: O(|closure| k) instead of O(|closure| |W|)
    (2.6 million set intersections for Adult's 4-way workload), same integers."""
    closure = downward_closure(workload, order)
    holding = Counter(a for s in workload for a in set(s))
    return {r: float(sum(holding[a] for a in r)) for r in closure}
