"""RAP's round as one compiled loop (Numba): the closed-form gradient of the squared error
(:func:`~dpbench.methods.query_release.relaxed.squared_error_gradient`'s arithmetic),
for RAP-softmax through the per-attribute softmax, torch's Adam update, RAP's clip to
[-1, 1] and the stopping rules of ``RAP._descend``, step after step, with no Python
between the steps.

Why: on ADULT's 1,000 relaxed rows a RAP step is a few memory passes over the measured
queries' factors, and the torch steps spend most of it elsewhere: a kernel launch per
operation, torch's Adam, the gradient's ``index_add`` scatter, Python. Here
each query costs four vectorised passes over contiguous rows of B values (its product's
sum, then one gradient pass per factor), and Adam one pass over the optimised columns
(the speed is in docs/speed.md).

Layout: ``P`` (C, B) float32, C-contiguous, the optimised columns of the relaxed rows
transposed (``relaxed.ActiveColumns.param``: one row per column, B = n' values), whose
last ``frozen`` rows are never updated (the ones row a query of fewer factors reads);
``index`` (q, k) int64 rows of ``P``; ``target`` (q,) float32.

Arithmetic: float32 as torch's steps, in another order: each query's product summed
pairwise over the rows, the loss summed over the queries one after the other in float32
(as the code's loss is a float32 sum: the plateau rule reads a loss rounded as the
code's is; a float64 sum, tried first, stopped RAP-softmax's rounds earlier than the
code's), the softmax's exp from the C library; no fast-math, so the order is the source's whatever
the compiler vectorises (with reassociation allowed, a fit compiled afresh and the same
fit loaded from Numba's cache gave different answers). Adam is torch's
(``torch.optim.Adam``'s update with its defaults: betas (0.9, 0.999), eps 1e-8; the bias
corrections computed in float64). The results are within float32 rounding of the
torch steps, as carried by Adam (tests/methods/test_qr_step_speed.py states the
tolerances and checks that a fresh and a cached build give the same answers).

Numba compiles the loop at its first call in a process (a few seconds), or loads it from
its on-disk cache (``cache=True``: ``__pycache__`` beside this file, else Numba's user
cache), which ``make install`` fills ahead (:func:`warm`), so a clean clone's first fit
does not compile; the module is imported only by RAP's ``fit`` (planning commands import
no Numba).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

#: why :func:`descend` stopped, by the code it returns: the cap, the loss below the
#: tolerance, the plateau rule (``RAP._stop_texts`` words them)
STOP_CAP, STOP_TOL, STOP_PLATEAU = 0, 1, 2
STOP_REASONS = ("cap", "tol", "plateau")

#: no fast-math: every sum and product rounds in the order the source gives, so a fit's
#: numbers do not depend on how Numba vectorised it (with reassociation allowed, a fit
#: compiled afresh and the same fit loaded from Numba's cache gave different answers:
#: measured); the row sums are pairwise (:func:`_sum3`), which vectorises without
#: reordering; ``error_model="numpy"``: no zero-division check, so the loops with a
#: division vectorise too
_JIT = {"error_model": "numpy", "boundscheck": False, "cache": True, "nogil": True}


@numba.njit(**_JIT)
def tree_scratch(rows: int) -> NDArray:
    """The scratch :func:`_sum3` sums in: float32 zeros, a power of two >= ``rows`` (and
    >= 2) long."""
    size = 2
    while size < rows:
        size *= 2
    return np.zeros(size, dtype=np.float32)


@numba.njit(**_JIT)
def _sum3(a: NDArray, b: NDArray, c: NDArray, tree: NDArray) -> np.float32:
    """sum_r a[r] b[r] c[r], pairwise in a fixed order: the products into ``tree`` (zeros
    past them, a power of two long: :func:`tree_scratch`), then each half added onto the
    other until one entry is left."""
    for r in range(a.shape[0]):
        tree[r] = a[r] * b[r] * c[r]
    half = tree.shape[0] // 2
    while half >= 1:
        for r in range(half):
            tree[r] = tree[r] + tree[r + half]
        half //= 2
    return tree[0]


@numba.njit(**_JIT)
def _loss_and_grad(P: NDArray, index: NDArray, target: NDArray, G: NDArray,
                   prefix: NDArray, suffix: NDArray, ones: NDArray, tree: NDArray) -> float:
    """The squared-error loss of the queries ``index`` on ``P`` (summed in float32, as the
    code's torch loss, returned as a float64) and its gradient
    in ``G`` (zeroed first): per query, the prefix products of its factors (``prefix``,
    (k, B) scratch), the sum of the full product, then one pass per factor adding the
    coefficient -2 (target - answer) / B times the other factors' product and extending
    the suffix product (``suffix``, (B,) scratch; ``ones``: B ones; ``tree``:
    :func:`tree_scratch` of B)."""
    q, k = index.shape
    B = P.shape[1]
    inv = np.float32(1.0) / np.float32(B)
    G[:] = 0.0
    if k == 3:
        return _loss_and_grad_3(P, index, target, G, inv, tree)
    loss = np.float32(0.0)
    for j in range(q):
        last = P[index[j, k - 1]]
        if k == 1:
            s = _sum3(last, ones, ones, tree)
        else:
            prefix[1, :] = P[index[j, 0]]
            for p in range(2, k):
                row = P[index[j, p - 1]]
                for r in range(B):
                    prefix[p, r] = prefix[p - 1, r] * row[r]
            s = _sum3(prefix[k - 1], last, ones, tree)
        resid = target[j] - s * inv
        loss += resid * resid
        c = np.float32(-2.0) * resid * inv
        if k == 1:
            g = G[index[j, 0]]
            for r in range(B):
                g[r] += c
            continue
        g = G[index[j, k - 1]]                  # the last factor: coefficient x prefix
        for r in range(B):
            g[r] += c * prefix[k - 1, r]
            suffix[r] = c * last[r]
        for p in range(k - 2, 0, -1):           # middle factors: prefix x suffix
            g = G[index[j, p]]
            row = P[index[j, p]]
            for r in range(B):
                g[r] += prefix[p, r] * suffix[r]
                suffix[r] *= row[r]
        g = G[index[j, 0]]                      # the first: the suffix alone
        for r in range(B):
            g[r] += suffix[r]
    return np.float64(loss)


@numba.njit(**_JIT)
def _loss_and_grad_3(P: NDArray, index: NDArray, target: NDArray, G: NDArray,
                     inv: np.float32, tree: NDArray) -> float:
    """:func:`_loss_and_grad` for queries of 3 factors (3-way workloads): one pass for
    the product's sum, one per factor for its gradient (the forms Numba vectorises)."""
    loss = np.float32(0.0)
    B = P.shape[1]
    for j in range(index.shape[0]):
        i0, i1, i2 = index[j, 0], index[j, 1], index[j, 2]
        a, b, c = P[i0], P[i1], P[i2]
        s = _sum3(a, b, c, tree)
        resid = target[j] - s * inv
        loss += resid * resid
        coef = np.float32(-2.0) * resid * inv
        g = G[i0]
        for r in range(B):
            g[r] += coef * (b[r] * c[r])
        g = G[i1]
        for r in range(B):
            g[r] += coef * (a[r] * c[r])
        g = G[i2]
        for r in range(B):
            g[r] += coef * (a[r] * b[r])
    return np.float64(loss)


@numba.njit(**_JIT)
def _adam(P: NDArray, G: NDArray, m: NDArray, v: NDArray, rows: int, step: int,
          lr: float, clip: bool) -> None:
    """torch's Adam update (``torch.optim.Adam`` defaults) of the first ``rows`` rows of
    ``P`` with gradient ``G``, moments ``m``, ``v`` at step ``step`` (1-based); then the
    clip to [-1, 1] when ``clip``."""
    b1, b2 = np.float32(0.9), np.float32(0.999)
    bc1 = 1.0 - 0.9 ** step
    bc2_sqrt = np.float32(np.sqrt(1.0 - 0.999 ** step))
    step_size = np.float32(lr / bc1)
    eps = np.float32(1e-8)
    one = np.float32(1.0)
    B = P.shape[1]
    for i in range(rows):
        p, g, mi, vi = P[i], G[i], m[i], v[i]
        for r in range(B):
            gr = g[r]
            mr = mi[r] + (one - b1) * (gr - mi[r])        # torch's lerp
            vr = b2 * vi[r] + (one - b2) * gr * gr
            mi[r] = mr
            vi[r] = vr
            x = p[r] - step_size * mr / (np.sqrt(vr) / bc2_sqrt + eps)
            if clip:
                x = -one if x < -one else x
                x = one if x > one else x
            p[r] = x


@numba.njit(**_JIT)
def _block_softmax(L: NDArray, X: NDArray, starts: NDArray, top: NDArray,
                   total: NDArray) -> None:
    """X[i] = the softmax of logits ``L`` over each block of rows ``starts[b]`` ..
    ``starts[b + 1]``, column by column (torch's: exp(x - max) / sum); ``top``, ``total``
    (B,) scratch. X's rows after the blocks are left as they are (the ones row)."""
    B = L.shape[1]
    for b in range(starts.shape[0] - 1):
        lo, hi = starts[b], starts[b + 1]
        top[:] = L[lo]
        for i in range(lo + 1, hi):
            row = L[i]
            for r in range(B):
                top[r] = row[r] if row[r] > top[r] else top[r]
        total[:] = 0.0
        for i in range(lo, hi):
            row, x = L[i], X[i]
            for r in range(B):
                x[r] = np.exp(row[r] - top[r])
                total[r] += x[r]
        for i in range(lo, hi):
            x = X[i]
            for r in range(B):
                x[r] = x[r] / total[r]


@numba.njit(**_JIT)
def _block_softmax_grad(X: NDArray, GX: NDArray, starts: NDArray, GL: NDArray,
                        dot: NDArray) -> None:
    """The gradient ``GL`` of the logits from the gradient ``GX`` of their block softmax
    ``X`` (torch's softmax backward: x (g - sum over the block of x g)); ``dot`` (B,)
    scratch."""
    B = X.shape[1]
    for b in range(starts.shape[0] - 1):
        lo, hi = starts[b], starts[b + 1]
        dot[:] = 0.0
        for i in range(lo, hi):
            x, g = X[i], GX[i]
            for r in range(B):
                dot[r] += x[r] * g[r]
        for i in range(lo, hi):
            x, g, out = X[i], GX[i], GL[i]
            for r in range(B):
                out[r] = x[r] * (g[r] - dot[r])


@numba.njit(**_JIT)
def descend(P: NDArray, index: NDArray, target: NDArray, frozen: int, lr: float,
            max_iters: int, patience: int, clip: bool, loss_tol: float,
            improve_rel: float, starts: NDArray) -> tuple[int, int]:
    """Adam on ``P`` in place (module docstring) until the loss is below ``loss_tol``, it
    has not improved by a relative ``improve_rel`` on its best for more than ``patience``
    consecutive steps, or ``max_iters`` steps (``RAP._descend``'s rules, in its order:
    the rules read the loss before the step; ``rap.LOSS_TOL`` and ``rap.IMPROVE_REL`` are
    passed in). Returns (steps, stop code: :data:`STOP_REASONS` names it).

    ``starts`` empty: ``P`` holds the rows the queries read (RAP). Else (RAP-softmax)
    ``P`` holds logits, the queries read their block softmax (the blocks of rows
    ``starts[b]`` .. ``starts[b + 1]``) with a row of ones after it (``index`` = P's row
    count), and the gradient passes back through the softmax."""
    k = index.shape[1]
    B = P.shape[1]
    softmax = starts.shape[0] > 0
    GP = np.zeros_like(P)
    if softmax:
        X = np.ones((P.shape[0] + 1, B), dtype=P.dtype)
        GX = np.zeros_like(X)
    else:
        X, GX = P, GP
    m = np.zeros_like(P)
    v = np.zeros_like(P)
    prefix = np.empty((max(k, 2), B), dtype=P.dtype)
    scratch = np.empty((2, B), dtype=P.dtype)
    ones = np.ones(B, dtype=P.dtype)
    tree = tree_scratch(B)
    best, bad, step = np.inf, 0, 0
    rows = P.shape[0] - frozen
    while step < max_iters:
        step += 1
        if softmax:
            _block_softmax(P, X, starts, scratch[0], scratch[1])
        value = _loss_and_grad(X, index, target, GX, prefix, scratch[0], ones, tree)
        if value < loss_tol:
            return step, STOP_TOL
        if value < best * (1.0 - improve_rel):
            best, bad = value, 0
        else:
            bad += 1
        if bad > patience:
            return step, STOP_PLATEAU
        if softmax:
            _block_softmax_grad(X, GX, starts, GP, scratch[0])
        _adam(P, GP, m, v, rows, step, lr, clip)
    return step, STOP_CAP


def warm() -> None:
    """Compile :func:`descend` for the argument types RAP's ``fit`` passes (``RAP._loop``:
    float32 C-contiguous ``P`` and ``target``, int64 ``index`` and ``starts``, Python ints,
    floats and a bool) into Numba's on-disk cache, on a 2-row problem. ``make install``
    runs it (scripts/warm_caches.py), so a clean clone's first RAP fit loads the loop
    instead of compiling it inside the fit (6-7 CPU-s of a 7 CPU-s smoke fit, measured)."""
    P = np.zeros((3, 4), dtype=np.float32)
    index = np.array([[0, 1], [1, 2]], dtype=np.int64)
    target = np.zeros(2, dtype=np.float32)
    for frozen, clip, starts in ((1, True, []), (0, False, [0, 2])):
        descend(P.copy(), index, target, frozen, 1e-3, 2, 1, clip, 1e-9, 1e-4,
                np.asarray(starts, dtype=np.int64))
