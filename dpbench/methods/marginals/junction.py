"""Exact marginals of a Markov random field in numpy, via its junction tree.

mbi answers an out-of-clique marginal query with a JIT-compiled variable
elimination per (query, model structure); AIM asks for every workload marginal
after every round, with a new structure each round, which would compile
thousands of programs. Here the tree is calibrated once (two-pass sum-product
in log space) and every marginal is read off it:

- inside one tree clique: a sum of that clique's belief;
- pairs (a, b) from one first attribute: by carrying P(a, separator) along the
  tree from a clique holding ``a`` (one traversal serves every b);
- any other clique (k-way across several tree cliques): variable elimination
  over a Steiner subtree, i.e. the smallest connected set of tree cliques found
  by growing paths from the clique holding most of the query. On a connected
  subtree of a calibrated junction tree the joint of its attributes is the root
  belief times the conditionals P(c minus sep | sep) of the other cliques, so the
  marginal is one ``einsum`` of those tables (numpy's greedy order, in pairwise steps
  of at most ELIMINATION_MAX_CELLS cells, each table first summed onto what the query
  and the other tables need);
  attributes in different tree components are independent (outer product).

``CalibratedTree.marginals`` answers many queries at once (AIM's candidates each round):
a query's part in each tree component is computed once and shared by every query with
that part, so the thousands of 3- and 4-way candidates of a young model (many components)
cost a few eliminations and outer products rather than one elimination per component per
candidate.

The tree structure comes from mbi's own junction-tree builder, so model-size
limits and this inference agree on the cliques. It is imported when a tree is built, not
with this module, since mbi brings JAX (planning commands import the method classes only).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence

import networkx as nx
import numpy as np
from scipy.special import logsumexp

from dpbench import lazy
from dpbench.data.workloads import Clique
from dpbench.methods.marginals.axes import aligned

_mbi = lazy.module("dpbench.methods.marginals._mbi")  # JAX and mbi: only once a tree is built

#: Largest intermediate (cells) of an elimination's pairwise contractions. np.einsum's
#: "greedy" order caps intermediates at the largest operand, and past the cap it contracts
#: the rest in one multi-operand loop over the product of their axes. On a captured
#: excess-risk Adult model (0.53 MB) a round's candidate marginals (1,368 of at most 1M
#: cells) took 7.7-8.9 CPU-s that way, 2.1-4.2 with pairwise steps of up to 2^20 cells
#: (8 MB) and the reductions below (docs/speed.md, 2026-11-28).
ELIMINATION_MAX_CELLS = 2**20

#: Tree cliques of at least this many cells answer a marginal they hold by a chain of sums,
#: one attribute at a time (the largest first), whose intermediate tables are cached
#: (:meth:`CalibratedTree.hosted`); smaller ones by one multi-axis sum. On the excess-risk
#: paper's Dutch eps-2 model (a 4.0M-cell tree clique holding 385 of the 793 candidates) a
#: round's candidate marginals took 10.6 CPU-s, nearly all in those 385 sums of the whole
#: table (docs/speed.md, 2026-11-28).
CHAIN_MIN_CELLS = 2**16
#: Cells of the chains' cached intermediate tables kept at once (2^24: 128 MB), the oldest
#: dropped first; a dropped table is summed again from the longest cached start of its chain.
CHAIN_CACHE_CELLS = 2**24


class Table:
    """A non-negative or log-space array whose axes are named attributes."""

    __slots__ = ("attrs", "values")

    def __init__(self, attrs: Sequence[str], values: np.ndarray) -> None:
        self.attrs = tuple(attrs)
        self.values = np.asarray(values, dtype=float)
        if self.values.ndim != len(self.attrs):
            raise ValueError(f"table over {self.attrs} has {self.values.ndim} axes")

    def aligned(self, target: Sequence[str]) -> np.ndarray:
        """Values transposed and reshaped to broadcast against a table over ``target``."""
        return aligned(self.attrs, self.values, target)

    def sum_to(self, keep: Sequence[str]) -> Table:
        """Marginal onto ``keep`` (in that order)."""
        keep = tuple(keep)
        axes = tuple(i for i, a in enumerate(self.attrs) if a not in keep)
        v = self.values.sum(axis=axes) if axes else self.values
        rest = [a for a in self.attrs if a in keep]
        return Table(keep, np.transpose(v, [rest.index(a) for a in keep]))

    def logsumexp_to(self, keep: Sequence[str]) -> Table:
        keep = tuple(keep)
        axes = tuple(i for i, a in enumerate(self.attrs) if a not in keep)
        v = logsumexp(self.values, axis=axes) if axes else self.values
        rest = [a for a in self.attrs if a in keep]
        return Table(keep, np.transpose(v, [rest.index(a) for a in keep]))


class CalibratedTree:
    """A calibrated junction tree of the MRF sum_c theta_c (log-potentials), scaled to ``total``."""

    def __init__(self, sizes: Mapping[str, int], attributes: Sequence[str],
                 cliques: Sequence[Clique], log_tables: Sequence[np.ndarray],
                 total: float) -> None:
        self.attributes = tuple(attributes)
        self.sizes = {a: int(sizes[a]) for a in self.attributes}
        self.total = float(total)
        domain = _mbi.to_domain(self.attributes, self.sizes)
        jtree, _ = _mbi.junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
        self.tree: nx.Graph = jtree
        self.cliques: list[Clique] = list(_mbi.junction_tree.maximal_cliques(jtree))
        self._home = {a: next(c for c in self.cliques if a in c) for a in self.attributes}
        log_psi = {c: np.zeros([self.sizes[a] for a in c]) for c in self.cliques}
        for cl, tab in zip(cliques, log_tables, strict=True):     # added in place: the same
            host = next(c for c in self.cliques if set(cl) <= set(c))   # sums, no new table
            np.add(log_psi[host], Table(cl, tab).aligned(host), out=log_psi[host])
        self._comps = self._components()
        self.beliefs = self._calibrate(log_psi)
        self._conditionals: dict[tuple[Clique, Clique], np.ndarray] = {}
        self._reductions: dict[tuple[Clique, Clique | None, Clique], np.ndarray] = {}
        self._chains: dict[tuple[Clique, tuple[str, ...]], np.ndarray] = {}
        self._chain_cells = 0
        self._comp_of = {a: i for i, comp in enumerate(self._comps) for c in comp for a in c}
        self._holding: dict[str, frozenset[int]] = {
            a: frozenset(i for i, c in enumerate(self.cliques) if a in c) for a in self.attributes}

    # -- calibration --------------------------------------------------------------------
    def _calibrate(self, log_psi: dict[Clique, np.ndarray]) -> dict[Clique, Table]:
        beliefs: dict[Clique, Table] = {}
        for comp in self._comps:
            root = comp[0]
            order = list(nx.dfs_preorder_nodes(self.tree, root))
            parent = {root: None, **{v: u for u, v in nx.dfs_edges(self.tree, root)}}
            up: dict[Clique, Table] = {}
            for c in reversed(order):                      # leaves first
                acc = Table(c, log_psi[c].copy())
                for ch in self._children(c, parent):
                    acc.values += up[ch].aligned(c)
                p = parent[c]
                if p is not None:
                    up[c] = acc.logsumexp_to(_sep(c, p))
            down: dict[Clique, Table] = {}
            logb: dict[Clique, np.ndarray] = {}
            for c in order:                                # root first
                b = log_psi[c].copy()
                for ch in self._children(c, parent):
                    b += up[ch].aligned(c)
                if parent[c] is not None:
                    b += down[c].aligned(c)
                logb[c] = b
                for ch in self._children(c, parent):
                    down[ch] = Table(c, b - up[ch].aligned(c)).logsumexp_to(_sep(c, ch))
            log_z = float(logsumexp(logb[root]))
            for c in order:                                # exp(logb - log_z) * total
                b = np.subtract(logb[c], log_z, out=logb[c])
                beliefs[c] = Table(c, np.multiply(np.exp(b, out=b), self.total, out=b))
        return beliefs

    def _components(self) -> list[list[Clique]]:
        pos = {c: i for i, c in enumerate(self.cliques)}
        comps = [sorted(comp, key=pos.__getitem__) for comp in nx.connected_components(self.tree)]
        return sorted(comps, key=lambda comp: pos[comp[0]])

    def _children(self, c: Clique, parent: dict[Clique, Clique | None]) -> list[Clique]:
        return [n for n in self.tree.neighbors(c) if parent.get(n) == c]

    # -- queries ----------------------------------------------------------------------------
    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        """Model counts over any ``clique`` of attributes (axes in the given order)."""
        return self.marginals([clique])[tuple(clique)]

    def marginals(self, queries: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        """Model counts over every query at once (AIM's candidates, each round).

        A query inside one tree clique is a sum of that clique's belief. Any other query is
        split by tree component; each part (the query's attributes in one component) is
        computed once, inside a clique or by elimination, and shared by every query with the
        same part, and the parts of independent components are multiplied.
        """
        return dict(self.iter_marginals(queries))

    def iter_marginals(self, queries: Sequence[Sequence[str]]
                       ) -> Iterator[tuple[Clique, np.ndarray]]:
        """(query, counts) for every query in order, one at a time, the parts shared as in
        :meth:`marginals` (a repeated query is computed again)."""
        parts: dict[Clique, Table] = {}
        for q in map(tuple, queries):
            self.check(q)
            yield q, self._answer(q, parts)

    def check(self, clique: Clique) -> None:
        """Refuse, in one line, a query that repeats or names an unknown attribute."""
        if len(set(clique)) != len(clique):
            raise ValueError(f"marginal {clique} repeats an attribute")
        unknown = [a for a in clique if a not in self.sizes]
        if unknown:
            raise ValueError(f"marginal {clique}: unknown attributes {unknown}; "
                             f"valid: {', '.join(self.attributes)}")

    def host(self, query: Clique) -> Clique | None:
        """The first tree clique holding every attribute of ``query``, if any."""
        common = frozenset.intersection(*(self._holding[a] for a in query))
        return self.cliques[min(common)] if common else None

    def hosted(self, host: Clique, query: Sequence[str]) -> Table:
        """Tree clique ``host``'s belief summed onto ``query`` (a subset of it, in that order).

        A host of at least CHAIN_MIN_CELLS cells sums its other attributes out one at a
        time, the largest first (ties in the host's order), and caches each intermediate
        table (CHAIN_CACHE_CELLS): the candidates of an AIM round that lack the same largest
        attributes share those sums instead of each reading the whole table. The chain of a
        query is fixed by the query alone, so its marginal has the same bits whether it is
        asked alone or among others, with any cache state (AIM scores a candidate in a
        round and computes the chosen one's marginal again)."""
        belief = self.beliefs[host]
        if belief.values.size < CHAIN_MIN_CELLS:
            return belief.sum_to(query)
        drop = sorted((a for a in host if a not in query),
                      key=lambda a: (-self.sizes[a], host.index(a)))
        start = next((k for k in range(len(drop) - 1, 0, -1)
                      if (host, tuple(drop[:k])) in self._chains), 0)
        values = self._chains[(host, tuple(drop[:start]))] if start else belief.values
        attrs = [a for a in host if a not in drop[:start]]
        for k in range(start, len(drop)):
            axis = attrs.index(drop[k])
            values = values.sum(axis=axis)
            del attrs[axis]
            if k + 1 < len(drop):
                self._cache_chain((host, tuple(drop[:k + 1])), values)
        return Table(attrs, values).sum_to(query)

    def _cache_chain(self, key: tuple[Clique, tuple[str, ...]], values: np.ndarray) -> None:
        if values.size > CHAIN_CACHE_CELLS:
            return
        self._chains[key] = values
        self._chain_cells += values.size
        while self._chain_cells > CHAIN_CACHE_CELLS:
            self._chain_cells -= self._chains.pop(next(iter(self._chains))).size

    def _answer(self, query: Clique, parts: dict[Clique, Table]) -> np.ndarray:
        host = self.host(query)
        if host is not None:
            return self.hosted(host, query).values
        by_comp: dict[int, list[str]] = {}
        for a in query:
            by_comp.setdefault(self._comp_of[a], []).append(a)
        out: Table | None = None
        for i in sorted(by_comp):
            sub = tuple(by_comp[i])
            if sub not in parts:
                h = self.host(sub)
                parts[sub] = (self.hosted(h, sub) if h is not None
                              else Table(sub, self._eliminate(sub, self._comps[i])))
            t = parts[sub]
            out = t if out is None else Table(           # independent tree components
                (*out.attrs, *t.attrs), np.multiply.outer(out.values, t.values / self.total))
        return out.sum_to(query).values

    def _eliminate(self, query: Clique, comp: Sequence[Clique]) -> np.ndarray:
        """Counts over ``query`` (all in one tree component) by variable elimination on a
        Steiner subtree of the component's cliques: the root's belief times the others'
        conditionals given their parents, summed onto ``query``. Each table first has the
        attributes that neither the query nor another node of the subtree holds summed out
        (:meth:`_reduced`, cached: AIM's candidates share these sums, which np.einsum would
        redo per query)."""
        nodes, parent = self._steiner(query, comp)
        wanted = set(query)
        letters = {a: i for i, a in enumerate(dict.fromkeys(a for c in nodes for a in c))}
        operands: list[object] = []
        for i, c in enumerate(nodes):
            others = {a for d in nodes[:i] + nodes[i + 1:] for a in d}
            keep = tuple(a for a in c if a in wanted or a in others)
            operands += [self._reduced(c, parent[c], keep), [letters[a] for a in keep]]
        out = tuple(letters[a] for a in query)
        path = elimination_path(tuple(tuple(s) for s in operands[1::2]),
                                tuple(t.shape for t in operands[::2]), out)
        return np.einsum(*operands, list(out), optimize=path)

    def _reduced(self, c: Clique, p: Clique | None, keep: Clique) -> np.ndarray:
        """Clique c's belief (``p`` None) or its conditional given parent ``p``, summed onto
        ``keep`` (c's attributes in c's order); cached."""
        key = (c, p, keep)
        cache = self._reductions
        if key not in cache:
            table = self.beliefs[c].values if p is None else self._conditional(c, p)
            gone = tuple(i for i, a in enumerate(c) if a not in keep)
            cache[key] = table.sum(axis=gone) if gone else table
        return cache[key]

    def _steiner(self, query: Clique, comp: Sequence[Clique]
                 ) -> tuple[list[Clique], dict[Clique, Clique | None]]:
        """A connected set of cliques covering ``query``, rooted at the clique covering most
        of it, grown by the shortest tree path to each still-uncovered attribute; returns
        (nodes in root-first order, parent of each node within the set)."""
        q = set(query)
        root = max(comp, key=lambda c: len(q & set(c)))       # first of the best, stable
        bfs_parent = {root: None, **{v: u for u, v in nx.bfs_edges(self.tree, root)}}
        nodes, covered = [root], q & set(root)
        for a in query:
            if a in covered:
                continue
            best: list[Clique] | None = None
            for c in comp:
                if a not in c:
                    continue
                path = [c]
                while path[-1] not in nodes:
                    path.append(bfs_parent[path[-1]])
                if best is None or len(path) < len(best):
                    best = path
            for c in reversed(best[:-1]):                     # from the set outwards
                nodes.append(c)
                covered |= q & set(c)
        return nodes, {c: bfs_parent[c] for c in nodes}

    def _conditional(self, c: Clique, p: Clique) -> np.ndarray:
        """P(c minus sep | sep) over clique c's axes, sep = c & p (0 where P(sep) = 0); cached."""
        key = (c, p)
        cache = self._conditionals
        if key not in cache:
            bc = self.beliefs[c]
            bs = bc.sum_to(_sep(c, p)).aligned(c)
            cache[key] = np.divide(bc.values, bs, out=np.zeros_like(bc.values), where=bs > 0)
        return cache[key]

    def pairs_from(self, a: str, others: Sequence[str]) -> dict[str, np.ndarray]:
        """P(a, b) in counts, axes (a, b), for every b in ``others``, by one tree traversal."""
        wanted = [b for b in others if b != a]
        out: dict[str, np.ndarray] = {}
        root = self._home[a]
        parent = dict(nx.bfs_predecessors(self.tree, root))     # in BFS order
        order = [root, *parent]
        first: dict[str, Clique] = {}               # b -> first clique in BFS order holding it
        for c in order:
            for b in c:
                first.setdefault(b, c)
        needed: set[Clique] = set()                 # the cliques on the way to a wanted b
        for b in wanted:
            c = first.get(b)
            while c is not None and c not in needed:
                needed.add(c)
                c = parent.get(c)
        joint = {root: self.beliefs[root]}         # clique -> table over ({a} | clique)
        for c in order:
            if c not in needed:
                continue
            if c != root:
                joint[c] = self._carry(a, joint[parent[c]], parent[c], c)
            for b in c:
                if b in wanted and b not in out:
                    out[b] = joint[c].sum_to((a, b)).values
        missing = [b for b in wanted if b not in out]       # other tree components
        if missing:
            pa = self.marginal((a,))
            for b in missing:
                out[b] = np.outer(pa, self.marginal((b,))) / self.total
        return out

    def _carry(self, a: str, jp: Table, p: Clique, c: Clique) -> Table:
        """P(a, c) from P(a, p) and the beliefs of neighbouring clique c."""
        if a in c:
            return self.beliefs[c]
        m = jp.sum_to((a, *_sep(p, c)))
        target = (a, *c)
        return Table(target, m.aligned(target) * self._conditional(c, p)[None, ...])


@functools.lru_cache(maxsize=2**14)
def elimination_path(subscripts: tuple[tuple[int, ...], ...], shapes: tuple[tuple[int, ...], ...],
                     out: tuple[int, ...]) -> list[object]:
    """np.einsum's "greedy" contraction order (pairwise steps of at most
    ELIMINATION_MAX_CELLS cells) for operands of these subscripts and shapes, found once:
    AIM's candidates repeat a few thousand elimination shapes every round, and numpy's path
    search was 2.5-4% of a paper-settings trial (Adult and Churn, eps 2, profiled
    2026-11-28). np.einsum given this path runs the contractions it would have chosen
    itself, so the marginals are the same to the last bit (tested)."""
    operands: list[object] = []
    for subs, shape in zip(subscripts, shapes, strict=True):
        operands += [np.broadcast_to(np.float64(0.0), shape), list(subs)]
    return np.einsum_path(*operands, list(out), optimize=("greedy", ELIMINATION_MAX_CELLS))[0]


def sample_rounded(tree: CalibratedTree, rows: int, rng: np.random.Generator
                   ) -> dict[str, np.ndarray]:
    """``rows`` records whose marginals track the model's, by randomised rounding.

    Ancestral sampling along the junction tree (Private-PGM's ``round`` method,
    in numpy and driven only by ``rng``): the root clique's cells get
    round(rows * p) records, and each later clique's new attributes are
    assigned, within every group of records sharing a separator value, in
    counts rounded from that group's conditional distribution. Each rounding
    is floor plus the remainder drawn without replacement by fractional part.
    """
    out: dict[str, np.ndarray] = {}
    for comp in tree._comps:
        root = comp[0]
        order = [root, *[v for _, v in nx.bfs_edges(tree.tree, root)]]
        parent = {v: u for u, v in nx.bfs_edges(tree.tree, root)}
        cols: dict[str, np.ndarray] = {}
        for c in order:
            sep = () if c == root else _sep(parent[c], c)
            new = tuple(a for a in c if a not in sep and a not in cols)
            if not new:
                continue
            b = tree.beliefs[c].sum_to((*sep, *new)).values
            sep_shape = b.shape[: len(sep)]
            cond = b.reshape(int(np.prod(sep_shape, dtype=int)), -1)
            group = (np.ravel_multi_index(tuple(cols[a] for a in sep), sep_shape) if sep
                     else np.zeros(rows, dtype=np.int64))
            cell = np.empty(rows, dtype=np.int64)
            for g in np.unique(group):
                idx = np.flatnonzero(group == g)
                p = cond[g] if cond[g].sum() > 0 else np.ones(cond.shape[1])
                # not privacy noise: rows from the model
                cell[idx] = rng.permutation(round_counts(p, idx.size, rng))
            new_shape = b.shape[len(sep):]
            for a, v in zip(new, np.unravel_index(cell, new_shape), strict=True):
                cols[a] = v.astype(np.int64)
        perm = rng.permutation(rows)  # not privacy noise: row order
        out.update({a: v[perm] for a, v in cols.items()})
    return {a: out[a] for a in tree.attributes}


def round_counts(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values in 0..len(p)-1 with counts floor(n p) plus the remainder drawn without
    replacement with probability proportional to the fractional parts."""
    p = np.asarray(p, dtype=float)
    expected = p / p.sum() * n
    base = np.floor(expected).astype(np.int64)
    extra = n - int(base.sum())
    if extra > 0:
        frac = expected - base
        # not privacy noise: rows
        idx = rng.choice(p.size, size=extra, replace=False, p=frac / frac.sum())
        base[idx] += 1
    return np.repeat(np.arange(p.size), base)


def _sep(c1: Clique, c2: Clique) -> tuple[str, ...]:
    s = set(c2)
    return tuple(x for x in c1 if x in s)


__all__ = ["CalibratedTree", "Table", "round_counts", "sample_rounded"]
