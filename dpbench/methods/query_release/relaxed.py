"""Counting-query answers of relaxed (one-hot) rows in torch, and the skeleton the neural
query-release methods share (GEM, RAP and RAP-softmax; Liu, Vietri & Wu, NeurIPS 2021,
Secs. 3-4 and App. B).

A relaxed row is a vector over the one-hot columns of the domain: attribute j's block of
``m_j`` columns, blocks in domain order (d' = sum m_j columns). A k-way counting query
q_{c,v} reads one column per attribute of its clique, and its answer on a set of B relaxed
rows X is the mean over the rows of the product of those k columns:
``q(X) = 1/B sum_b prod_i X[b, col_i]``. For rows whose blocks are probability vectors
(GEM's generator output, RAP-softmax) this is the expected answer of the product
distribution each row defines; for one-hot rows it is the ordinary share of rows.

:func:`column_index` lays the workload's queries out as an (n_queries, k) matrix of column
numbers in :class:`~dpbench.data.queries.QuerySet`'s flat order (cliques
smaller than the largest read a column of ones, number d'), as the authors' query manager
does. :func:`answers` is the differentiable answer of a few queries from it (the measured
ones, for a loss): a gather and a product.

Every query's answer (once per round, for the selection) comes from :class:`AnswerPlan`,
never from a Python loop over marginals: the queries are grouped by the attribute of
their last factor (the attribute of the query with the most levels), and within a group
by their other k-1 columns (a prefix); the products of every distinct prefix over the B
rows form a (U, B) matrix P, and ``P X_block / B`` holds the answer of every query of
the group, read by one gather. P is built ``PLAN_CHUNK`` prefixes at a time in a reused
buffer, from whole rows of the transposed X. On ADULT (334,128 queries, d' = 146) that is
one product per attribute and chunk and takes 0.034 s for B = 1,000 float32 rows on one
CPU thread (0.22 s when each group's P was a fresh gather, the same answers to the bit;
2026-11-27), against ~10 s for the authors' gather over every query (:func:`all_answers`,
kept as the reference the tests compare with).

Records (``output(SyntheticTable)``, post-processing of the final relaxed rows ``rows_``):
n records (n the number of private rows, public under the template's replace-one
relation), record i from one relaxed row (a random permutation of the B rows repeated, so
each row gives floor or ceil of n / B records) with each attribute drawn from that row's
block, clipped at 0 and normalised (uniform where no entry is positive)
(:func:`dpbench.methods.records.sample_blocks`). For rows whose blocks are probability
vectors (GEM, RAP-softmax) this samples the mixture of product distributions whose expected
answers are the released ones. The draws use a seed spawned from the fit's generator
after the fit (:func:`dpbench.methods.records.post_seed`: the fit and its answers are
unchanged), the same records on every call; (X, y) are the data's encoding of them.

Determinism: every fit runs in :func:`torch_session`, one thread (bit-identical results
whatever the machine's core count) with a torch generator seeded from the trial's numpy
generator; ``device: auto`` uses a GPU when present (not bit-identical to the CPU).

torch is imported by the functions that compute, not with this module: commands that only
plan import the method classes to read their declarations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.data.queries import QuerySet, workload_queries
from dpbench.methods.base import Method
from dpbench.methods.marginals.noise import noise_is_off
from dpbench.methods.outputs import QueryAnswers, SyntheticTable
from dpbench.methods.query_release.template import AdaptiveBudget, workload_answers
from dpbench.methods.records import post_seed, sample_blocks, synthetic_table

if TYPE_CHECKING:
    import torch

#: queries answered per gather in :func:`all_answers` (B x chunk x k floats at a time)
CHUNK = 32_768
#: prefixes per matrix product in :class:`AnswerPlan` (a (chunk, B) buffer, reused: 1 MB
#: of float32 at B = 1,000, cache-sized; 128-512 measured within 10% on ADULT)
PLAN_CHUNK = 256
DEVICES = ("cpu", "auto")


def block_offsets(qs: QuerySet) -> NDArray[np.int64]:
    """First one-hot column of each attribute (domain order), then d' (one past the end)."""
    return np.concatenate([[0], np.cumsum(qs.sizes)]).astype(np.int64)


def column_index(qs: QuerySet) -> NDArray[np.int64]:
    """(n_queries, k) one-hot column numbers of every query in the flat layout; a clique
    with fewer than k attributes is padded with column d' (a column of ones)."""
    off = block_offsets(qs)
    k = max(len(a) for a in qs.axes)
    out = np.full((qs.n_queries, k), off[-1], dtype=np.int64)
    for m, (axes, shape) in enumerate(zip(qs.axes, qs.shapes, strict=True)):  # setup only
        cells = np.indices(shape).reshape(len(shape), -1).T
        out[qs.span(m), :len(axes)] = cells + off[list(axes)]
    return out


def with_ones(X: torch.Tensor) -> torch.Tensor:
    """X with the column of ones that padded queries read appended."""
    import torch

    return torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)], dim=1)


def answers(X: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Differentiable answers of the queries ``index`` ((q, k) columns of ``with_ones(X)``)
    on the relaxed rows: mean over rows of the product of the columns."""
    return X[:, index].prod(-1).mean(0)


def column_answers(X: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """:func:`answers` with the rows transposed first: each factor is a gather of whole
    rows of X^T (q, B), so the gradient is a row-wise ``index_add`` and a product's
    plain product rule, not the gather's element scatter and ``prod``'s zero-safe
    backward (5-7x faster steps for q = 325-625 queries on 1,000 rows of ADULT). Not bit for
    bit :func:`answers`: the product and the mean sum in another order (~1e-9 apart in
    float32), so RAP takes it only as the ``step: columns`` option."""
    Xt = X.t().contiguous()
    out = Xt.index_select(0, index[:, 0])
    for i in range(1, index.shape[1]):
        out = out * Xt.index_select(0, index[:, i])
    return out.mean(1)


def squared_error_gradient(Xt: torch.Tensor, index: torch.Tensor, target: torch.Tensor,
                           fused: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss sum_j (target_j - q_j(X))^2 of the queries ``index`` ((q, k) rows of Xt)
    on relaxed rows given transposed, ``Xt`` (columns x B rows), and its gradient in Xt's
    layout, in closed form without autograd: dq_j / dX[b, c] is 1/B times the product of
    query j's other k-1 factors at row b, so the gradient is one ``index_add`` per factor
    of a prefix product times a suffix product (the coefficient -2 (target_j - q_j) / B
    folded into the suffix). The loss of :func:`answers` and its backward, summed in
    another order (the mean over rows is a dot product here); the loss is a 0-d tensor.

    ``fused=False`` computes in place in the gathered factors (the fastest eager form);
    ``fused=True`` the same arithmetic without in-place updates, the form ``torch.compile``
    fuses into a few loops over the (q, B) factors (:func:`compiled_gradient`; eager it is
    slower, its temporaries allocated anew)."""
    import torch

    mul = torch.mul if fused else torch.Tensor.mul_
    add_rows = torch.Tensor.index_add if fused else torch.Tensor.index_add_
    q, k = index.shape
    B = Xt.shape[1]
    F = Xt.index_select(0, index.t().reshape(-1)).view(k, q, B)   # F[p]: factor p
    prefix = [F[0], F[0]]                   # prefix[p] = F[0] ... F[p-1] (prefix[0]: unused)
    for p in range(2, k):
        prefix.append(prefix[-1] * F[p - 1])
    sums = F[0].sum(1) if k == 1 else torch.linalg.vecdot(prefix[k - 1], F[k - 1])
    resid = target - sums / B
    grad = torch.zeros_like(Xt)
    suffix = (-2.0 / B) * resid.unsqueeze(1)         # coefficient x F[p] ... F[k-1]
    for p in range(k - 1, 0, -1):                    # factor p's part, then the suffix
        grad = add_rows(grad, 0, index[:, p], mul(prefix[p], suffix))
        suffix = mul(F[p], suffix) if p == k - 1 else mul(suffix, F[p])
    grad = add_rows(grad, 0, index[:, 0], suffix.expand(q, B))
    return (resid * resid).sum(), grad


#: the compiled gradient, built once per process (:func:`compiled_gradient`)
_COMPILED: list[Callable[..., tuple[torch.Tensor, torch.Tensor]]] = []


def compiled_gradient() -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """``squared_error_gradient(..., fused=True)`` through ``torch.compile`` (Inductor's C++
    code for the CPU, dynamic shapes: one program for every q and B of a k), built once
    per process and compiled at its first call (~15 CPU-s with an empty cache, ~2 s from
    Inductor's on-disk cache). It needs a C++ compiler at run time; a machine without one
    fails at that first call (the caller falls back). ``compile_threads`` 1: no pool of
    compile workers beside a trial (the C++ compiler itself runs as a child process)."""
    if not _COMPILED:
        import torch
        import torch._inductor.config as inductor

        inductor.compile_threads = 1
        _COMPILED.append(torch.compile(partial(squared_error_gradient, fused=True),
                                       dynamic=True))
    return _COMPILED[0]


class ActiveColumns:
    """The columns of relaxed rows ``W`` (B, d') that the queries ``index`` read (every
    column of an attribute one of them reads when ``blocks``, for a per-attribute softmax
    of W), transposed, as a leaf tensor ``param`` to optimise in place of W: the other
    columns get a zero gradient, so Adam (m = v = 0) and a clip to [-1, 1] leave them as
    they are, and optimising the sub-matrix then writing it back (:meth:`write_back`) is
    the same update. ``param`` holds raw values plus a last row of ones (the padding
    column, its gradient zeroed: it never moves) or, with ``blocks``, the logits."""

    def __init__(self, W: torch.Tensor, index: torch.Tensor, sizes: tuple[int, ...],
                 blocks: bool, gradient: Callable[..., tuple[torch.Tensor, torch.Tensor]]
                 = squared_error_gradient) -> None:
        import torch

        self.gradient = gradient    # squared_error_gradient or compiled_gradient()
        d = W.shape[1]
        cols = torch.unique(index)
        cols = cols[cols < d]
        self.sizes: list[int] = []
        if blocks:
            off = torch.as_tensor(np.concatenate([[0], np.cumsum(sizes)]), device=W.device)
            attrs = torch.unique(torch.searchsorted(off, cols, right=True) - 1).tolist()
            self.sizes = [sizes[a] for a in attrs]
            cols = torch.cat([torch.arange(int(off[a]), int(off[a + 1]), device=W.device)
                              for a in attrs])
        pos = torch.full((d + 1,), len(cols), dtype=torch.long, device=W.device)
        pos[cols] = torch.arange(len(cols), device=W.device)
        self.cols, self.index, self.blocks = cols, pos[index], blocks
        sub = W.detach()[:, cols].t()
        if not blocks:
            sub = torch.cat([sub, torch.ones(1, W.shape[0], dtype=W.dtype, device=W.device)])
        self.param = sub.contiguous().requires_grad_(True)

    def loss_and_grad(self, target: torch.Tensor) -> float:
        """The squared-error loss (:func:`squared_error_gradient`) at ``param``, its
        gradient left in ``param.grad``."""
        import torch

        if not self.blocks:
            value, grad = self.gradient(self.param.detach(), self.index, target)
            grad[-1] = 0.0
            self.param.grad = grad
            return float(value)
        ones = torch.ones(1, self.param.shape[1], dtype=self.param.dtype,
                          device=self.param.device)
        Xt = torch.cat([b.softmax(0) for b in torch.split(self.param, self.sizes)] + [ones])
        value, grad = self.gradient(Xt.detach(), self.index, target)
        Xt.backward(grad)
        return float(value)

    def write_back(self, W: torch.Tensor) -> None:
        """Copy the optimised columns into W."""
        import torch

        with torch.no_grad():
            W[:, self.cols] = self.param[:len(self.cols)].t()


@dataclass(frozen=True)
class _Group:
    """The queries whose last column lies in one attribute's block (:class:`AnswerPlan`)."""

    block: slice                     # the attribute's columns
    prefixes: torch.Tensor           # (U, k-1) distinct column tuples of the other attributes
    prefix_of: torch.Tensor          # per query of the group, its row of ``prefixes``
    level: torch.Tensor              # per query, its column within ``block``
    positions: torch.Tensor          # per query, its flat position


class AnswerPlan:
    """Every query's answer on relaxed rows through matrix products (module docstring of
    :func:`all_answers`). Built once per workload from :func:`column_index`."""

    def __init__(self, qs: QuerySet, index: NDArray[np.int64], device: torch.device,
                 chunk: int = PLAN_CHUNK) -> None:
        import torch

        off = block_offsets(qs)
        attr = np.searchsorted(off, index, side="right") - 1      # d' (ones) -> len(sizes)
        levels = np.append(np.asarray(qs.sizes), 0)[attr]
        # the last factor: the query's column in its attribute with the most levels
        pick = np.argmax(levels * (index.shape[1] + 1) + np.arange(index.shape[1]), axis=1)
        rows = np.arange(len(index))
        last_col, last_attr = index[rows, pick], attr[rows, pick]
        others = np.ones(index.shape, dtype=bool)
        others[rows, pick] = False
        rest = index[others].reshape(len(index), index.shape[1] - 1)
        self.n_queries = len(index)
        self.chunk = chunk
        self.groups = []
        for j in np.unique(last_attr):                         # one group per attribute
            sel = np.flatnonzero(last_attr == j)
            uniq, inv = np.unique(rest[sel], axis=0, return_inverse=True)
            t = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=device)  # noqa: E731
            self.groups.append(_Group(slice(int(off[j]), int(off[j + 1])), t(uniq),
                                      t(inv.reshape(-1)), t(last_col[sel] - off[j]), t(sel)))

    def __call__(self, X: torch.Tensor) -> NDArray:
        import torch

        with torch.no_grad():
            Xo = with_ones(X.detach())
            XT = Xo.T.contiguous()                  # a prefix's factors are rows of XT
            B, dtype = X.shape[0], X.dtype
            P = torch.empty(self.chunk, B, dtype=dtype, device=X.device)
            factor = torch.empty_like(P)
            out = torch.empty(self.n_queries, dtype=dtype, device=X.device)
            for g in self.groups:
                block = Xo[:, g.block].contiguous()
                M = torch.empty(len(g.prefixes), block.shape[1], dtype=dtype, device=X.device)
                for s in range(0, len(g.prefixes), self.chunk):
                    u = g.prefixes[s:s + self.chunk]
                    _prefix_products(XT, u, P[:len(u)], factor[:len(u)])
                    torch.mm(P[:len(u)], block, out=M[s:s + len(u)])
                out[g.positions] = M[g.prefix_of, g.level] / B
            return out.double().cpu().numpy()


def _prefix_products(XT: torch.Tensor, cols: torch.Tensor, P: torch.Tensor,
                     factor: torch.Tensor) -> None:
    """Row u of ``P`` (U, B) := the product over the rows of ``XT`` (d', B) named by
    ``cols[u]`` (U, j), elementwise; ones when j = 0. ``factor``: scratch of P's shape.
    Written into buffers reused chunk after chunk: a fresh (U, B) array per group was most
    of the plan's time (page faults, cache misses)."""
    import torch

    if cols.shape[1] == 0:
        P.fill_(1.0)
        return
    torch.index_select(XT, 0, cols[:, 0], out=P)
    for j in range(1, cols.shape[1]):
        torch.index_select(XT, 0, cols[:, j], out=factor)
        P.mul_(factor)


def all_answers(X: torch.Tensor, index: torch.Tensor, chunk: int = CHUNK) -> NDArray:
    """Every query's answer (float64 numpy, flat layout) on relaxed rows ``X`` (B, d') by
    gathering, chunk by chunk of queries (the authors' way; the reference for
    :class:`AnswerPlan`, which takes 0.03-0.05 s on ADULT's 1,000 rows against its ~10 s)."""
    import torch

    with torch.no_grad():
        Xo = with_ones(X.detach())
        parts = [answers(Xo, idx) for idx in torch.split(index, chunk)]
        return torch.cat(parts).double().cpu().numpy()


def block_softmax(logits: torch.Tensor, sizes: tuple[int, ...]) -> torch.Tensor:
    """Per-attribute softmax over each block of columns."""
    import torch

    return torch.cat([b.softmax(-1) for b in torch.split(logits, list(sizes), dim=1)], dim=1)


@contextmanager
def torch_session(rng: np.random.Generator, device: str = "cpu"
                  ) -> Iterator[tuple[torch.Generator, torch.device]]:
    """One torch thread and a generator seeded from ``rng`` (module docstring); restores
    the thread count after."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"device={device!r} is unknown; valid: {', '.join(DEVICES)}")
    dev = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else "cpu")
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # not privacy noise: a seed
        gen = torch.Generator(device=dev).manual_seed(int(rng.integers(2**62)))
        yield gen, dev
    finally:
        torch.set_num_threads(old)


def whole(value: object, name: str, what: str, low: int = 1) -> int:
    """``value`` as a whole number >= ``low``, else a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name}={value!r} must be a whole number >= {low} ({what})")
    return int(value)


def positive(value: object, name: str, what: str) -> float:
    """``value`` as a finite number > 0, else a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} must be a finite number > 0 ({what})")
    return float(value)


class RelaxedMethod(Method):
    """What GEM and RAP share: the workload (``workload`` / ``number`` / ``seed`` /
    ``max_cells``, as the ``query_release`` task's parameters), the truth and the
    one-hot query index, one template selection + measurement (past picks excluded, as
    the authors' code), the answers as output, the template's info."""

    accounting = "zcdp"
    neighbours = "replace_one"
    serves = frozenset({"query_release"})
    requires = frozenset({"discrete"})
    produces = (QueryAnswers, SyntheticTable)

    def queries(self, data: TabularData) -> QuerySet:
        return workload_queries(data, self.params, type(self).__name__)

    def _keep_for_records(self, qs: QuerySet, data: TabularData,
                          rng: np.random.Generator) -> None:
        """After the fit's last draw: what ``output(SyntheticTable)`` needs besides
        ``rows_`` (module docstring), the seed spawned without advancing ``rng``."""
        self.attributes_, self.sizes_ = qs.attributes, qs.sizes
        self.n_rows_, self.encoding_ = data.n, data.encoding
        self.records_seed_ = post_seed(rng)

    def check_data(self, data: TabularData) -> None:
        self.queries(data)

    def _begin(self, budget: AdaptiveBudget) -> AdaptiveBudget:
        """Reset the per-fit state before the first round; returns ``budget``."""
        self.budget_ = budget
        self.selected_: list[int] = []
        self.measured_: list[float] = []
        self.round_cpu_seconds_: list[float] = []
        self.steps_: list[int] = []
        self.noise_off_ = noise_is_off()
        return budget

    def _measure_next(self, budget: AdaptiveBudget, true: NDArray, fake: NDArray,
                      accountant: Any, rng: np.random.Generator, label: str) -> None:
        """Select (excluding past picks) and measure one query; appended to ``selected_``
        and ``measured_``."""
        scores = np.abs(true - fake)
        scores[self.selected_] = -np.inf
        q = budget.select(scores, accountant, rng, f"select {label}")
        self.measured_.append(budget.measure(float(true[q]), accountant, rng,
                                             f"measure {label}"))
        self.selected_.append(q)

    def output(self, kind: type) -> Any:
        if kind is QueryAnswers:
            return workload_answers(self.answers_, self.params)
        if kind is SyntheticTable:
            records = sample_blocks(self.rows_, self.attributes_, self.sizes_, self.n_rows_,
                                    self.records_seed_)
            return synthetic_table(records, self.encoding_, type(self).__name__)
        return super().output(kind)

    def info(self) -> dict[str, Any]:
        return {**self.budget_.info(), "n_queries": self.n_queries_,
                "measured": len(self.selected_), "noise_disabled": self.noise_off_,
                "selected": [int(q) for q in self.selected_],
                "round_cpu_seconds": self.round_cpu_seconds_}
