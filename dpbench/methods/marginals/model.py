"""The released object of a marginal mechanism: a fitted distribution plus its privacy record.

A :class:`MarginalModel` is everything downstream methods (DD-SSP, AIM-Synth)
may use: it answers marginal queries on the *original* domain and samples
synthetic rows, and it carries the zCDP charges its mechanism made so every
consumer can be charged the same amount. It serialises to plain arrays + JSON
(no pickles), which is what the artifact cache stores.

Two model kinds:
- ``mrf``: a Markov random field given by log-potentials over cliques
  (Private-PGM), answered exactly through a calibrated junction tree;
- ``mixture``: a mixture of product distributions (per-attribute logits).

MST's domain compression is kept as a per-attribute map from original level to
model level; a merged ("rare") model level spreads its mass uniformly over its
original levels (the expectation of MST's random decompression).

junction.py (networkx, scipy; ~0.4 s) is imported where a model is queried or sampled,
not with this module, which the method classes import when planning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpbench import lazy
from dpbench.data.workloads import Clique

if TYPE_CHECKING:
    import pandas as pd

    from dpbench.methods.marginals.junction import CalibratedTree

junction = lazy.module("dpbench.methods.marginals.junction")  # networkx, scipy: when queried

Kind = Literal["mrf", "mixture"]


@dataclass(frozen=True)
class RhoCharge:
    """One zCDP release the mechanism made."""

    label: str
    rho: float


@dataclass
class MarginalModel:
    """A fitted distribution over ``attributes`` (original level codes)."""

    attributes: tuple[str, ...]
    sizes: dict[str, int]                       # original domain sizes
    kind: Kind
    total: float
    cliques: list[Clique] = field(default_factory=list)          # mrf
    tables: list[np.ndarray] = field(default_factory=list)       # mrf log-potentials
    logits: list[np.ndarray] = field(default_factory=list)       # mixture, per attribute
    compression: dict[str, np.ndarray] = field(default_factory=dict)  # attr -> model level
    charges: list[RhoCharge] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    # -- domain bookkeeping ------------------------------------------------------------------
    @cached_property
    def model_sizes(self) -> dict[str, int]:
        """Domain sizes the model is defined on (compressed where MST merged levels)."""
        out = dict(self.sizes)
        for a, m in self.compression.items():
            out[a] = int(m.max()) + 1
        return out

    @property
    def rho(self) -> float:
        return math.fsum(c.rho for c in self.charges)

    # -- queries -------------------------------------------------------------------------------
    @cached_property
    def _tree(self) -> CalibratedTree:
        return junction.CalibratedTree(self.model_sizes, self.attributes, self.cliques, self.tables,
                              self.total)

    @cached_property
    def _products(self) -> list[np.ndarray]:
        out = []
        for lg in self.logits:
            z = np.exp(lg - lg.max(axis=1, keepdims=True))
            out.append(z / z.sum(axis=1, keepdims=True))
        return out

    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        """Model counts over ``clique`` (axes in the given order), on the original domain."""
        clique = tuple(clique)
        return self._expand(clique, self._model_marginal(clique))

    def marginals(self, cliques: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        """Many marginals at once: pairs share one tree traversal per first attribute, other
        queries share their per-component parts (``CalibratedTree.marginals``)."""
        return dict(self.iter_marginals(cliques))

    def iter_marginals(self, cliques: Sequence[Sequence[str]]
                       ) -> Iterator[tuple[Clique, np.ndarray]]:
        """(clique, marginal) for every clique in order, as :meth:`marginals` computes them
        (the same values), one at a time: a caller that reads each once (AIM's scores) need
        not hold them all (~1 GB a round for the excess-risk paper's Adult 4-way
        candidates). Pairs outside every tree clique (small) are computed first, together."""
        queries = [tuple(cl) for cl in cliques]
        if self.kind != "mrf":
            yield from ((q, self.marginal(q)) for q in queries)
            return
        tree = self._tree
        by_first: dict[str, list[str]] = {}
        rest: list[Clique] = []
        for cl in queries:
            tree.check(cl)
            if len(cl) == 2 and tree.host(cl) is None:
                by_first.setdefault(cl[0], []).append(cl[1])
            else:
                rest.append(cl)
        pairs: dict[Clique, np.ndarray] = {}
        for a in sorted(by_first, key=self.attributes.index):
            for b, m in tree.pairs_from(a, by_first[a]).items():
                pairs[(a, b)] = m
        others = tree.iter_marginals(rest)
        for q in queries:
            m = pairs[q] if q in pairs else next(others)[1]
            yield q, self._expand(q, m)

    def _model_marginal(self, clique: Clique) -> np.ndarray:
        if self.kind == "mrf":
            return self._tree.marginal(clique)
        probs = [self._products[self.attributes.index(a)] for a in clique]
        k = probs[0].shape[0] if probs else 1
        letters = "bcdefghijklmnopqrstuvwxyz"[: len(clique)]
        spec = ",".join("a" + c for c in letters) + "->" + letters
        return np.einsum(spec, *probs) * self.total / k

    def _expand(self, clique: Clique, m: np.ndarray) -> np.ndarray:
        """Model-domain marginal -> original domain (uniform within merged levels)."""
        if not any(a in self.compression for a in clique):
            return m
        index, scale = [], []
        for a in clique:
            mp = self.compression.get(a)
            if mp is None:
                mp = np.arange(self.sizes[a])
            counts = np.bincount(mp, minlength=int(mp.max()) + 1)
            index.append(mp)
            scale.append(1.0 / counts[mp])
        out = m[np.ix_(*index)]
        for ax, s in enumerate(scale):
            shape = [1] * len(clique)
            shape[ax] = s.size
            out = out * s.reshape(shape)
        return out

    # -- synthetic data --------------------------------------------------------------------------
    def sample(self, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` synthetic records (original codes) drawn with the given generator."""
        rows = int(rows)
        if rows < 1:
            raise ValueError(f"rows={rows} must be >= 1")
        if self.kind == "mrf":
            codes = self._sample_mrf(rows, rng)
        else:
            codes = self._sample_mixture(rows, rng)
        for a, mp in self.compression.items():
            codes[a] = _decompress(codes[a], mp, rng)
        import pandas as pd  # here: planning commands import the method classes, not pandas

        return pd.DataFrame({a: codes[a].astype(np.int64) for a in self.attributes})

    def _sample_mrf(self, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Private-PGM's randomised-rounding sampler, in numpy (junction.sample_rounded)."""
        return junction.sample_rounded(self._tree, rows, rng)

    def _sample_mixture(self, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Mixture sampling by per-component randomised rounding (as mbi's MixtureOfProducts
        does), but drawn from the given generator."""
        k = self._products[0].shape[0]
        per = rows // k + 1
        blocks = {a: [] for a in self.attributes}
        for comp in range(k):
            for a, probs in zip(self.attributes, self._products, strict=True):
                # not privacy noise: rows
                blocks[a].append(rng.permutation(junction.round_counts(probs[comp], per, rng)))
        keep = rng.permutation(per * k)[:rows]  # not privacy noise: rows
        return {a: np.concatenate(blocks[a])[keep] for a in self.attributes}

    # -- serialisation ----------------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, JSON-able metadata) that :meth:`from_arrays` turns back into the model."""
        arrays: dict[str, np.ndarray] = {}
        for i, t in enumerate(self.tables):
            arrays[f"table_{i}"] = t
        for i, lg in enumerate(self.logits):
            arrays[f"logits_{i}"] = lg
        for a, mp in self.compression.items():
            arrays[f"compress_{self.attributes.index(a)}"] = mp
        meta = {
            "attributes": list(self.attributes), "sizes": self.sizes, "kind": self.kind,
            "total": self.total, "cliques": [list(c) for c in self.cliques],
            "n_logits": len(self.logits), "charges": [[c.label, c.rho] for c in self.charges],
            "info": self.info,
        }
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
                    ) -> MarginalModel:
        attrs = tuple(meta["attributes"])
        cliques = [tuple(c) for c in meta["cliques"]]
        compression = {a: np.asarray(arrays[f"compress_{i}"]) for i, a in enumerate(attrs)
                       if f"compress_{i}" in arrays}
        return cls(
            attributes=attrs, sizes={a: int(meta["sizes"][a]) for a in attrs},
            kind=meta["kind"], total=float(meta["total"]), cliques=cliques,
            tables=[np.asarray(arrays[f"table_{i}"]) for i in range(len(cliques))],
            logits=[np.asarray(arrays[f"logits_{i}"]) for i in range(int(meta["n_logits"]))],
            compression=compression,
            charges=[RhoCharge(str(lbl), float(r)) for lbl, r in meta["charges"]],
            info=json.loads(json.dumps(meta.get("info", {}))),
        )


def _decompress(values: np.ndarray, mapping: np.ndarray, rng: np.random.Generator
                ) -> np.ndarray:
    """Model levels -> original levels; a merged level becomes one of its members uniformly."""
    out = np.empty(values.shape, dtype=np.int64)
    for level in range(int(mapping.max()) + 1):
        members = np.flatnonzero(mapping == level)
        mask = values == level
        if members.size == 1:
            out[mask] = members[0]
        elif mask.any():
            # not privacy noise: rows
            out[mask] = members[rng.integers(members.size, size=int(mask.sum()))]
    return out
