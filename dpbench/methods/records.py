"""Synthetic records drawn from a released distribution: post-processing shared by the
generators that hold a distribution rather than rows (MWEM / PEP's histogram, GEM / RAP's
relaxed rows, the baselines' product distributions).

Every function here reads only a release (never private rows) and randomness of its own:
:func:`post_seed` derives it from the fit's generator without advancing that generator, so
a fit's noise, and every answer it releases, are the same whether or not records are drawn,
and the records are independent of the noise (reusing the noise's own stream would let the
records reveal it). A method stores the seed as fitted state and draws from a fresh
generator on each call, so ``output(SyntheticTable)`` returns the same records every time.

- :func:`sample_histogram`: n i.i.d. records from a distribution over the full domain;
- :func:`sample_blocks`: n records from relaxed rows (one block per attribute, domain
  order): record i takes one row (a random permutation of the rows, repeated as needed: each
  row serves floor or ceil of n / B records) and draws each attribute from that row's
  block, clipped at 0 and normalised (a block with no positive mass is uniform);
- :func:`synthetic_table`: the records as a :class:`SyntheticTable` in the data's encoding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Encoding
from dpbench.methods.outputs import SyntheticTable

if TYPE_CHECKING:
    import pandas as pd


def post_seed(rng: np.random.Generator) -> np.random.SeedSequence:
    """A seed for post-processing, spawned from ``rng``'s seed sequence: ``rng``'s state is
    not advanced (its later draws are unchanged) and the child stream is independent of it
    (numpy's SeedSequence spawning). A generator without a seed sequence gives a seed drawn
    from it instead (call this after the fit's last noise draw)."""
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if isinstance(seq, np.random.SeedSequence):
        return seq.spawn(1)[0]
    return np.random.SeedSequence(int(rng.integers(2**63)))  # not privacy noise: a seed


def codes_frame(codes: NDArray, attributes: Sequence[str]) -> pd.DataFrame:
    """(n, k) integer codes as a data frame with the domain's columns in order."""
    import pandas as pd  # here: planning commands import the method classes, not pandas

    return pd.DataFrame(np.asarray(codes, dtype=np.int64).reshape(-1, len(attributes)),
                        columns=list(attributes))


def sample_histogram(dist: NDArray, attributes: Sequence[str], n: int,
                     seed: np.random.SeedSequence) -> pd.DataFrame:
    """``n`` i.i.d. records from ``dist`` (non-negative, shaped by the domain's sizes in
    the order of ``attributes``; normalised here)."""
    p = np.asarray(dist, dtype=float)
    flat = p.ravel() / p.sum()
    # not privacy noise: rows from a release
    cells = np.random.default_rng(seed).choice(flat.size, size=int(n), p=flat)
    return codes_frame(np.column_stack(np.unravel_index(cells, p.shape)), attributes)


def block_distributions(rows: NDArray, sizes: Sequence[int]) -> list[NDArray]:
    """Per attribute, the (B, m_j) block of ``rows`` clipped at 0 and normalised per row
    (uniform where a row's block has no positive mass)."""
    out = []
    for block in np.split(np.asarray(rows, dtype=float), np.cumsum(sizes)[:-1], axis=1):
        block = np.clip(block, 0.0, None)
        total = block.sum(axis=1, keepdims=True)
        out.append(np.where(total > 0, block / np.where(total > 0, total, 1.0),
                            1.0 / block.shape[1]))
    return out


def sample_blocks(rows: NDArray, attributes: Sequence[str], sizes: Sequence[int], n: int,
                  seed: np.random.SeedSequence) -> pd.DataFrame:
    """``n`` records from relaxed rows (B, sum m_j) (module docstring)."""
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    if rows.shape[1] != sum(sizes):
        raise ValueError(f"relaxed rows have {rows.shape[1]} columns; the domain has "
                         f"{sum(sizes)} levels")
    r = np.random.default_rng(seed)
    which = r.permutation(np.arange(int(n)) % rows.shape[0])  # not privacy noise: rows
    codes = []
    for p in block_distributions(rows, sizes):
        cdf = np.cumsum(p[which], axis=1)
        u = r.random(int(n)) * cdf[:, -1]  # not privacy noise: rows
        codes.append(np.minimum((cdf <= u[:, None]).sum(axis=1), p.shape[1] - 1))
    return codes_frame(np.column_stack(codes) if codes else np.zeros((int(n), 0)), attributes)


def product_rows(marginals: Mapping[str, NDArray]) -> NDArray:
    """One relaxed row (1, sum m_j): the concatenated per-attribute distributions of a
    product distribution (for :func:`sample_blocks`)."""
    return np.concatenate([np.asarray(m, dtype=float) for m in marginals.values()])[None, :]


def synthetic_table(records: pd.DataFrame, encoding: Encoding | None,
                    who: str) -> SyntheticTable:
    """``records`` with (X, y) in ``encoding`` (one-line ValueError without one)."""
    if encoding is None:
        raise ValueError(f"{who}'s records were fitted on data without an encoding; there "
                         "is no (X, y) to give")
    X, y = encoding.encode(records)
    return SyntheticTable(np.asarray(X), np.asarray(y), records.copy())
