"""Small discrete datasets for the marginal-mechanism tests (fast to fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpbench.data.base import TabularData
from dpbench.data.encoding import build_encoding, feature_bound


def discrete_data(rng: np.random.Generator, n: int, domain: dict[str, int], target: str,
                  categorical: tuple[str, ...] = (), target_kind: str = "numeric"
                  ) -> TabularData:
    """Correlated integer codes: each attribute depends on the previous one, plus noise."""
    cols: dict[str, np.ndarray] = {}
    prev = None
    for a, m in domain.items():
        fresh = rng.integers(0, m, n)
        if prev is None:
            cols[a] = fresh
        else:
            follow = rng.random(n) < 0.6
            cols[a] = np.where(follow, prev % m, fresh)
        prev = cols[a]
    frame = pd.DataFrame({a: v.astype(np.int64) for a, v in cols.items()})
    return tabular(frame, domain, target, categorical, target_kind)


def tabular(frame: pd.DataFrame, domain: dict[str, int], target: str,
            categorical: tuple[str, ...] = (), target_kind: str = "numeric") -> TabularData:
    enc = build_encoding(domain, target, list(categorical), target_kind)
    X, y = enc.encode(frame)
    return TabularData(X=X, y=y, x_bound=feature_bound(enc),
                       y_bound=float(np.max(np.abs(enc.target_values))),
                       feature_names=enc.columns, target=target, discrete=frame,
                       domain=domain, encoding=enc)


def mrf_joint(attrs: list[str], sizes: dict[str, int], cliques: list[tuple[str, ...]],
              tables: list[np.ndarray], total: float) -> np.ndarray:
    """The explicit joint (counts summing to ``total``) of the MRF sum_c tables[c]."""
    logp = np.zeros([sizes[a] for a in attrs])
    for cl, t in zip(cliques, tables, strict=True):
        shape = [sizes[a] if a in cl else 1 for a in attrs]
        order = [a for a in attrs if a in cl]
        logp = logp + np.transpose(t, [cl.index(a) for a in order]).reshape(shape)
    p = np.exp(logp - logp[np.isfinite(logp)].max())
    return p * total / p.sum()


def brute_marginal(p: np.ndarray, attrs: list[str], query: tuple[str, ...]) -> np.ndarray:
    """``query``'s marginal (axes in query order) by summing the explicit joint ``p``."""
    axes = tuple(i for i, a in enumerate(attrs) if a not in query)
    kept = [a for a in attrs if a in query]
    return np.transpose(p.sum(axis=axes), [kept.index(a) for a in query])


#: a small domain for estimation tests (mirror descent, marginal oracles)
MD_ATTRS = ("a", "b", "c", "d", "e")
MD_SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 5}


def noisy_measurements(seed: int, cliques: list[tuple[str, ...]],
                       n: int = 500) -> tuple[object, list]:
    """(mbi domain over MD_ATTRS, Gaussian measurements of ``cliques``' marginals) of ``n``
    random records with some dependence of b on a; each clique's sigma is drawn from
    U(2, 20) (seeded)."""
    from dpbench.methods.marginals import _mbi

    rng = np.random.default_rng(seed)
    codes = {a: rng.integers(MD_SIZES[a], size=n) for a in MD_ATTRS}
    codes["b"] = (codes["a"] + rng.integers(2, size=n)) % MD_SIZES["b"]   # some dependence
    measurements = []
    for cl in cliques:
        counts = np.zeros([MD_SIZES[a] for a in cl])
        np.add.at(counts, tuple(codes[a] for a in cl), 1.0)
        sigma = float(rng.uniform(2.0, 20.0))
        measurements.append(_mbi.measurement(counts.ravel() + rng.normal(0, sigma, counts.size),
                                             cl, sigma))
    return _mbi.to_domain(MD_ATTRS, MD_SIZES), measurements
