"""Loader for the query-release paper's datasets (Liu, Vietri & Wu, NeurIPS 2021, Sec. 3,
App. F.1 and F.6): a projection of a discretised table, split into private and public rows
exactly as the authors split it.

- ADULT (13 attributes) and ADULT (reduced) (7) are projections of ``data/itdp_adult``
  (the authors' preprocessed Adult; its first CSV column is an unnamed row index, dropped
  because only domain attributes are read). The private / public split is the authors'
  fixed 90/10 one: ``np.random.RandomState(0).binomial(1, 0.9, size=rows)``, 1 = private,
  over the rows in file order (43,944 private, 4,869 public). It ignores the trial's
  generator, so every trial and method sees the same split (``split: {private_frac: 0.9,
  seed: 0}``).
- ADULT* is ``data/adult_pgm`` (the authors' ``adult_orig``), 14 attributes, every row
  private and no public part (``split`` absent).
- ACS and LOANS are extracts that cannot be shipped (IPUMS terms; LOANS' file is missing
  from every public copy): with ``extract`` set, the files are read from
  ``data/<dataset_dir>`` (e.g. ``data/cache/itdp_acs/``), their sha256 pinned on first use,
  and a missing file is a one-line error naming the extract and where it goes.
  ``rows_where`` keeps the rows of one state (``{STATE: PA}``); ``public`` names another
  file of the same domain for the public rows (PA-10, CA-18, OH-18).

``Split.train`` holds the private rows (and the public ones as ``train.public``, for
public-data-assisted methods), ``Split.test`` the public ones (zero rows when there are
none). Both have the discrete frame and domain in the projection's attribute order,
which fixes the order of every workload built over them; the encoded X / y use the ``raw``
scheme (integer codes) with ``target`` as label (query release itself has no target).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpbench.data.base import Split, TabularData
from dpbench.data.discrete import check_codes, read_discrete
from dpbench.data.encoding import build_encoding, feature_bound
from dpbench.data.files import DataError, MissingDownload, data_root, read_bytes
from dpbench.data.prepared import check_pinned
from dpbench.data.workloads import distinct

if TYPE_CHECKING:
    import pandas as pd


def _read_extract(base: Path, file: str, domain_file: str,
                  extract: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """A user-supplied extract and its domain from ``base`` (pinned, then parsed)."""
    import pandas as pd

    missing = [f for f in (file, domain_file) if not (base / f).exists()]
    if missing:
        raise MissingDownload(f"{extract}; put {' and '.join(missing)} in {base}/")
    for f in (file, domain_file):
        check_pinned(base / f)
    try:
        domain = json.loads(read_bytes(base / domain_file))
        frame = pd.read_csv(io.BytesIO(read_bytes(base / file)))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataError(f"{base / file} or its domain {domain_file} is malformed "
                        f"({str(exc).splitlines()[0]})") from None
    if not isinstance(domain, dict):
        raise DataError(f"{base / domain_file} must map attribute -> number of levels")
    return frame, {a: int(m) for a, m in domain.items()}


def _where(frame: pd.DataFrame, rows_where: Mapping[str, Any] | None, what: str) -> pd.DataFrame:
    """The rows whose columns equal the given values (all rows if ``rows_where`` is None)."""
    if not rows_where:
        return frame
    keep = np.ones(len(frame), dtype=bool)
    for col, value in rows_where.items():
        if col not in frame.columns:
            raise DataError(f"{what} has no column {col!r} to select rows by")
        keep &= (frame[col] == value).to_numpy()
    if not keep.any():
        raise DataError(f"{what} has no rows with {dict(rows_where)}")
    return frame[keep].reset_index(drop=True)


def _project(domain: Mapping[str, int], attributes: Sequence[str]) -> dict[str, int]:
    attrs = list(attributes)
    unknown = [a for a in attrs if a not in domain]
    if unknown:
        raise ValueError(f"attributes {unknown} are not in the data; valid: {', '.join(domain)}")
    attrs = distinct(attrs)
    return {a: int(domain[a]) for a in attrs}


def private_mask(n: int, private_frac: float, seed: int) -> np.ndarray:
    """The authors' fixed split: ``RandomState(seed).binomial(1, private_frac, size=n)``,
    True = private (iterative-dp ``randomKway`` with ``adult_seed``)."""
    if not 0 < private_frac < 1:
        raise ValueError(f"private_frac={private_frac!r} must lie in (0, 1)")
    return np.random.RandomState(int(seed)).binomial(1, private_frac, size=n).astype(bool)


def load_query_data(*, rng: np.random.Generator, dataset_dir: str, file: str, domain_file: str,
                    attributes: Sequence[str], target: str,
                    split: Mapping[str, Any] | None = None,
                    rows_where: Mapping[str, Any] | None = None,
                    public: Mapping[str, Any] | None = None,
                    extract: str | None = None) -> Split:
    """Private (train) and public (test) rows of a query-release dataset (module docstring).

    ``attributes``: the projection, in the authors' order; ``target``: one of them, the label
    of the raw encoding. ``split``: ``{private_frac, seed}`` for a fixed random split of the
    same rows; ``public``: ``{file, rows_where}`` for public rows from another file;
    neither = no public rows. ``extract``: None for vendored files (checksummed by their
    MANIFEST.json), else the one-line description of the extract a user must supply.
    ``rng`` is not used: the split is fixed by the paper, the same in every trial.
    """
    del rng
    if split is not None and public is not None:
        raise ValueError("give split (a random private/public split) or public (another "
                         "file), not both")
    if extract is None:
        frame, full = read_discrete(dataset_dir, file, domain_file)
    else:
        base = data_root() / dataset_dir
        raw, full = _read_extract(base, file, domain_file, extract)
        frame = check_codes(_where(raw, rows_where, str(base / file)), full,
                            str(base / file))
        rows_where = None
    domain = _project(full, attributes)
    if target not in domain:
        raise ValueError(f"target {target!r} is not among the attributes {list(domain)}")
    frame = _where(frame, rows_where, f"{dataset_dir}/{file}")[list(domain)]
    enc = build_encoding(domain, target, (), None, "raw")
    xb = feature_bound(enc)
    yb = float(np.max(np.abs(enc.target_values)))

    def part(rows: pd.DataFrame, public: pd.DataFrame | None = None) -> TabularData:
        rows = rows.reset_index(drop=True)
        X, y = enc.encode(rows)
        pub = None if public is None or len(public) == 0 else public.reset_index(drop=True)
        return TabularData(X=X, y=y, x_bound=xb, y_bound=yb, feature_names=enc.columns,
                           target=target, discrete=rows, domain=domain, encoding=enc,
                           public=pub)

    if split is not None:
        unknown = sorted(set(split) - {"private_frac", "seed"})
        if unknown:
            raise ValueError(f"split has unknown key {unknown[0]!r}; valid: private_frac, seed")
        mask = private_mask(len(frame), float(split.get("private_frac", 0.9)),
                            int(split.get("seed", 0)))
        return Split(train=part(frame[mask], frame[~mask]), test=part(frame[~mask]))
    if public is not None:
        unknown = sorted(set(public) - {"file", "rows_where"})
        if unknown:
            raise ValueError(f"public has unknown key {unknown[0]!r}; valid: file, rows_where")
        pub = load_query_data(rng=None, dataset_dir=dataset_dir, file=public["file"],  # type: ignore[arg-type]
                              domain_file=domain_file, attributes=attributes, target=target,
                              rows_where=public.get("rows_where"), extract=extract)
        return Split(train=part(frame, pub.train.discrete), test=pub.train)
    return Split(train=part(frame), test=part(frame.iloc[:0]))
