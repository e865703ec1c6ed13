"""RAP's round as one compiled loop (Numba): the closed-form gradient of the squared error
(:func:`~dpbench.methods.query_release.relaxed.squared_error_gradient`'s arithmetic),
torch's Adam update, the clip to [-1, 1] and the stopping rules of ``RAP._descend``, step
after step, with no Python between the steps.

Why: on ADULT's 1,000 relaxed rows a RAP step is a few memory passes over the measured
queries' factors, and the torch steps spend most of it elsewhere: a kernel launch per
operation (~15 a step), torch's Adam, the gradient's ``index_add`` scatter, Python. Here
each query's factors are read once per step, its gradient added in the same pass, and
Adam is one vectorised pass over the optimised columns (the speed is in docs/speed.md).

Layout: ``P`` (C, B) float32, C-contiguous, the optimised columns of the relaxed rows
transposed (``relaxed.ActiveColumns.param``: one row per column, B = n' values), whose
last ``frozen`` rows are never updated (the ones row a query of fewer factors reads);
``index`` (q, k) int64 rows of ``P``; ``target`` (q,) float32.

Arithmetic: float32 as torch's steps, summed in another order: each query's product
summed over the rows in Numba's vectorised order; the loss summed over the queries in
float64 (torch's is a float32 sum), so the plateau rule reads a loss without float32's
rounding of the sum. Adam is torch's (``torch.optim.Adam`` with its defaults: betas
(0.9, 0.999), eps 1e-8, bias corrections in float64 as torch computes them). The
results are within float32 rounding of the torch steps (tests/methods/test_qr_step_speed.py
states the tolerances).

Numba compiles the loop at its first call in a process (a few seconds), or loads it from
its on-disk cache (``cache=True``: ``__pycache__`` beside this file, else Numba's user
cache); the module is imported only by RAP's ``fit`` (planning commands import no Numba).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from dpbench.methods.query_release.rap import STOP_CAP, STOP_PLATEAU, STOP_TOL

#: reassociation (vectorised sums) and no signed zeros; no approximate division or square
#: root, no fused multiply-adds (contraction): the products and Adam round as written
_JIT = {"fastmath": {"reassoc", "nsz"}, "error_model": "numpy", "boundscheck": False,
        "cache": True, "nogil": True}


@numba.njit(**_JIT)
def _loss_and_grad(P: NDArray, index: NDArray, target: NDArray, G: NDArray,
                   prefix: NDArray, suffix: NDArray) -> float:
    """The squared-error loss of the queries ``index`` on ``P`` (float64) and its gradient
    in ``G`` (zeroed first): per query, the prefix products of its factors (``prefix``,
    (k, B) scratch), the sum of the full product, then one pass per factor adding the
    coefficient -2 (target - answer) / B times the other factors' product and extending
    the suffix product (``suffix``, (B,) scratch)."""
    q, k = index.shape
    B = P.shape[1]
    inv = np.float32(1.0) / np.float32(B)
    G[:] = 0.0
    if k == 3:
        return _loss_and_grad_3(P, index, target, G, inv)
    loss = 0.0
    for j in range(q):
        last = P[index[j, k - 1]]
        if k == 1:
            s = np.float32(0.0)
            for r in range(B):
                s += last[r]
        else:
            prefix[1, :] = P[index[j, 0]]
            for p in range(2, k):
                row = P[index[j, p - 1]]
                for r in range(B):
                    prefix[p, r] = prefix[p - 1, r] * row[r]
            s = np.float32(0.0)
            for r in range(B):
                s += prefix[k - 1, r] * last[r]
        resid = target[j] - s * inv
        loss += np.float64(resid) * np.float64(resid)
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
    return loss


@numba.njit(**_JIT)
def _loss_and_grad_3(P: NDArray, index: NDArray, target: NDArray, G: NDArray,
                     inv: np.float32) -> float:
    """:func:`_loss_and_grad` for queries of 3 factors (3-way workloads): one pass for
    the product's sum, one per factor for its gradient (the forms Numba vectorises)."""
    loss = 0.0
    B = P.shape[1]
    for j in range(index.shape[0]):
        i0, i1, i2 = index[j, 0], index[j, 1], index[j, 2]
        a, b, c = P[i0], P[i1], P[i2]
        s = np.float32(0.0)
        for r in range(B):
            s += a[r] * b[r] * c[r]
        resid = target[j] - s * inv
        loss += np.float64(resid) * np.float64(resid)
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
    return loss


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
def descend(P: NDArray, index: NDArray, target: NDArray, frozen: int, lr: float,
            max_iters: int, patience: int, clip: bool, loss_tol: float,
            improve_rel: float) -> tuple[int, int]:
    """Adam on ``P`` in place (module docstring) until the loss is below ``loss_tol``, it
    has not improved by a relative ``improve_rel`` on its best for more than ``patience``
    consecutive steps, or ``max_iters`` steps (``RAP._descend``'s rules, in its order:
    the rules read the loss before the step; ``rap.LOSS_TOL`` and ``rap.IMPROVE_REL`` are
    passed in). Returns (steps, ``rap.STOP_*`` code)."""
    k = index.shape[1]
    G = np.zeros_like(P)
    m = np.zeros_like(P)
    v = np.zeros_like(P)
    prefix = np.empty((max(k, 2), P.shape[1]), dtype=P.dtype)
    suffix = np.empty(P.shape[1], dtype=P.dtype)
    best, bad, step = np.inf, 0, 0
    rows = P.shape[0] - frozen
    while step < max_iters:
        step += 1
        value = _loss_and_grad(P, index, target, G, prefix, suffix)
        if value < loss_tol:
            return step, STOP_TOL
        if value < best * (1.0 - improve_rel):
            best, bad = value, 0
        else:
            bad += 1
        if bad > patience:
            return step, STOP_PLATEAU
        _adam(P, G, m, v, rows, step, lr, clip)
    return step, STOP_CAP
