"""The one place that imports ``mbi`` (private-pgm 2.x): JAX setup and small adapters.

JAX must run in float64 before mbi is imported (mbi warns that float32 stalls
estimation on large data). Compiled programs go to the persistent cache that
dpbench/compile_cache.py configures (it was off here until 2026-11-23: AIM compiles
one program per model structure, ~37% of a paper-settings fit, and a later process
running the same fit now loads them instead), and the estimation programs themselves
(traced and lowered) to dpbench/program_store.py, so a later process skips tracing too.
"""

from __future__ import annotations

import jax

from dpbench import compile_cache, program_store  # noqa: E402

jax.config.update("jax_enable_x64", True)
compile_cache.configure()

import collections  # noqa: E402
import dataclasses  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

with warnings.catch_warnings():
    # mbi warns when the cache is on ("many small compiled programs ... counterproductive");
    # measured here it is not: a program per AIM model structure, ~50 KB each, and a later
    # process's fit loads them instead of compiling (docs/speed.md).
    warnings.filterwarnings("ignore", message="JAX persistent compilation cache")
    import mbi  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from mbi import junction_tree, marginal_loss, marginal_oracles  # noqa: E402
from mbi.estimation import (  # noqa: E402
    Estimator,
    MirrorDescent,
    MirrorDescentState,
    _extract_potentials,
    minimum_variance_unbiased_total,
)
from mbi.extensions import MixtureOfProducts, MixtureOfProductsEstimator  # noqa: E402

from dpbench.data.workloads import Clique  # noqa: E402
from dpbench.methods.marginals.axes import aligned  # noqa: E402

__all__ = [
    "mbi", "Domain", "LinearMeasurement", "estimate_mrf", "estimate_mixture", "model_size_mb",
    "to_domain", "MixtureOfProducts",
]

Domain = mbi.Domain
LinearMeasurement = mbi.LinearMeasurement


def to_domain(attributes: Sequence[str], sizes: Mapping[str, int]) -> mbi.Domain:
    """An mbi Domain over ``attributes`` in the given order."""
    return mbi.Domain(tuple(attributes), tuple(int(sizes[a]) for a in attributes))


def model_size_mb(domain: mbi.Domain, cliques: Sequence[Clique]) -> float:
    """Size in MB of the junction tree over ``cliques`` (mbi's float64 cell count * 8 / 2^20)."""
    return float(junction_tree.hypothetical_model_size(domain, list(cliques)))


def _iters(iters: int) -> int:
    if iters < 1:
        raise ValueError(f"iters={iters} must be >= 1")
    return int(iters)


#: XLA options that cut CPU compile time 2-4x at the price of ~2x slower execution (both
#: measured on Adult models, papers/ddssp/README.md). They are used when the run is short:
#: model cells x iterations <= FAST_COMPILE_MAX_WORK (there compiling each new model
#: structure costs more than the iterations; above it the optimised program wins).
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
FAST_COMPILE_MAX_WORK = 5e7

#: XLA's level-1 options (no fusion emitters) for the default oracle's longest fits: the
#: tables oracle's program compiles 3.1-3.6x slower than with FAST_COMPILE and runs 1.5x
#: (2.9 MB) to 3.8x (8.0 MB) faster on the excess-risk paper's Dutch models (docs/speed.md,
#: 2026-11-28). Used when the fit's junction-tree cells, each weighted by its clique's
#: number of attributes (level-0 code costs per cell grow with a table's rank), times the
#: iterations exceed LONG_FIT_MIN_WORK. One 1,000-step fit of captured Dutch models, CPU-s
#: with FAST_COMPILE / LONG_FIT: 2.9 MB (3.0e9) 12.5 / 15.7, 3.3 MB (3.8e9) 31.3 / 22.8,
#: 8.0 MB (9.4e9) 91.7 / 38.6: the crossover is near 3e9 but falls steeply past it, so the
#: threshold stays at 2e9 (at 5e9 Dutch's eps-2 reference fit took 1,270 CPU-s, at 2e9
#: 1,154 in the next sitting). The DD-SSP paper's Adult eps-1 fits stay below it (at most
#: 1.7e9), where level 1 made the linreg_adult grid slower, and so do the default
#: profiles' 2 MB models.
LONG_FIT = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False}
LONG_FIT_MIN_WORK = 2e9


def _fused_impl(estimator: Estimator, domain: mbi.Domain, loss_fn: object, known_total: object,
                warm_start: object, iters: int) -> object:
    """init -> ``iters`` steps -> finalize of an mbi Estimator, as ONE compiled program.

    ``Estimator.estimate`` runs its initialisation eagerly (dozens of op-by-op
    XLA compilations per new model structure, which dominate AIM's run time on
    CPU) and steps in jitted blocks of 50. This traces the same three hooks
    (``_init``, ``_step``, ``_finalize``: the Estimator subclass interface) into a
    single program, compiled once per (structure, iters); the arithmetic is the
    same, step for step. :func:`_estimate` runs it through program_store.call, which
    exports it once per structure for every later process.
    """
    state = estimator._init(domain, loss_fn, known_total, warm_start=warm_start)
    steps = iters + getattr(estimator, "init_steps", 0)
    return estimator._finalize(_scan(estimator, state, loss_fn, known_total, steps),
                               known_total)


def _scan(estimator: Estimator, state: object, loss_fn: object, known_total: object,
          iters: int) -> object:
    def step(s: object, _: object) -> tuple[object, None]:
        return estimator._step(s, loss_fn, known_total), None

    return jax.lax.scan(step, state, None, length=iters)[0]


_scan_fast = jax.jit(_scan, static_argnames=("estimator", "iters"), compiler_options=FAST_COMPILE)


def _map_count_limit() -> int:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 0


MAP_COUNT_LIMIT = _map_count_limit()
MAP_COUNT_SHARE = 0.5


def release_compiled_programs_if_needed() -> bool:
    """Drop JAX's compiled programs when the process nears the kernel's memory-map limit.

    Every compiled XLA CPU program keeps a few hundred memory mappings; AIM compiles one
    per new model structure, so a long run (or many trials in one worker) reaches Linux's
    vm.max_map_count (65,530 by default) and LLVM then fails with "Cannot allocate memory"
    and the process dies. Above MAP_COUNT_SHARE of the limit all JAX caches are cleared
    (programs still needed are recompiled). Returns whether it cleared.
    """
    if MAP_COUNT_LIMIT <= 0:
        return False
    try:
        with open("/proc/self/maps", "rb") as fh:
            count = fh.read().count(b"\n")
    except OSError:
        return False
    if count <= MAP_COUNT_SHARE * MAP_COUNT_LIMIT:
        return False
    jax.clear_caches()
    program_store.forget()
    gc.collect()
    return True


#: Smallest exp-normalised sum that einsum_guarded trusts. A term lost to underflow is
#: < 2.3e-308 (float64's smallest normal), so against a sum >= 1e-200 even a million lost
#: terms change it by < 1e-96 relative: semistable's answer is exact to rounding there.
GUARD_MIN_SUM = 1e-200


def _semistable(log_factors: list[mbi.Factor], dom: mbi.Domain
                ) -> tuple[mbi.Factor, jax.Array]:
    """mbi's ``einsum_semistable`` (exp of each factor minus its per-output maximum, one
    einsum, log) onto ``dom``, and whether it is exact: no output cell's normalised sum
    falls below GUARD_MIN_SUM."""
    maxes = [f.max(f.domain.marginalize(dom.attributes).attributes) for f in log_factors]
    scaled = marginal_oracles.sum_product([(f - m).exp() for f, m in
                                           zip(log_factors, maxes, strict=True)], dom)
    exact = jax.numpy.all(scaled.values >= GUARD_MIN_SUM)
    return mbi.Factor(dom, (scaled.log() + sum(maxes)).transpose(dom.attributes).values), exact


def einsum_guarded(log_factors: list[mbi.Factor], dom: mbi.Domain) -> mbi.Factor:
    """Log-space sum-product of ``log_factors`` onto ``dom``: mbi's ``einsum_semistable``
    for a message in which no output cell's normalised sum falls below GUARD_MIN_SUM, else
    mbi's ``einsum_materialized`` (the factors added into one table, then logsumexp:
    HUGIN's arithmetic) for that message. One ``lax.cond`` per message, so only the branch
    taken runs: semistable's speed where it is exact, HUGIN's stability where it is not."""
    table, exact = _semistable(log_factors, dom)
    values = jax.lax.cond(exact, lambda: table.values,
                          lambda: marginal_oracles.einsum_materialized(log_factors, dom).values)
    return mbi.Factor(dom, values)


#: Largest tree clique (cells) whose belief message_passing_tables builds as a table; a larger
#: one's measured cliques are read off its marginals on smaller attribute sets, of at most
#: COVER_MAX_CELLS cells each (a measured clique larger than that has its own). Chosen on
#: two captured Dutch paper-settings models (docs/speed.md, 2026-11-27): 2^16 / 2^16 fit
#: the 8.0 MB one in 30.8 s against 37.1 s building its 746k-cell tree clique, and 14-262k
#: cell sets fit the 31.6 MB one within 33-35 s.
TABLE_MAX_CELLS = 2**16
COVER_MAX_CELLS = 2**16


def message_passing_tables(potentials: mbi.CliqueVector, total: float = 1.0, *,
                           constraints: tuple = (), checked: bool = False
                           ) -> mbi.CliqueVector:
    """guarded's messages, and the measured cliques' marginals read off a few belief tables
    per tree clique instead of one contraction each.

    mbi's message_passing_implicit (guarded's) contracts every input of a tree clique onto
    each measured clique it holds: one einsum of all of them (and one guard, with HUGIN's
    materialised fallback compiled beside it) per measured clique. On the excess-risk
    paper's Dutch models (24-27 measured cliques, tree cliques of up to 10 attributes and
    4.0M cells) those are most of a call and of its compile time. Here the messages are
    guarded's (the same schedule and contractions). A tree clique of at most TABLE_MAX_CELLS
    cells has its log-belief (its potentials plus its incoming messages) added into one
    table; a larger one is covered by attribute sets of at most COVER_MAX_CELLS cells
    (belief_tables), each the guarded contraction of its inputs onto the set. Each table is
    exponentiated once against its maximum, normalised to the total and summed onto the
    measured cliques it holds (project_many): HUGIN's marginals to rounding (mbi's hugin
    also sums its normalised beliefs). A cell that underflows sits more than ~745 below the
    table's largest in log space, so it holds less than 1e-300 of the total, as in HUGIN's
    exp of the normalised log-belief. One 1,000-step fit of either captured Dutch model:
    2.0-2.2x less CPU than guarded's, 42-48% of it tracing and compiling. The message
    schedule is written out here rather than taken from mbi's message_passing_implicit
    (return_messages=True), which would also trace the per-clique contractions this
    replaces.

    ``checked``: every contraction is semistable's, without guarded's per-message fallback,
    and if any of them is not exact (the test guarded branches on) every marginal is NaN.
    Where all are exact these are guarded's marginals (the branch guarded takes, without
    its ``lax.cond``s, which also bar XLA from fusing across a message); the caller redoes
    a fit that met a NaN with the guarded contractions (_estimate)."""
    if constraints:
        raise ValueError("message_passing_tables does not take constraints")
    checks: list[jax.Array] = []

    def contract(log_factors: list[mbi.Factor], dom: mbi.Domain) -> mbi.Factor:
        if not checked:
            return einsum_guarded(log_factors, dom)
        table, exact = _semistable(log_factors, dom)
        checks.append(exact)
        return table

    domain, cliques = potentials.active_domain, potentials.cliques
    jtree = junction_tree.make_junction_tree(domain, cliques)[0]
    order = junction_tree.message_passing_order(jtree)
    tree_cliques = junction_tree.maximal_cliques(jtree)
    mapping = mbi.clique_utils.clique_mapping(tree_cliques, cliques, domain=domain)
    held = collections.defaultdict(list)          # tree clique -> the measured cliques in it
    for cl in cliques:
        held[mapping[cl]].append(cl)
    messages = {}
    for i, j in order:                            # mbi's schedule: leaves in, then out
        shared = domain.project(tuple(set(i) & set(j)))
        inputs = [potentials[cl] for cl in held[i]] + [
            messages[(k, m)] for k, m in messages if m == i and k != j]
        inputs += [mbi.Factor.zeros(domain.project([a])) for a in shared.attributes
                   if not any(a in f.domain.attributes for f in inputs)]
        messages[(i, j)] = contract(inputs, shared)
    marginals = {}
    for tc in tree_cliques:
        if not held[tc]:
            continue
        inputs = [potentials[cl] for cl in held[tc]] + [
            m for (_, j), m in messages.items() if j == tc]
        for attrs, members in belief_tables(domain, tc, held[tc]):
            if attrs == tc:                       # the tree clique's own belief, added up
                log_belief = mbi.Factor.zeros(domain.project(tc))
                for f in inputs:
                    log_belief = log_belief + f
                log_belief = log_belief.transpose(tc)
            else:                                 # its marginal on attrs, as guarded's
                log_belief = contract(inputs, domain.project(attrs))
            belief = (log_belief - jax.numpy.max(log_belief.values)).exp()
            scale = total / jax.numpy.sum(belief.values)
            for cl, table in project_many(belief, members).items():
                marginals[cl] = table * scale
    if checks:                                    # NaN unless every contraction was exact
        poison = jax.numpy.where(jax.numpy.all(jax.numpy.stack(checks)), 1.0, jax.numpy.nan)
        marginals = {cl: table * poison for cl, table in marginals.items()}
    return mbi.CliqueVector(potentials.domain, cliques, marginals)


def belief_tables(domain: mbi.Domain, tree_clique: Clique, members: Sequence[Clique]
                  ) -> list[tuple[Clique, list[Clique]]]:
    """The tables message_passing_tables reads a tree clique's measured cliques off: the
    tree clique itself when it has at most TABLE_MAX_CELLS cells, else a cover of its
    measured cliques by attribute sets of at most COVER_MAX_CELLS cells (largest clique
    first, each into the set it grows least), each computed by one guarded contraction
    instead of one per measured clique."""
    if domain.size(tree_clique) <= TABLE_MAX_CELLS:
        return [(tuple(tree_clique), list(members))]
    groups: list[tuple[set, list]] = []
    for cl in sorted(members, key=lambda c: -domain.size(c)):
        sizes = [(domain.size(tuple(g | set(cl))), k) for k, (g, _) in enumerate(groups)]
        fits = [(n, k) for n, k in sizes if n <= COVER_MAX_CELLS]
        if fits:
            k = min(fits)[1]
            groups[k][0].update(cl)
            groups[k][1].append(cl)
        else:
            groups.append((set(cl), [cl]))
    return [(tuple(a for a in tree_clique if a in g), m) for g, m in groups]


def project_many(table: mbi.Factor, targets: Sequence[Clique]) -> dict[Clique, mbi.Factor]:
    """``table.project(t)`` for every target (a subset of its attributes), with fewer passes
    over the table: the attribute that the most targets lack is summed out once and those
    targets are read off the smaller table, recursively; the others go on from the table.
    The final Dutch model's tree clique of 10 attributes (4.0M cells) holding 19 measured
    cliques costs 2.2 table reads instead of 19 (the same sums, in another order)."""
    if not targets:
        return {}
    needed = set().union(*map(set, targets))
    extra = [a for a in table.domain.attributes if a not in needed]
    if extra:
        table = table.sum(extra)
    if len(targets) == 1:
        return {targets[0]: table.project(targets[0])}
    lacking = {a: sum(a not in t for t in targets) for a in table.domain.attributes}
    drop = max(lacking, key=lambda a: (lacking[a], table.domain[a]))
    if lacking[drop] == 0:                      # every target is the whole table
        return {t: table.project(t) for t in targets}
    out = project_many(table.sum([drop]), [t for t in targets if drop not in t])
    out.update(project_many(table, [t for t in targets if drop in t]))
    return out


#: Marginal oracles (belief propagation on the junction tree) by name. ``hugin`` is what
#: mbi picks on CPU for potentials without -inf (message_passing_hugin: log-space
#: messages, logsumexp). ``semistable`` is mbi's message_passing_fast: messages contracted
#: as einsums of exp(potential - max), ~3x faster per call on AIM's Adult models, but
#: exp underflows to 0 where factors disagree by > ~745 in log space (mbi's docs: "can
#: produce NaN when factor magnitudes span a very wide range"); estimate_mrf then refits
#: with hugin, but an underflow can also leave every marginal finite and wrong (a cell
#: that holds the mass gets none: tests/methods/test_oracles.py), which no check on the
#: fit sees. ``guarded`` is message_passing_implicit with einsum_guarded: semistable's
#: einsums for every message that does not underflow, HUGIN's logsumexp for one that does
#: (decided per message at run time), so HUGIN's marginals to rounding on every input.
ORACLES = {"hugin": marginal_oracles.message_passing_hugin,
           "semistable": marginal_oracles.message_passing_fast,
           "guarded": functools.partial(marginal_oracles.message_passing_implicit,
                                        contraction=einsum_guarded),
           "tables": message_passing_tables}



@dataclasses.dataclass(frozen=True)
class OneOracleMirrorDescent(MirrorDescent):
    """mbi's MirrorDescent with Armijo steps, one marginal-oracle call per step instead of two.

    mbi's step computes the marginals of the current potentials, then those of the trial
    point theta2 for the sufficient-decrease test; the next step starts from one of the two
    and computes its marginals again. Here the state's ``mu`` holds the marginals of the
    state's *current* potentials (mu2 when the step is accepted, mu otherwise), so each step
    calls the oracle once: the same iterates, step sizes and losses as mbi's step (tested),
    about half the work, since belief propagation is nearly all of a step.

    ``oracle`` names the marginal oracle (ORACLES): a name rather than a function, so the
    estimator's repr, part of the program store's key, is the same in every process.
    ``checked`` (the tables oracle only): its contractions are semistable's, every marginal
    NaN where one is not exact (message_passing_tables), and a step that meets a non-finite
    loss is taken, so the NaN stays to the end and the caller sees it (_estimate then
    redoes the fit with the guarded contractions).
    """

    oracle: str = "hugin"
    checked: bool = False

    def __post_init__(self) -> None:
        if self.stepsize is not None:
            raise ValueError("OneOracleMirrorDescent implements the Armijo line search only "
                             f"(stepsize=None); got stepsize={self.stepsize}")
        if self.oracle not in ORACLES:
            raise ValueError(f"oracle={self.oracle!r}; valid: {', '.join(ORACLES)}")
        if self.checked and (self.oracle != "tables" or self.marginal_oracle is not None):
            raise ValueError(f"checked=True applies to oracle='tables' (got {self.oracle!r})")

    def _oracle(self, cliques: object, domain: object, constraints: tuple = ()) -> object:
        """mbi's ``marginal_oracle`` when one is given (mbi's interface), else the named one."""
        oracle = self.marginal_oracle or ORACLES[self.oracle]
        if self.checked:
            oracle = functools.partial(message_passing_tables, checked=True)
        return functools.partial(oracle, constraints=constraints)

    #: steps of a fit that are not iterations: the first step computes the initial marginals
    init_steps = 1

    def _init(self, domain: mbi.Domain, loss_fn: object, known_total: object, *,
              warm_start: object | None = None, constraints: tuple = ()) -> MirrorDescentState:
        """mbi's initial state (potentials, step size) without its oracle call: the marginals
        are a placeholder (zeros) and the loss +inf, and the first ``_step`` computes them
        (a step of size 0, always accepted, step size unchanged). So a compiled fit holds one
        copy of belief propagation, the step's, instead of two (Adult, eps 1, paper settings:
        backend compile 46.8 -> 43.0 s per AIM run, same fit); a fit of n iterations runs
        ``init_steps`` + n steps (_fused_impl)."""
        if constraints:
            raise ValueError("OneOracleMirrorDescent does not take constraints")
        cliques = tuple(loss_fn.cliques)
        same = isinstance(warm_start, mbi.CliqueVector) and tuple(warm_start.cliques) == cliques
        potentials = warm_start if same else _extract_potentials(warm_start, domain, cliques)
        alpha = 2.0 / (loss_fn.lipschitz * known_total)            # as mbi's _init
        return MirrorDescentState(mbi.CliqueVector.zeros(domain, potentials.cliques),
                                  potentials, alpha, jax.numpy.asarray(jax.numpy.inf))

    def _step(self, state: MirrorDescentState, loss_fn: object, known_total: object,
              constraints: tuple = ()) -> MirrorDescentState:
        oracle = self._oracle(loss_fn.cliques, state.potentials.domain, constraints=constraints)
        first = jax.numpy.isposinf(state.loss)         # the state _init made: mu not computed
        mu = state.mu                                  # = oracle(state.potentials): carried
        loss, dL = jax.value_and_grad(loss_fn)(mu)
        theta2 = state.potentials - jax.numpy.where(first, 0.0, state.alpha) * dL
        mu2 = oracle(theta2, known_total)
        loss2 = loss_fn(mu2)
        accept = first | (loss - loss2 >= 0.5 * state.alpha * dL.dot(mu - mu2))
        if self.checked:                               # an inexact contraction's NaN stays
            accept = accept | ~jax.numpy.isfinite(loss2)
        alpha = jax.lax.select(first, state.alpha,
                               jax.lax.select(accept, 1.01 * state.alpha, 0.5 * state.alpha))
        potentials, mu_next = jax.lax.cond(accept, lambda: (theta2, mu2),
                                           lambda: (state.potentials, mu))
        return MirrorDescentState(mu_next, potentials, alpha,
                                  jax.lax.select(accept, loss2, loss))

    def _finalize(self, state: MirrorDescentState, known_total: object,
                  constraints: tuple = ()) -> mbi.MarkovRandomField:
        """The model, with the carried marginals: mbi's finalize computes them again (one more
        copy of belief propagation in every compiled fit; Adult, eps 1, paper settings:
        backend compile 53.7 -> 46.8 s per AIM run without it, same fit)."""
        return mbi.MarkovRandomField(potentials=state.potentials, marginals=state.mu,
                                     total=known_total, constraints=constraints)


def expand_potentials(domain: mbi.Domain, cliques: Sequence[Clique],
                      warm_start: object | None) -> mbi.CliqueVector:
    """mbi's warm start (``_extract_potentials``: zeros, or the old potentials expanded onto
    ``cliques``, each old clique added, in mapping order, into the one mbi's
    ``reverse_clique_mapping`` picks), computed in numpy: the same additions in the same
    order, so the same values. Done before a fit rather than inside its program, a fit's
    inputs depend on its own model structure only: re-fitting a structure (AIM re-measures
    a clique or anneals) reuses the program its first fit compiled, whatever the warm
    start's structure was."""
    tables = {}
    old = (None if warm_start is None else
           warm_start if isinstance(warm_start, mbi.CliqueVector) else warm_start.potentials)
    mapping = ({} if old is None else
               mbi.clique_utils.reverse_clique_mapping(list(cliques), old.cliques,
                                                       domain=domain))
    for c in cliques:
        dom = domain.project(c)
        acc = np.zeros(dom.shape)
        for oc in mapping.get(c, ()):
            f = old[oc]
            acc = acc + aligned(f.domain.attributes, np.asarray(f.values), dom.attributes)
        tables[c] = mbi.Factor(dom, acc)     # numpy: jnp.asarray would compile per shape
    return mbi.CliqueVector(domain, list(cliques), tables)


def _estimate(estimator: Estimator, domain: mbi.Domain, measurements: list[LinearMeasurement],
              iters: int, warm_start: object | None) -> object:
    release_compiled_programs_if_needed()
    known_total = minimum_variance_unbiased_total(measurements)
    loss_fn = marginal_loss.from_linear_measurements(measurements, domain)
    warm_start = expand_potentials(domain, loss_fn.cliques, warm_start)
    cells = model_size_mb(domain, loss_fn.cliques) * 2**20 / 8
    iters = _iters(iters)
    fast = cells * iters <= FAST_COMPILE_MAX_WORK
    options = FAST_COMPILE if fast else None
    long = False
    if getattr(estimator, "oracle", None) == "guarded":
        # guarded's einsum messages run ~5x faster than hugin's on AIM's large models but
        # compile slower (docs/speed.md): a short fit, where compiling dominates, takes
        # hugin; a longer one the tables oracle (guarded's messages, the marginals read off
        # a few tables per tree clique; the same marginals to rounding) with the
        # fast-compile options, the longest with LONG_FIT. tables against guarded's own
        # program, one fit of captured Dutch models: 1.8x less CPU at 0.46 MB (fast-compile),
        # 2.0-2.2x at 8.0 and 31.6 MB (LONG_FIT); 1.81x over Dutch's eps-2 run
        long = not fast and ranked_cells(domain, loss_fn.cliques) * iters > LONG_FIT_MIN_WORK
        estimator = dataclasses.replace(estimator, oracle="hugin" if fast else "tables")
        options = LONG_FIT if long else FAST_COMPILE
    args = (loss_fn, known_total, warm_start)
    if long and LONG_CHECKED:
        # The longest fits first run checked contractions; a fit that met an inexact one
        # is redone with the guarded contractions, counted in FALLBACKS.
        first = _fused_call(dataclasses.replace(estimator, checked=True), domain, iters,
                            args, options)
        if _finite(first):
            return first
        FALLBACKS["guarded"] += 1
    return _fused_call(estimator, domain, iters, args, options)


#: Whether the longest fits (LONG_FIT's) run checked contractions first (_estimate):
#: without guarded's per-message ``lax.cond`` XLA fuses across messages, and the program
#: compiles and runs faster. Eight captured Dutch paper-settings fits (2.95-31.64 MB, one
#: XLA thread, the faster of two runs each, 2026-11-28): 157.3 against 177.1 CPU-s (0.89x),
#: each of the eight faster (docs/speed.md); none met an inexact contraction, and the
#: marginals were the guarded program's to 8e-5 relative (bit for bit in three; the
#: programs round differently, which can move an Armijo decision, as between the oracles).
LONG_CHECKED = True


def _fused_call(estimator: Estimator, domain: mbi.Domain, iters: int, args: tuple,
                options: Mapping[str, object] | None) -> object:
    """One fit as one compiled program through the program store (_fused_impl)."""
    return program_store.call(
        functools.partial(_fused_impl, estimator, domain, iters=iters), args,
        static=repr((estimator, domain, iters)), packages=("mbi", "optax"),
        compiler_options=options)


def ranked_cells(domain: mbi.Domain, cliques: Sequence[Clique]) -> int:
    """The cells of the junction tree over ``cliques``, each maximal clique's weighted by its
    number of attributes: LONG_FIT's measure of a fit's work per step."""
    tree, _ = junction_tree.make_junction_tree(domain, list(cliques))
    return sum(domain.size(c) * len(c) for c in junction_tree.maximal_cliques(tree))


def estimate_mrf(domain: mbi.Domain, measurements: list[LinearMeasurement], *, iters: int,
                 warm_start: object | None = None, oracle: str = "hugin") -> object:
    """Private-PGM estimation (mirror descent with Armijo steps, one oracle call per step:
    OneOracleMirrorDescent) of a Markov random field, ``iters`` steps; the total is estimated
    from the identity measurements (unbounded DP). A fit with a non-finite potential or
    marginal from any oracle but hugin is redone with hugin (counted in FALLBACKS, as is a
    guarded fit whose checked contractions are redone, _estimate)."""
    fit = _estimate(OneOracleMirrorDescent(oracle=oracle), domain, measurements, iters,
                    warm_start)
    if oracle != "hugin" and not _finite(fit):
        FALLBACKS[oracle] += 1
        fit = _estimate(OneOracleMirrorDescent(), domain, measurements, iters, warm_start)
    return fit


#: Fits redone because the named oracle's first program gave a non-finite fit (this
#: process): with hugin, or for guarded's checked contractions with the guarded ones.
FALLBACKS: collections.Counter[str] = collections.Counter()


def _finite(fit: object) -> bool:
    """Whether every potential and marginal table of an mbi MarkovRandomField is finite."""
    leaves = jax.tree_util.tree_leaves((fit.potentials, fit.marginals))
    return all(bool(np.isfinite(np.asarray(t)).all()) for t in leaves)


def estimate_mixture(domain: mbi.Domain, measurements: list[LinearMeasurement], *, iters: int,
                     components: int, learning_rate: float, seed: int,
                     warm_start: object | None = None) -> MixtureOfProducts:
    """Mixture-of-products estimation (RAP-softmax style, mbi.extensions) with Adam."""
    est = MixtureOfProductsEstimator(optimizer=_adam(float(learning_rate)),
                                     num_components=int(components), seed=int(seed))
    # The mixture keeps its total as static metadata, so it is initialised outside jit
    # (with a concrete total) and only the steps are compiled.
    known_total = float(minimum_variance_unbiased_total(measurements))
    loss_fn = marginal_loss.from_linear_measurements(measurements, domain)
    release_compiled_programs_if_needed()
    state = est._init(domain, loss_fn, known_total, warm_start=warm_start)
    state = _scan_fast(est, state, loss_fn, known_total, _iters(iters))
    return est._finalize(state, known_total)


@functools.cache
def _adam(learning_rate: float) -> optax.GradientTransformation:
    """One optax object per step size, so the (static) estimator hashes equal across calls."""
    return optax.adam(learning_rate)


def measurement(y: np.ndarray, clique: Clique, sigma: float) -> LinearMeasurement:
    """An identity-query Gaussian measurement of a marginal (flattened in clique order)."""
    return LinearMeasurement(np.asarray(y, dtype=float), tuple(clique), float(sigma))


def mrf_tables(model: object) -> tuple[list[Clique], list[np.ndarray], float]:
    """(cliques, log-potential arrays in clique order, total) of an mbi MarkovRandomField."""
    pot = model.potentials
    cliques = [tuple(c) for c in pot.cliques]
    tables = []
    for cl in cliques:
        f = pot[cl]
        axes = [f.domain.attributes.index(a) for a in cl]
        tables.append(np.transpose(np.asarray(f.values, dtype=float), axes))
    return cliques, tables, float(model.total)


def mixture_logits(model: MixtureOfProducts, attributes: Sequence[str]) -> list[np.ndarray]:
    """Per-attribute logits (components x levels) of a mixture-of-products model."""
    return [np.asarray(model._logits[a], dtype=float) for a in attributes]


