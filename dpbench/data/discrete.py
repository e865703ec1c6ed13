"""Loader for vendored discretised tables (integer codes + a domain json).

This is the format of the DD-SSP and private-pgm datasets: a CSV of level
indices 0..m_j-1 and ``<name>-domain.json`` mapping attribute -> m_j.
"""

from __future__ import annotations

import functools
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpbench.data.base import Split, TabularData
from dpbench.data.encoding import build_encoding, feature_bound
from dpbench.data.files import DataError, read_bytes, verified_path
from dpbench.data.splits import shuffle_split

if TYPE_CHECKING:
    import pandas as pd


def read_discrete(dataset_dir: str, file: str, domain_file: str) -> tuple[pd.DataFrame, dict]:
    """Checksum-verified table and domain; validates codes against the domain. The files
    are checked on every call (under the data root of the moment) and parsed once per
    version (path, size, modification time), so a file changed or a root switched after a
    first read is never served from memory."""
    domain_path = verified_path(dataset_dir, domain_file)
    path = verified_path(dataset_dir, file)
    return _read_discrete(str(domain_path), str(path), _version(domain_path), _version(path))


def _version(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=16)
def _read_discrete(domain_file: str, file: str, *versions: tuple[int, int]
                   ) -> tuple[pd.DataFrame, dict]:
    import pandas as pd

    del versions                       # the cache key: a changed file is read again
    domain = json.loads(read_bytes(Path(domain_file)))
    path = Path(file)
    try:
        frame = pd.read_csv(io.BytesIO(read_bytes(path)))
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not a valid CSV ({str(exc).splitlines()[0]})") from None
    return check_codes(frame, domain, str(path)), {a: int(m) for a, m in domain.items()}


def check_codes(frame: pd.DataFrame, domain: dict, where: str) -> pd.DataFrame:
    """The domain's columns of ``frame`` as int64 codes, after checking that every one is
    present and holds integer codes in [0, m) (one-line DataError naming ``where``)."""
    import pandas as pd

    missing = [a for a in domain if a not in frame.columns]
    if missing:
        raise DataError(f"{where} lacks domain attributes {missing}; "
                        f"columns: {list(frame.columns)}")
    frame = frame[list(domain)]
    for a, m in domain.items():
        col = frame[a]
        if not pd.api.types.is_integer_dtype(col) or col.min() < 0 or col.max() >= m:
            raise DataError(f"{where}: column {a!r} must hold integer codes in [0, {m}), "
                            f"found {col.dtype} in [{col.min()}, {col.max()}]")
    return frame.astype(np.int64)


PROTOCOLS = ("holdout", "paper")


def holdout_rows(n: int, test_frac: float) -> int:
    """Test rows of a fractional split: ceil(test_frac * n), scikit-learn's
    train_test_split rule (so a task's re-splits and ours hold out the same counts)."""
    if not 0 < test_frac < 1:
        raise ValueError(f"test fraction {test_frac!r} must lie in (0, 1)")
    return int(math.ceil(test_frac * n))


def load_discrete(*, rng: np.random.Generator, dataset_dir: str, file: str | Sequence[str],
                  domain_file: str,
                  target: str, categorical: Sequence[str] = (), target_kind: str | None = None,
                  drop: Sequence[str] = (), n_test: int | None = None,
                  test_frac: float | None = None, n_train_max: int | None = 50_000,
                  scheme: str = "ddssp", protocol: str = "holdout", resplits: int = 10,
                  resplit_test_frac: float = 0.2, n_public: int = 0) -> Split:
    """Split a discretised table and encode it (``scheme``: dpbench/data/encoding.py).

    ``drop`` removes attributes before anything else (e.g. the ``education`` column that
    duplicates the ``education-num`` target in Adult). ``file`` may list several files of
    one domain (e.g. a repository's train and test parts), stacked in the given order.

    ``protocol``: ``holdout`` shuffle-splits off ``n_test`` rows (default 1,000) or a
    ``test_frac`` share (not both), then caps train at ``n_train_max``. ``paper`` is the
    excess-risk paper's protocol: train = test = every row (in file order; the holdout
    settings do not apply), with ``Split.resplits`` = ``resplits`` random re-splits of
    ``resplit_test_frac`` test rows for the task to score on (see ``Split``).
    ``target_kind`` None = the scheme's default. ``n_public`` (holdout only) sets that many
    random training rows aside as public rows (``train.public``, outside the protected
    training rows: a public-data-assisted method reads them for free).
    """
    import pandas as pd

    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} unknown; valid: {', '.join(PROTOCOLS)}")
    files = [file] if isinstance(file, str) else list(file)
    parts = [read_discrete(dataset_dir, f, domain_file) for f in files]
    frame, domain = pd.concat([p[0] for p in parts], ignore_index=True), parts[0][1]
    return split_coded(frame, domain, rng=rng, where=dataset_dir, target=target,
                       categorical=categorical, target_kind=target_kind, drop=drop,
                       n_test=n_test, test_frac=test_frac, n_train_max=n_train_max,
                       scheme=scheme, protocol=protocol, resplits=resplits,
                       resplit_test_frac=resplit_test_frac, n_public=n_public)


def split_coded(frame: pd.DataFrame, domain: dict[str, int], *, rng: np.random.Generator,
                where: str, target: str, categorical: Sequence[str] = (),
                target_kind: str | None = None, drop: Sequence[str] = (),
                n_test: int | None = None, test_frac: float | None = None,
                n_train_max: int | None = 50_000, scheme: str = "ddssp",
                protocol: str = "holdout", resplits: int = 10,
                resplit_test_frac: float = 0.2, n_public: int = 0) -> Split:
    """:func:`load_discrete` on a table already read and checked: ``frame`` holds integer
    codes of ``domain`` (e.g. :func:`check_codes`), ``where`` names it in errors; the other
    parameters are :func:`load_discrete`'s."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} unknown; valid: {', '.join(PROTOCOLS)}")
    if target not in domain:
        raise ValueError(f"target {target!r} not in {where}; valid: {', '.join(domain)}")
    bad = [a for a in drop if a not in domain or a == target]
    if bad:
        raise ValueError(f"cannot drop {bad}; valid: {', '.join(a for a in domain if a != target)}")
    domain = {a: m for a, m in domain.items() if a not in set(drop)}
    frame = frame[list(domain)]
    categorical = [c for c in categorical if c in domain]
    enc = build_encoding(domain, target, categorical, target_kind, scheme)
    xb = feature_bound(enc)
    yb = float(np.max(np.abs(enc.target_values)))

    def part(idx: np.ndarray, public: np.ndarray | None = None) -> TabularData:
        sub = frame.iloc[idx].reset_index(drop=True)
        X, y = enc.encode(sub)
        pub = None if public is None else frame.iloc[public].reset_index(drop=True)
        return TabularData(X=X, y=y, x_bound=xb, y_bound=yb, feature_names=enc.columns,
                           target=target, discrete=sub, domain=domain, encoding=enc,
                           public=pub)

    if not (isinstance(n_public, int | np.integer) and n_public >= 0):
        raise ValueError(f"n_public={n_public!r} must be an integer >= 0")
    if protocol == "paper":
        if n_public:
            raise ValueError(f"n_public={n_public} needs protocol holdout (under protocol "
                             "paper every row is both train and test)")
        if int(resplits) < 1:
            raise ValueError(f"resplits={resplits!r} must be >= 1 under protocol paper")
        holdout_rows(len(frame), resplit_test_frac)       # validates the fraction
        every = part(np.arange(len(frame)))
        return Split(train=every, test=every, resplits=int(resplits),
                     resplit_test_frac=float(resplit_test_frac),
                     resplit_seed=int(rng.integers(2**63)))
    if n_test is not None and test_frac is not None:
        raise ValueError(f"give n_test ({n_test}) or test_frac ({test_frac}), not both")
    if test_frac is not None:
        n_test = holdout_rows(len(frame), test_frac)
    train_idx, test_idx = shuffle_split(len(frame), 1000 if n_test is None else n_test,
                                        n_train_max, rng)
    if not n_public:
        return Split(train=part(train_idx), test=part(test_idx))
    if n_public >= len(train_idx):
        raise ValueError(f"n_public={n_public} leaves no training rows; valid: n_public < "
                         f"{len(train_idx)}")
    pick = rng.permutation(len(train_idx))
    public_idx, train_idx = np.sort(train_idx[pick[:n_public]]), np.sort(train_idx[pick[n_public:]])
    return Split(train=part(train_idx, public_idx), test=part(test_idx))
