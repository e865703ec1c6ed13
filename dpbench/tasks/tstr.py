"""Train on synthetic, test on real (TSTR): a logistic regression per target, and marginals.

The method's output is a :class:`SyntheticTable` whose ``records`` hold every attribute's
integer codes. For each target (the data's own, then ``targets``) the synthetic records and
the real rows are encoded with the data's encoding scheme for that target
(``dpbench.data.encoding.retarget``), and scikit-learn's default logistic regression
(``dpbench.estimators``) is fitted on synthetic rows and scored
on real test rows. The same model fitted on the real training rows of the same split is the
non-private reference ("Real"), so ``excess_risk`` = risk(synthetic) - risk(real) is paired.

Splits: with ``split.resplits = R > 0`` (a protocol where the generator saw every row) the
real rows are re-split R times (seeded by ``split.resplit_seed``: the same re-splits for
every method and eps of a trial, new ones in each trial) and the synthetic model trains on
a random ``1 - resplit_test_frac``
share of the synthetic rows; with R = 0 it trains on every synthetic row and the real split
is ``train``/``test`` as given. Metrics are means over the splits.

Metrics, target t (the data's own target unsuffixed, the others suffixed ``_<t>``):
``accuracy``, ``roc_auc`` (binary targets), ``risk`` (mean cross-entropy on the real test
rows), their ``real_`` references and ``excess_risk``. With ``workload`` set (e.g.
``all_4way`` with ``max_cells``), ``l1_norm`` = mean over the workload's marginals of
||p_real - p_syn||_1 (normalised counts; real = the rows the generator was given) and
``tv`` = half of it (total variation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import Split
from dpbench.data.encoding import retarget
from dpbench.data.marginals import data_marginal
from dpbench.data.workloads import build_workload
from dpbench.estimators import default_logistic
from dpbench.methods.outputs import SyntheticTable

discrete = lazy.module("dpbench.data.discrete")  # pandas: only where rows are split

if TYPE_CHECKING:
    import pandas as pd  # annotations only: scoring imports it with the data

PROB_CLIP = 1e-15           # log-loss of a probability 0 or 1 (scikit-learn's convention)


def evaluate(output: SyntheticTable, split: Split, targets: Sequence[str] = (),
             workload: str | None = None, max_cells: float | None = None) -> dict[str, float]:
    """TSTR metrics of ``output``'s synthetic records on ``split`` (module docstring)."""
    if output.records is None:
        raise ValueError("the tstr task needs synthetic records with every attribute's codes "
                         "(a generator that keeps them, e.g. a marginal-based one)")
    check(split, targets, workload, max_cells)
    real = split.train
    domain = dict(real.domain)
    main = real.encoding.target
    syn = output.records[list(domain)]
    out: dict[str, float] = {"n_synthetic": float(len(syn))}
    for t in dict.fromkeys([main, *targets]):
        scores = _target_scores(syn, split, t)
        suffix = "" if t == main else f"_{t}"
        out.update({f"{k}{suffix}": v for k, v in scores.items()})
    if workload is not None:
        out.update(marginal_errors(real.discrete, syn, domain, workload, max_cells))
    return out


def check(split: Split, targets: Sequence[str] = (), workload: str | None = None,
          max_cells: float | None = None) -> None:
    """One-line ValueError unless the data are discrete, every target is an attribute and
    the workload keeps at least one marginal (the runner calls this before any trial)."""
    real = split.train
    if real.discrete is None or real.encoding is None or real.domain is None:
        raise ValueError("the tstr task needs discrete real data (a dataset that provides "
                         "`discrete`)")
    unknown = [t for t in targets if t not in real.domain]
    if unknown:
        raise ValueError(f"tstr targets {unknown} are not attributes of the data; "
                         f"valid: {', '.join(real.domain)}")
    if workload is not None:
        build_workload(workload, list(real.domain), domain=dict(real.domain),
                       max_cells=None if max_cells is None else int(max_cells))


def _target_scores(syn: pd.DataFrame, split: Split, target: str) -> dict[str, float]:
    enc = retarget(split.train.encoding, split.train.domain, target)
    Xs, ys = enc.encode(syn)
    rows: list[dict[str, float]] = []
    for real_tr, real_te, keep in _splits(split, len(syn)):
        Xtr, ytr = enc.encode(real_tr)
        Xte, yte = enc.encode(real_te)
        ref = _real_scores(_fingerprint(Xtr, ytr, Xte, yte), Xtr, ytr, Xte, yte)
        ours = _scores(*_fit(Xs[keep], ys[keep]), Xte, yte)
        row = {**ours, **{f"real_{k}": v for k, v in ref.items()}}
        row["excess_risk"] = row["risk"] - row["real_risk"]
        rows.append(row)
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def _splits(split: Split, n_syn: int):
    """(real train rows, real test rows, synthetic rows to train on) per evaluation split."""
    if split.resplits == 0:
        yield split.train.discrete, split.test.discrete, slice(None)
        return
    pool = split.train.discrete
    n, frac = len(pool), split.resplit_test_frac
    n_test = discrete.holdout_rows(n, frac)
    n_keep = max(1, n_syn - discrete.holdout_rows(n_syn, frac)) if n_syn > 1 else n_syn
    for r in range(split.resplits):
        perm = np.random.default_rng([split.resplit_seed, r, 0]).permutation(n)
        keep = np.random.default_rng([split.resplit_seed, r, 1]).permutation(n_syn)[:n_keep]
        yield (pool.iloc[np.sort(perm[n_test:])], pool.iloc[np.sort(perm[:n_test])],
               np.sort(keep))


def _fit(X: NDArray, y: NDArray):
    """(classes, model or None): scikit-learn's default logistic regression, or the
    constant class share when the training labels hold one class only."""
    classes = np.unique(y)
    if classes.size < 2:
        return classes, None
    return classes, default_logistic(X, y)


def _scores(classes: NDArray, model, X: NDArray, y: NDArray) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    labels = np.unique(y)
    if model is None:                         # one class: predict it with probability 1
        proba = np.zeros((y.size, labels.size))
        proba[:, np.searchsorted(labels, classes[0])] = 1.0 if classes[0] in labels else 0.0
        pred = np.full(y.size, classes[0])
    else:
        p = model.predict_proba(X)
        proba = np.zeros((y.size, labels.size))
        for j, c in enumerate(model.classes_):
            if c in labels:
                proba[:, np.searchsorted(labels, c)] = p[:, j]
        pred = model.classes_[np.argmax(p, axis=1)]
    truth = np.clip(proba[np.arange(y.size), np.searchsorted(labels, y)], PROB_CLIP, 1.0)
    out = {"accuracy": float(np.mean(pred == y)), "risk": float(-np.mean(np.log(truth)))}
    if labels.size == 2:
        out["roc_auc"] = float(roc_auc_score(y == labels[1], proba[:, 1]))
    return out


def _fingerprint(*arrays: NDArray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=float).tobytes())
        h.update(repr(a.shape).encode())
    return h.hexdigest()


_REAL: dict[str, dict[str, float]] = {}
_REAL_CAP = 512


def _real_scores(key: str, Xtr: NDArray, ytr: NDArray, Xte: NDArray, yte: NDArray
                 ) -> dict[str, float]:
    """The real-data reference of one split, computed once per process (it is the same
    for every method, eps and trial of a split)."""
    if key not in _REAL:
        if len(_REAL) >= _REAL_CAP:
            _REAL.clear()
        _REAL[key] = _scores(*_fit(Xtr, ytr), Xte, yte)
    return _REAL[key]


def marginal_errors(real: pd.DataFrame, syn: pd.DataFrame, domain: dict[str, int],
                    workload: str, max_cells: float | None) -> dict[str, float]:
    """``l1_norm`` and ``tv``: mean L1 / total-variation distance between the normalised
    real and synthetic marginals over the workload."""
    cliques = build_workload(workload, list(domain), domain=domain,
                             max_cells=None if max_cells is None else int(max_cells))
    rc = {a: real[a].to_numpy(dtype=np.int64) for a in domain}
    sc = {a: syn[a].to_numpy(dtype=np.int64) for a in domain}
    l1 = [float(np.abs(data_marginal(rc, c, domain) / len(real)
                       - data_marginal(sc, c, domain) / max(1, len(syn))).sum())
          for c in cliques]
    return {"l1_norm": float(np.mean(l1)), "tv": float(np.mean(l1) / 2)}


__all__ = ["check", "evaluate", "marginal_errors"]
