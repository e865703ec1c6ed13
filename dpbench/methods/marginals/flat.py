"""Private-PGM estimation of a small Markov random field as one program per size class.

mbi traces belief propagation clique by clique, so every new model structure (AIM picks a
new clique each round, and every trial of a grid its own cliques) is a new XLA program to
compile, or to load from the persistent cache (~0.1 s each). For small models this costs
more than the fit itself. Here the junction tree is *data*: the maximal cliques' beliefs
live in one flat vector, and HUGIN's steps (expanding potentials onto the tree cliques,
summing a clique onto a separator in log space, adding a message into a clique, reading
the marginals off the beliefs) are gathers and segment reductions over index arrays built
in numpy. Messages go level by level (a ``lax.scan`` over the tree's depth). Every size is
padded to a power of two, so all the fits of a run, and of a grid, share a handful of
compiled programs.

The arithmetic is mbi's: HUGIN message passing (marginal_oracles.message_passing_hugin)
and mirror descent with the Armijo rule of _mbi.OneOracleMirrorDescent (same initial step
2 / (L * total), same acceptance test, one oracle call per step), so a fit reaches the same
optimum as mbi's program (tested), up to summation order.

Its cost per oracle call grows with depth x level width (padded), where mbi's fused program
is ~cells: :func:`estimate_mrf` uses it for models up to ``shared_max_cells`` cells (default
SHARED_MAX_CELLS), and larger ones keep mbi's program per structure. Measurements must
be identity queries (AIM's and MST's are).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np

from dpbench import program_store
from dpbench.data.workloads import Clique
from dpbench.methods.marginals import _mbi
from dpbench.methods.marginals.settings import EXACT_ORACLES, SHARED_MAX_CELLS

#: least padded sizes (levels, pairs per level, cells, measured cells, separator cells):
#: small models share one program, since their steps are cheap either way (on Adult this
#: brings AIM's 24 eps-0.1 fits to 3 programs)
LEAST_LEVELS, LEAST_WIDTH, LEAST_SIZE, LEAST_MEAS, LEAST_SEPS = 4, 512, 1024, 2048, 256


def _pow2(n: int, least: int) -> int:
    return max(least, 1 << max(0, int(n) - 1).bit_length())


def _cell_map(attrs: Sequence[str], sizes: dict[str, int], sub: Sequence[str]) -> np.ndarray:
    """For each cell of a table over ``attrs`` (C order), the index of its cell in the
    table over ``sub`` (a subset, in its own order)."""
    shape = [sizes[a] for a in attrs]
    if not sub:
        return np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    coords = np.indices(shape).reshape(len(attrs), -1)
    return np.ravel_multi_index(tuple(coords[attrs.index(a)] for a in sub),
                                [sizes[a] for a in sub]).astype(np.int64)


def _pad(parts: Sequence[np.ndarray], length: int, fill: int) -> np.ndarray:
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    out = np.full(length, fill, dtype=np.int64)
    out[: flat.size] = flat
    return out


@dataclasses.dataclass(frozen=True)
class Plan:
    """The index arrays of one model structure (numpy, padded) and how to unflatten.

    Every flat vector is padded to a power of two; its last slot is a dummy that padding
    entries point to, so padding never touches a real cell.
    """

    cliques: tuple[Clique, ...]          # the loss's cliques (mbi's potentials' cliques)
    shapes: tuple[tuple[int, ...], ...]  # their tables' shapes (attributes in clique order)
    offsets: tuple[int, ...]             # their first cell in theta / mu
    arrays: dict[str, np.ndarray]
    size: int
    levels: int
    width: tuple[int, int]               # padded pairs per level: child cells, parent cells
    meas_size: int                       # measured cells (and measurement pairs), padded
    sep_size: int                        # separator cells, padded

    @property
    def shape_class(self) -> tuple[int, ...]:
        """What the compiled program depends on: plans with equal classes share it."""
        return (self.size, self.levels, *self.width, self.meas_size, self.sep_size)


def identity(measurement: object) -> bool:
    """Whether a measurement is of a marginal itself (mbi's DatavectorQuery)."""
    return isinstance(measurement.query, _mbi.marginal_loss.DatavectorQuery)


def _cells(sizes: dict[str, int], c: Sequence[str]) -> int:
    return int(np.prod([sizes[a] for a in c], dtype=np.int64))


def _rooted(tree: nx.Graph, maximal: list[Clique], sizes: dict[str, int]
            ) -> tuple[dict[Clique, Clique | None], dict[Clique, int]]:
    """(parent, depth) of the tree cliques, rooted where the padded work per oracle call
    (levels x level width, both rounded up to powers of two) is least; the other
    components of a forest hang off the root through empty separators (from their
    centres), so there is one tree and one normaliser."""
    comps = sorted((sorted(comp, key=maximal.index) for comp in nx.connected_components(tree)),
                   key=lambda comp: maximal.index(comp[0]))
    best: tuple[int, dict, dict] | None = None
    for root in comps[0]:
        joined = nx.Graph(tree)
        for comp in comps[1:]:
            joined.add_edge(root, nx.center(tree.subgraph(comp))[0] if len(comp) > 1 else comp[0])
        parent = {root: None, **{v: u for u, v in nx.bfs_edges(joined, root)}}
        depth = {root: 0}
        for v in nx.bfs_tree(joined, root):
            if parent[v] is not None:
                depth[v] = depth[parent[v]] + 1
        levels = max(depth.values())
        width = [0] * levels
        for c, p in parent.items():
            if p is not None:
                width[depth[c] - 1] += _cells(sizes, c) + _cells(sizes, p)
        cost = _pow2(levels, LEAST_LEVELS) * _pow2(max(width, default=1), LEAST_WIDTH)
        if best is None or cost < best[0]:
            best = (cost, parent, depth)
    return best[1], best[2]


def plan(domain: object, measurements: Sequence[object], cliques: Sequence[Clique]) -> Plan:
    """Index arrays for HUGIN on mbi's junction tree over ``cliques`` and for the loss of
    ``measurements`` (identity queries), padded to powers of two."""
    sizes = dict(zip(domain.attributes, domain.shape, strict=True))
    cliques = [tuple(c) for c in cliques]
    jtree, _ = _mbi.junction_tree.make_junction_tree(domain, cliques)
    maximal = [tuple(c) for c in _mbi.junction_tree.maximal_cliques(jtree)]
    host = _mbi.mbi.clique_utils.clique_mapping(maximal, cliques, domain=domain)
    tree = nx.Graph(jtree)
    tree.add_nodes_from(maximal)
    parent, depth = _rooted(tree, maximal, sizes)
    levels = max(depth.values())

    def offsets(blocks: Sequence[Clique]) -> tuple[dict[Clique, int], int]:
        off, total = {}, 0
        for c in blocks:
            off[c], total = total, total + _cells(sizes, c)
        return off, total

    b_off, n = offsets(maximal)                  # tree cliques' beliefs, one vector
    m_off, m = offsets(cliques)                  # potentials / marginals of the loss's cliques
    seps = {c: tuple(a for a in c if a in p) for c, p in parent.items() if p is not None}
    s_off, s = {}, 0                             # one block per tree edge (child -> parent)
    for c, sep in seps.items():
        s_off[c], s = s, s + _cells(sizes, sep)

    groups: dict[str, list[list[np.ndarray]]] = {
        k: [[] for _ in range(levels)] for k in ("cc", "cs", "pc", "ps")}
    for c, sep in seps.items():
        p, lv = parent[c], depth[c] - 1
        groups["cc"][lv].append(b_off[c] + np.arange(_cells(sizes, c)))
        groups["cs"][lv].append(s_off[c] + _cell_map(list(c), sizes, sep))
        groups["pc"][lv].append(b_off[p] + np.arange(_cells(sizes, p)))
        groups["ps"][lv].append(s_off[c] + _cell_map(list(p), sizes, sep))

    exp_src, exp_dst = [], []                    # loss clique cell <-> its host's cell
    for c in cliques:
        h = tuple(host[c])
        exp_src.append(m_off[c] + _cell_map(list(h), sizes, c))
        exp_dst.append(b_off[h] + np.arange(_cells(sizes, h)))
    meas_src, meas_dst, ys, ws = [], [], [], []  # loss clique cell -> measurement cell
    k = 0
    for meas in measurements:
        mc = tuple(meas.clique)
        if not identity(meas):
            raise ValueError(f"measurement on {mc}: flat.py takes identity queries only "
                             f"(got {meas.query!r})")
        c = mc if mc in m_off else min(        # the clique mbi's CliqueVector.project reads
            (cl for cl in cliques if set(mc) <= set(cl)), key=lambda cl: _cells(sizes, cl))
        y = np.asarray(meas.noisy_measurement, dtype=float).ravel()
        if y.size != _cells(sizes, mc):
            raise ValueError(f"measurement on {mc}: {y.size} values for "
                             f"{_cells(sizes, mc)} cells")
        meas_src.append(m_off[c] + np.arange(_cells(sizes, c)))
        meas_dst.append(k + _cell_map(list(c), sizes, mc))
        ys.append(y)
        ws.append(np.full(y.size, 1.0 / max(float(meas.stddev), 1e-12)))
        k += y.size

    # padded sizes, each a power of two: cells and potentials (with their expansion pairs),
    # measurements (with their pairs), separators, and per level the child / parent pairs
    size = _pow2(max(n, m, sum(map(len, exp_src))) + 1, LEAST_SIZE)
    meas_size = _pow2(max(k, sum(map(len, meas_src))) + 1, LEAST_MEAS)
    sep_size = _pow2(s + 1, LEAST_SEPS)
    width = {key: _pow2(max([sum(map(len, g)) for g in groups[key]], default=1), LEAST_WIDTH)
             for key in ("cc", "pc")}
    depth_pad = _pow2(levels, LEAST_LEVELS)

    def stack(key: str, like: str, fill: int) -> np.ndarray:
        rows = [_pad(g, width[like], fill) for g in groups[key]]
        return np.stack(rows + [np.full(width[like], fill, dtype=np.int64)]
                        * (depth_pad - levels))

    def dense(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([*parts, np.zeros(meas_size - k)])

    root = next(c for c, p in parent.items() if p is None)
    mask = np.zeros(size, dtype=bool)
    mask[b_off[root]: b_off[root] + _cells(sizes, root)] = True
    arrays = {
        "exp_src": _pad(exp_src, size, size - 1), "exp_dst": _pad(exp_dst, size, size - 1),
        "meas_src": _pad(meas_src, meas_size, size - 1),
        "meas_dst": _pad(meas_dst, meas_size, meas_size - 1),
        "child_cell": stack("cc", "cc", size - 1), "child_sep": stack("cs", "cc", sep_size - 1),
        "par_cell": stack("pc", "pc", size - 1), "par_sep": stack("ps", "pc", sep_size - 1),
        "seps": np.zeros(sep_size), "root": mask, "real": np.arange(size) < n,
        "y": dense(ys), "w": dense(ws),
    }
    shapes = tuple(tuple(sizes[a] for a in c) for c in cliques)
    return Plan(tuple(cliques), shapes, tuple(m_off[c] for c in cliques), arrays, size,
                depth_pad, (width["cc"], width["pc"]), meas_size, sep_size)


def _lse(x: jax.Array, seg: jax.Array, num: int) -> jax.Array:
    """log-sum-exp of ``x`` within segments (-inf for an empty segment)."""
    mx = jax.ops.segment_max(x, seg, num)
    mx = jnp.where(jnp.isfinite(mx), mx, 0.0)
    return jnp.log(jax.ops.segment_sum(jnp.exp(x - mx[seg]), seg, num)) + mx


def oracle(theta: jax.Array, total: jax.Array, a: dict[str, jax.Array]) -> jax.Array:
    """HUGIN marginals (flat, over the loss's cliques) of the potentials ``theta``."""
    n = m = theta.shape[0]
    s = a["seps"].shape[0]
    B = jax.ops.segment_sum(theta[a["exp_src"]], a["exp_dst"], n)
    levels = (a["child_cell"], a["child_sep"], a["par_cell"], a["par_sep"])

    def up(carry: tuple, lv: tuple) -> tuple:          # deepest level first
        B, U = carry
        cc, cs, pc, ps = lv
        msg = _lse(B[cc], cs, s)
        return (B.at[pc].add(msg[ps]), jnp.where(jnp.isneginf(msg), U, msg)), None

    (B, U), _ = jax.lax.scan(up, (B, a["seps"]), levels, reverse=True)

    def down(B: jax.Array, lv: tuple) -> tuple:         # root's children first
        cc, cs, pc, ps = lv
        return B.at[cc].add((_lse(B[pc], ps, s) - U)[cs]), None

    B, _ = jax.lax.scan(down, B, levels)
    rb = jnp.where(a["root"], B, -jnp.inf)
    mx = jnp.max(rb)
    log_z = jnp.log(jnp.sum(jnp.exp(rb - mx))) + mx
    p = jnp.where(a["real"], jnp.exp(B - log_z) * total, 0.0)
    return jax.ops.segment_sum(p[a["exp_dst"]], a["exp_src"], m)


def loss(mu: jax.Array, a: dict[str, jax.Array]) -> jax.Array:
    """mbi's l2 loss: 0.5 sum over measurements of ||(Q mu - y) / sigma||^2."""
    q = jax.ops.segment_sum(mu[a["meas_src"]], a["meas_dst"], a["y"].shape[0])
    d = (q - a["y"]) * a["w"]
    return 0.5 * jnp.vdot(d, d)


def _fit(theta: jax.Array, total: jax.Array, alpha: jax.Array, a: dict[str, jax.Array],
         steps: int) -> tuple[jax.Array, jax.Array]:
    """``steps`` mirror-descent steps with OneOracleMirrorDescent's Armijo rule, the first
    of size 0 (it computes the initial marginals); returns (potentials, marginals)."""

    def step(state: tuple, _: None) -> tuple:
        mu, theta, alpha, prev = state
        first = jnp.isposinf(prev)
        value, grad = jax.value_and_grad(loss)(mu, a)
        theta2 = theta - jnp.where(first, 0.0, alpha) * grad
        mu2 = oracle(theta2, total, a)
        value2 = loss(mu2, a)
        accept = first | (value - value2 >= 0.5 * alpha * jnp.vdot(grad, mu - mu2))
        alpha = jnp.where(first, alpha, jnp.where(accept, 1.01 * alpha, 0.5 * alpha))
        return (jnp.where(accept, mu2, mu), jnp.where(accept, theta2, theta), alpha,
                jnp.where(accept, value2, value)), None

    init = (jnp.zeros_like(theta), theta, alpha, jnp.asarray(jnp.inf))
    mu, theta, _, _ = jax.lax.scan(step, init, None, length=steps)[0]
    return theta, mu


#: this process's fits by this module (tests and benchmarks read it)
stats = {"fits": 0}


def _warm(plan: Plan, domain: object, warm_start: object | None) -> np.ndarray:
    """mbi's warm start (_mbi.expand_potentials) onto the plan's cliques, flat."""
    theta = np.zeros(plan.size)
    pot = _mbi.expand_potentials(domain, plan.cliques, warm_start)
    for c, off in zip(plan.cliques, plan.offsets, strict=True):
        v = np.asarray(pot[c].values).ravel()
        theta[off: off + v.size] = v
    return theta


def estimate(domain: object, measurements: list, iters: int,
             warm_start: object | None = None) -> object:
    """An mbi MarkovRandomField fitted as OneOracleMirrorDescent would (``iters`` steps)."""
    known_total = _mbi.minimum_variance_unbiased_total(measurements)
    loss_fn = _mbi.marginal_loss.from_linear_measurements(measurements, domain)
    pl = plan(domain, measurements, loss_fn.cliques)
    theta0 = _warm(pl, domain, warm_start)
    alpha = 2.0 / (loss_fn.lipschitz * known_total)
    arrays = {k: jnp.asarray(v) for k, v in pl.arrays.items()}
    steps = int(iters) + 1
    theta, mu = program_store.call(
        functools.partial(_fit, steps=steps),
        (jnp.asarray(theta0), jnp.asarray(float(known_total)), jnp.asarray(alpha), arrays),
        static=repr(steps))
    theta, mu = np.asarray(theta), np.asarray(mu)
    stats["fits"] += 1

    def vector(flat_values: np.ndarray) -> object:
        tables = {c: _mbi.mbi.Factor(domain.project(c), flat_values[o: o + int(np.prod(s))]
                                     .reshape(s))
                  for c, s, o in zip(pl.cliques, pl.shapes, pl.offsets, strict=True)}
        return _mbi.mbi.CliqueVector(domain, list(pl.cliques), tables)

    return _mbi.mbi.MarkovRandomField(potentials=vector(theta), marginals=vector(mu),
                                      total=known_total)


def estimate_mrf(domain: object, measurements: list, *, iters: int,
                 warm_start: object | None = None, oracle: str = "hugin",
                 shared_max_cells: int = SHARED_MAX_CELLS) -> object:
    """_mbi.estimate_mrf, except that with an exact oracle (EXACT_ORACLES: HUGIN's
    marginals up to rounding) a model of at most ``shared_max_cells`` junction-tree cells
    whose measurements are all identity queries is fitted by :func:`estimate`: the same
    iterates (up to summation order) from a program shared by every model of its size
    class, instead of one compiled program per structure. ``shared_max_cells=0`` always
    takes mbi's program."""
    if oracle in EXACT_ORACLES and shared_max_cells > 0 and all(map(identity, measurements)):
        cliques = list(dict.fromkeys(tuple(m.clique) for m in measurements))
        if _mbi.model_size_mb(domain, cliques) * 2**20 / 8 <= shared_max_cells:
            _mbi.release_compiled_programs_if_needed()
            return estimate(domain, measurements, _mbi._iters(iters), warm_start)
    return _mbi.estimate_mrf(domain, measurements, iters=iters, warm_start=warm_start,
                             oracle=oracle)
