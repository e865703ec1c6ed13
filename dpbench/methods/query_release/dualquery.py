"""DualQuery (Gaboardi, Arias, Hsu, Roth & Wu, ICML 2014) as the query-release paper runs it
(Liu, Vietri & Wu, NeurIPS 2021, App. B.2 and Table 3; the authors' ``dualquery.py``): a
zero-sum game between a query player, who keeps a multiplicative-weights distribution over
the workload's queries and their negations, and a data player, who best-responds with one
record per round. There is no measurement step (App. B.2: "alpha = 1").

State: the score of each query q after t rounds, S_t(q) = sum_{j<t} (q(P) - q(x_j)) (P the
private data, x_j the records so far); its negation 1 - q scores -S_t(q). Round t = 0, 1, ...:

1. **sample** ``samples`` (s) queries i.i.d. from Q_t, P(q) proportional to exp(eta S_t(q))
   over the 2|Q| queries and negations (Q_0 uniform). S_t has sensitivity t/N under
   replace-one neighbours with N public (each of its t terms moves by at most 1/N), so each
   draw is the exponential mechanism with parameter eps_t = 2 eta t / N: eps_t^2 / 8 zCDP
   (bounded-range analysis; the authors' accounting), s eps_t^2 / 8 per round, 0 in round 0;
2. **best response** (post-processing): the record x_t maximising the number of sampled
   queries it satisfies (a query sampled twice counts twice), found exactly by a
   mixed-integer program over the one-hot encoding of a record (:func:`best_response`,
   scipy's HiGHS ``milp``, as the authors' Gurobi MIP with absolute gap 0). App. B.2 writes
   the loss as sum_i q_i(D) to be minimised; with the query player's sign above the data
   player maximises it, as the authors' code and Gaboardi et al. do. ``oracle: enumerate``
   finds the same maximum by scoring every record of a small full domain
   (:func:`enumerate_best_response`; on ADULT (reduced) Table 3's grid fits about 30x
   faster than with the MIP). Records often tie (3 rounds in 4 at eta 3, s 100 on ADULT
   (reduced); a median of 4 records, up to a few hundred) and which one is kept moves the
   error: ``ties: partial`` (default) keeps those matching the most cells of the sampled,
   not negated queries (:func:`partial_scores`), the way the authors' Gurobi leans, then
   a uniformly random one (enumerate) or HiGHS's (mip); ``ties: random`` (enumerate) any
   maximiser uniformly, dpbench's rule before issue 62, whose mean error was 2.2% above
   the authors' code (z +8.9; eps 1, 320 runs against their 220; papers/qr/README.md);
3. **update**: S_{t+1} = S_t + q(P) - q(x_t), i.e. Q_{t+1} proportional to
   Q_t exp(eta (q(P) - q(x_t))).

The rounds continue while the budget lasts: a round is charged on the trial's zCDP ledger
before its draws, and the first round whose cost exceeds what is left is not run (the
authors' stopping rule; they run one pass at the largest eps and cut prefixes for the
smaller ones, which has the same distribution as the independent per-eps runs here). The
total after T rounds is s eta^2 (T - 1) T (2T - 1) / (12 N^2), so T is about
(6 N^2 rho / (s eta^2))^(1/3): 5 to 119 records on ADULT (N = 43,944) over Table 3's grid
at eps 0.1 to 1. ``max_rounds`` caps
T (None: budget only, as the paper). Output: the uniform mixture of the T records (App.
B.2), as query answers or as a synthetic table of the T records themselves (its native
records, no sampling: T rows, not n; (X, y) their encoding in the data's).

Under ``noise_disabled`` (tests only) the sampling is switched off: each round's best
response is to Q_t itself (every query weighted by s Q_t(q), the expectation of the sampled
objective), which is the exact multiplicative-weights game; the ledger is charged the same.
"""

from __future__ import annotations

import math
import time
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.data.queries import (
    MAX_HISTOGRAM_CELLS,
    QuerySet,
    check_histogram_size,
    resolve_workload,
)
from dpbench.methods.base import Method
from dpbench.methods.marginals.noise import noise_is_off
from dpbench.methods.outputs import QueryAnswers, SyntheticTable
from dpbench.methods.query_release.template import NEIGHBOURS, RELATION, workload_answers
from dpbench.methods.records import codes_frame, synthetic_table
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.mechanisms import exponential_mechanism_rho

# scipy (~0.4 s): imported when the method fits, not when `dpbench list` / `plan` reads it
optimize = lazy.module("scipy.optimize")
sparse = lazy.module("scipy.sparse")
special = lazy.module("scipy.special")

#: how a round's best response is found (:class:`DualQuery` ``oracle``)
ORACLES = ("mip", "enumerate")
#: which maximiser a round keeps when several records tie (:class:`DualQuery` ``ties``):
#: ``partial`` (both oracles) the ones matching the most cells of the sampled queries,
#: ``random`` (enumerate) any, uniformly, ``solver`` (mip) whichever HiGHS returns
TIES = ("partial", "random", "solver")


# -- accounting ---------------------------------------------------------------------------

def round_epsilon(eta: float, t: int, n: int) -> float:
    """The exponential mechanism's parameter of one draw in round ``t`` (0-based):
    2 eta t / N (P ~ exp(eta S_t), S_t of sensitivity t/N)."""
    return 2.0 * eta * t / n


def round_rho(eta: float, t: int, n: int, samples: int) -> float:
    """zCDP of round ``t``'s ``samples`` draws: s (2 eta t / N)^2 / 8."""
    return samples * exponential_mechanism_rho(round_epsilon(eta, t, n))


def total_rho(eta: float, rounds: int, n: int, samples: int) -> float:
    """zCDP of ``rounds`` rounds: s eta^2 (T - 1) T (2T - 1) / (12 N^2)."""
    return math.fsum(round_rho(eta, t, n, samples) for t in range(rounds))


# -- the query player -----------------------------------------------------------------------

def query_distribution(scores: NDArray, eta: float) -> NDArray:
    """Q_t over the 2|Q| queries then their negations: softmax(eta [S_t, -S_t])."""
    s = np.asarray(scores, dtype=float)
    return special.softmax(eta * np.concatenate([s, -s]))


def sample_queries(scores: NDArray, eta: float, samples: int, rng: np.random.Generator, *,
                   sensitivity: float, label: str = "dualquery:sample"
                   ) -> tuple[NDArray[np.int64], NDArray[np.bool_], NDArray]:
    """``samples`` i.i.d. draws from Q_t (:func:`query_distribution`), aggregated: (query
    positions, negated?, number of draws of each). Each draw is the exponential mechanism
    with parameter 2 eta Delta on the scores [S_t, -S_t] of sensitivity Delta (t / N,
    replace-one), drawn and recorded by :func:`dpbench.privacy.noise.exponential_samples`."""
    s = np.asarray(scores, dtype=float)
    picked = noise.exponential_samples(np.concatenate([s, -s]), eta, sensitivity, samples,
                                       rng, relation=RELATION, label=label)
    ids, counts = np.unique(picked, return_counts=True)
    n_q = len(scores)
    return (ids % n_q).astype(np.int64), ids >= n_q, counts.astype(float)


# -- the data player ----------------------------------------------------------------------

def query_cells(qs: QuerySet, positions: NDArray) -> list[tuple[tuple[int, ...],
                                                                 tuple[int, ...]]]:
    """Per query position, (domain axes of its marginal, its cell's codes on them)."""
    marg, cells = qs.locate(positions)
    return [(qs.axes[int(m)], c) for m, c in zip(marg, cells, strict=True)]


def payoff(qs: QuerySet, record: NDArray, positions: NDArray, negated: NDArray,
           weights: NDArray) -> float:
    """sum_i w_i q_i(x) for one record x (codes in domain order), a negated query scoring
    1 - q_i(x): the objective :func:`best_response` maximises."""
    hit = np.isin(np.asarray(positions), qs.row_positions(np.asarray(record)[None, :])[0])
    return float(np.sum(np.asarray(weights) * np.where(negated, ~hit, hit)))


def partial_scores(qs: QuerySet, positions: NDArray, negated: NDArray, weights: NDArray
                   ) -> list[NDArray]:
    """The ``ties: partial`` score as one vector per attribute over its levels: a record x
    scores sum_a v_a[x_a] = sum_i w_i (cells of q_i that x matches) / k_i over the sampled
    queries that are not negated (q_i on k_i cells). Post-processing of the samples only.

    Why: the authors' Gurobi MIP, given the same sampled queries, returns among the tied
    maximisers one that scores highest here 47% of the time where a uniform pick would 28%
    (210 tied rounds, papers/qr/README.md); records nearer the queries still unmet are
    what the query player asks for next, and uniform picks measurably raise the error."""
    out = [np.zeros(int(k)) for k in qs.sizes]
    neg = np.asarray(negated, dtype=bool)
    w = np.asarray(weights, dtype=float)
    keep = np.flatnonzero(~neg)
    for (axes, cell), wi in zip(query_cells(qs, np.asarray(positions)[keep]), w[keep],
                                strict=True):
        for a, v in zip(axes, cell, strict=True):
            out[a][v] += wi / len(axes)
    return out


def _check_ties(ties: str, allowed: tuple[str, ...], oracle: str) -> None:
    if ties not in allowed:
        raise ValueError(f"ties={ties!r} is not a rule of oracle {oracle!r}; valid: "
                         f"{', '.join(allowed)}")


def best_response(qs: QuerySet, positions: NDArray, negated: NDArray, weights: NDArray,
                  time_limit: float | None = 60.0, ties: str = "solver"
                  ) -> tuple[NDArray[np.int64], float, bool]:
    """A record maximising :func:`payoff`, from a mixed-integer program solved by HiGHS.

    Variables: the record's one-hot encoding z (binary, one block per attribute summing to
    1) and per query i an indicator c_i in [0, 1] with objective weight w_i. A query on
    cells (a_1 = v_1, ..., a_k = v_k) gets c_i <= z_{a_j v_j} for every j (c_i can be 1 only
    if x satisfies it); its negation gets c_i + sum_j z_{a_j v_j} <= k (c_i can be 1 only if
    some a_j differs from v_j). With z integral and w_i > 0 the optimal c_i are integral, so
    c need not be declared integer. ``ties``: ``solver`` keeps HiGHS's own maximiser;
    ``partial`` adds :func:`partial_scores` on z scaled by 1 / (2 (W + 1)), W the sampled
    queries' total weight, so it is below 1/2 on every record and only orders records of
    equal payoff (the weights must then be whole numbers: draw counts). Returns (record
    codes in domain order, payoff, whether HiGHS proved optimality; False = the time limit
    stopped it with a feasible record).
    """
    _check_ties(ties, ("partial", "solver"), "mip")
    w = np.asarray(weights, dtype=float)
    neg = np.asarray(negated, dtype=bool)
    if w.size == 0:
        raise ValueError("a best response needs at least one query")
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("query weights must be finite and > 0")
    sizes = np.asarray(qs.sizes, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])     # first one-hot column per axis
    n_z, n_c = int(sizes.sum()), w.size
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    upper: list[float] = []
    r = 0
    for i, (axes, cell) in enumerate(query_cells(qs, positions)):
        z = [int(start[a] + v) for a, v in zip(axes, cell, strict=True)]
        if neg[i]:                               # c_i + sum_j z_j <= k
            rows += [r] * (len(z) + 1)
            cols += [n_z + i, *z]
            vals += [1.0] * (len(z) + 1)
            upper.append(float(len(z)))
            r += 1
        else:                                    # c_i - z_j <= 0 for every j
            for zj in z:
                rows += [r, r]
                cols += [n_z + i, zj]
                vals += [1.0, -1.0]
                upper.append(0.0)
                r += 1
    queries = sparse.csr_array((vals, (rows, cols)), shape=(r, n_z + n_c))
    onehot = sparse.csr_array((np.ones(n_z), (np.repeat(np.arange(len(sizes)), sizes),
                                              np.arange(n_z))), shape=(len(sizes), n_z + n_c))
    secondary = np.zeros(n_z)
    if ties == "partial":
        if not np.all(w == np.round(w)):
            raise ValueError("ties='partial' in the MIP needs whole-number weights (draw "
                             "counts)")
        secondary = np.concatenate(partial_scores(qs, positions, neg, w)) / (2 * (w.sum() + 1))
    res = optimize.milp(np.concatenate([-secondary, -w]),
                        integrality=np.concatenate([np.ones(n_z), np.zeros(n_c)]),
                        bounds=optimize.Bounds(0.0, 1.0),
                        constraints=[optimize.LinearConstraint(queries, -np.inf, np.asarray(upper)),
                                     optimize.LinearConstraint(onehot, 1.0, 1.0)],
                        options={"mip_rel_gap": 0.0, "disp": False,
                                 **({} if time_limit is None
                                    else {"time_limit": float(time_limit)})})
    if res.x is None:
        raise RuntimeError(f"the best-response MIP found no record ({res.message})")
    record = np.array([int(np.argmax(res.x[b:b + m])) for b, m in zip(start, sizes,
                                                                        strict=True)])
    return record, payoff(qs, record, positions, neg, w), bool(res.status == 0)


def payoff_table(qs: QuerySet, positions: NDArray, negated: NDArray, weights: NDArray
                 ) -> NDArray:
    """:func:`payoff` of every record of the full domain (an array of shape ``qs.sizes``)
    less the constant sum of the negated queries' weights: per marginal, a table of the
    signed weights (+ a query, - a negation) broadcast over the domain. The caller bounds
    the domain's size (:func:`check_histogram_size`)."""
    w = np.asarray(weights, dtype=float)
    pos = np.asarray(positions, dtype=np.int64)
    signed = np.where(np.asarray(negated, dtype=bool), -w, w)
    marg = np.searchsorted(qs.offsets, pos, side="right") - 1
    objective = np.zeros(qs.sizes)
    for m in np.unique(marg):
        sel = marg == m
        table = np.zeros(math.prod(qs.shapes[m]))
        np.add.at(table, pos[sel] - qs.offsets[m], signed[sel])
        axes = qs.axes[m]
        table = np.transpose(table.reshape(qs.shapes[m]), np.argsort(axes))
        shape = [qs.sizes[a] if a in axes else 1 for a in range(len(qs.sizes))]
        objective += table.reshape(shape)
    return objective


def enumerate_best_response(qs: QuerySet, positions: NDArray, negated: NDArray,
                            weights: NDArray, max_cells: int | None = MAX_HISTOGRAM_CELLS,
                            rng: np.random.Generator | None = None, ties: str = "random"
                            ) -> tuple[NDArray[np.int64], float]:
    """A record maximising :func:`payoff` by evaluating it on every record of the full domain
    (:func:`payoff_table` plus the negated queries' weights). Ties (common: the sampled
    objective is a count; 3 rounds in 4 at eta 3, s 100 on ADULT (reduced)): ``ties:
    partial`` first keeps the maximisers of :func:`partial_scores`, ``random`` keeps them
    all; of those, a uniformly random one drawn from ``rng`` (None: the first in C order, which
    favours low codes and measurably raises DualQuery's max error). The domain is refused
    in one line over ``max_cells`` before anything is allocated. The same maximum as
    :func:`best_response` (tests/methods/test_dualquery.py), for small domains."""
    _check_ties(ties, ("partial", "random"), "enumerate")
    check_histogram_size(qs.domain, max_cells)
    w = np.asarray(weights, dtype=float)
    neg = np.asarray(negated, dtype=bool)
    pos = np.asarray(positions, dtype=np.int64)
    objective = payoff_table(qs, pos, neg, w)
    flat = int(np.argmax(objective))
    tied = np.flatnonzero(objective.ravel() >= objective.flat[flat]
                          - 1e-9 * max(1.0, float(w.sum())))
    if ties == "partial" and tied.size > 1:
        codes = np.unravel_index(tied, qs.sizes)
        near = sum(v[c] for v, c in zip(partial_scores(qs, pos, neg, w), codes, strict=True))
        tied = tied[near >= near.max() - 1e-9 * max(1.0, float(w.sum()))]
    flat = int(tied[0])
    if rng is not None:
        # not privacy noise: a pick among records tied on the already-sampled queries
        flat = int(tied[rng.integers(tied.size)])
    record = np.array(np.unravel_index(flat, qs.sizes), dtype=np.int64)
    return record, float(objective.flat[flat] + w[neg].sum())


# -- the method ---------------------------------------------------------------------------

def _number(value: object, name: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} must be a finite number > 0 ({what})")
    return float(value)


def _whole(value: object, name: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}={value!r} must be a whole number >= 1 ({what})")
    return int(value)


class DualQuery(Method):
    """DualQuery (module docstring). ``eta``: the query player's learning rate (Table 3:
    2, 3, 4, 5); ``samples``: queries drawn per round (Table 3: 25, 50, 100, 250, 500);
    ``max_rounds``: a cap on the rounds (None: until the budget is spent, as the paper);
    ``oracle``: how the best response is found, ``mip`` (the paper's, default) or
    ``enumerate`` (the same maximum by scoring every record of a full domain of at most
    ``max_domain_cells``); ``ties``: which of several maximising records a sampled round
    keeps (:data:`TIES`): ``partial`` (default, both oracles) those matching the most
    cells of the sampled, not negated queries (:func:`partial_scores`), then a uniformly
    random one (enumerate) or HiGHS's (mip); ``random`` (enumerate; dpbench's rule before
    issue 62) a uniformly random maximiser; ``solver`` (mip) HiGHS's own. The authors'
    Gurobi has no stated rule; its picks lean the ``partial`` way and ``random`` raises
    the error (papers/qr/README.md). ``mip_time_limit``: seconds per best-response MIP
    (60, the authors' Gurobi limit; a record found at the limit is used and counted in the
    info); the workload ``workload`` / ``number`` / ``seed`` / ``max_cells`` as the
    ``query_release`` task's parameters."""

    accounting = "zcdp"
    neighbours = "replace_one"
    serves = frozenset({"query_release"})
    requires = frozenset({"discrete"})
    produces = (QueryAnswers, SyntheticTable)

    def __init__(self, eta: float = 3.0, samples: int = 100, max_rounds: int | None = None,
                 oracle: str = "mip", ties: str = "partial", mip_time_limit: float = 60.0,
                 workload: str = "all_3way", number: int | None = None, seed: int = 0,
                 max_cells: int | str | None = None,
                 max_domain_cells: int | None = MAX_HISTOGRAM_CELLS) -> None:
        if oracle not in ORACLES:
            raise ValueError(f"oracle={oracle!r} is unknown; valid: {', '.join(ORACLES)}")
        if ties not in TIES:
            raise ValueError(f"ties={ties!r} is unknown; valid: {', '.join(TIES)}")
        _check_ties(ties, ("partial", "solver") if oracle == "mip" else ("partial", "random"),
                    oracle)
        super().__init__(
            eta=_number(eta, "eta", "the query player's learning rate"),
            samples=_whole(samples, "samples", "queries drawn per round"),
            max_rounds=None if max_rounds is None
            else _whole(max_rounds, "max_rounds", "a cap on the rounds, or null"),
            oracle=oracle, ties=ties,
            mip_time_limit=_number(mip_time_limit, "mip_time_limit", "seconds per MIP"),
            workload=workload, number=number, seed=seed, max_cells=max_cells,
            max_domain_cells=max_domain_cells)

    def queries(self, data: TabularData) -> QuerySet:
        """The workload's queries over ``data``'s domain (one-line error if it has none, or
        if ``oracle: enumerate`` meets a full domain over ``max_domain_cells``)."""
        if data.discrete is None or data.domain is None:
            raise ValueError("DualQuery needs discrete data (integer codes and a domain)")
        domain = dict(data.domain)
        p = self.params
        if p["oracle"] == "enumerate":
            check_histogram_size(domain, p["max_domain_cells"])
        return QuerySet.build(domain, resolve_workload(domain, data.n, p["workload"],
                                                       p["number"], p["seed"],
                                                       p["max_cells"]))

    def check_data(self, data: TabularData) -> None:
        self.queries(data)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        if accountant.currency != "zcdp":
            raise TypeError(f"DualQuery composes in zCDP; this ledger is "
                            f"{accountant.currency!r}")
        p = self.params
        eta, s, n = p["eta"], p["samples"], data.n
        qs = self.queries(data)
        true = qs.answers(data.discrete)
        scores = np.zeros(qs.n_queries)
        records: list[NDArray] = []
        self.oracle_seconds_, self.mip_unproven_ = 0.0, 0
        exact = noise_is_off()
        t = 0
        while True:
            if p["max_rounds"] is not None and t >= p["max_rounds"]:
                self.stop_reason_ = f"max_rounds={p['max_rounds']} reached"
                break
            cost = round_rho(eta, t, n, s)
            left = accountant.remaining()
            if cost > left:
                self.stop_reason_ = (f"budget: round {t + 1} would cost rho {cost:.4g}, "
                                     f"{left:.4g} left")
                break
            eps_t = round_epsilon(eta, t, n)
            accountant.charge_rho(cost, f"sample {t + 1} ({s} draws, eps {eps_t:.4g} each)")
            if exact:
                w = s * query_distribution(scores, eta)
                ids = np.flatnonzero(w > 0)
                pos, neg, w = ids % qs.n_queries, ids >= qs.n_queries, w[ids]
            else:
                # s draws of the exponential mechanism with parameter eps_t on the scores
                # [S_t, -S_t] of sensitivity t/N (replace-one): Q_t = softmax(eta [S_t, -S_t])
                pos, neg, w = sample_queries(scores, eta, s, rng, sensitivity=t / n,
                                             label=f"dualquery:sample:{t + 1}")
            start = time.perf_counter()
            # the tie rule acts on sampled rounds (whole-number weights); the exact game's
            # real weights rarely tie: the solver's pick, or the first in C order
            if p["oracle"] == "mip":
                record, _, optimal = best_response(qs, pos, neg, w, p["mip_time_limit"],
                                                   "solver" if exact else p["ties"])
                self.mip_unproven_ += not optimal
            else:
                record, _ = enumerate_best_response(qs, pos, neg, w, p["max_domain_cells"],
                                                    None if exact else rng,
                                                    "random" if exact else p["ties"])
            self.oracle_seconds_ += time.perf_counter() - start
            records.append(record)
            scores += true
            np.subtract.at(scores, qs.row_positions(record[None, :])[0], 1.0)
            t += 1
        codes = np.array(records, dtype=np.int64).reshape(-1, len(qs.sizes))
        self.records_ = codes_frame(codes, list(qs.attributes))
        self.answers_ = qs.rows_answers(self.records_.to_numpy())
        self.encoding_ = data.encoding
        self.rounds_run_ = t
        self.n_queries_ = qs.n_queries
        self.rho_ = accountant.rho_total
        self.noise_off_ = exact
        return self

    def output(self, kind: type) -> Any:
        if kind is QueryAnswers:
            return workload_answers(self.answers_, self.params)
        if kind is SyntheticTable:
            return synthetic_table(self.records_, self.encoding_, "DualQuery")
        return super().output(kind)

    def info(self) -> dict[str, Any]:
        return {"rounds_run": self.rounds_run_, "stop_reason": self.stop_reason_,
                "records": self.rounds_run_, "distinct_records":
                int(len(self.records_.drop_duplicates())),
                "rho": self.rho_, "eta": self.params["eta"], "samples": self.params["samples"],
                "n_queries": self.n_queries_, "oracle": self.params["oracle"],
                "ties": self.params["ties"],
                "oracle_seconds": self.oracle_seconds_,
                "mip_unproven": self.mip_unproven_, "neighbours": NEIGHBOURS,
                "noise_disabled": self.noise_off_}


def rounds_affordable(eta: float, samples: int, n: int, rho: float) -> int:
    """The rounds a budget ``rho`` pays for on ``n`` private rows without a ``max_rounds``
    cap: the largest T with :func:`total_rho` (T) <= rho (what :class:`DualQuery` runs)."""
    t, spent = 0, 0.0
    while spent + round_rho(eta, t, n, samples) <= rho:
        spent += round_rho(eta, t, n, samples)
        t += 1
    return t
