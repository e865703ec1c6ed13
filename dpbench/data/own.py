"""Your own table: a CSV and a schema of its public bounds and categories (``data=my.csv
schema=my.yaml`` on any command; docs/arena.md "Your own data").

The schema (yaml) is the only source of the public domain, never the private rows::

    name: clinic                  # optional: the table's id on the board (default: the CSV's stem)
    label: Clinic visits          # optional: its label (default: the name)
    target: readmitted            # the column classification / regression predict
    columns:                      # every column of the CSV, in the order to use
      age: {lower: 18, upper: 90, bins: 8}    # numeric: public [lower, upper], equal-width bins
      sex: {values: [F, M]}                   # categorical: every public value
      readmitted: {values: ["no", "yes"]}     # a binary target: the second value is positive

Every cell of the CSV is checked against it (a value outside a column's bounds or
categories, an empty cell, a column the schema lacks or the CSV lacks is a one-line error
naming the value, its row and what is valid) when the grid is built, before any work. The
schema is read as text (yaml's base loader: ``yes`` stays ``yes``, ``001`` stays ``001``), and
each CSV cell as text too: a categorical cell must equal one of its column's values as
written; a numeric cell must parse as a number.

Each column becomes integer codes over the schema's domain: a categorical column the
index of its value, a numeric one its equal-width bin of [lower, upper] (``bins``, default
:data:`DEFAULT_BINS`; the upper bound falls in the last bin). The table then serves
(:func:`tasks_served`):

- ``query_release``: every row private, no public rows (as ADULT* in the query-release
  arena), the ``raw`` encoding with the target as label;
- ``classification`` (a categorical target with two values): a shuffled 80/20 holdout
  split, the ``raw`` encoding with 0/1 labels (as the excess-risk paper's tables);
- ``regression`` (a numeric target): the same split, the DD-SSP encoding (categorical
  columns reduced one-hot, numeric ones and the target as levels in [-1, 1], as Adult).

The trial keys hold the files' paths and the sha256 of both files (:func:`own_table`), so a
changed file is another table, never mixed with the stored trials of the old one; a trial
whose files changed after its grid was built is refused by the loader.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from dpbench.data.base import Split, TabularData
from dpbench.data.discrete import split_coded
from dpbench.data.encoding import build_encoding, feature_bound
from dpbench.data.files import DataError

if TYPE_CHECKING:
    import pandas as pd

#: the loader's import path (the dataset's ``_target_``)
LOADER = "dpbench.data.own.load_own"
SCHEMA_KEYS = ("name", "label", "target", "columns")
NUMERIC_KEYS = ("lower", "upper", "bins")
DEFAULT_BINS = 10
#: the holdout share of classification and regression
TEST_FRAC = 0.2
#: the tasks an own table can serve (the arenas')
TASKS = ("query_release", "classification", "regression")
DOC = "docs/arena.md \"Your own data\""


@dataclass(frozen=True)
class Column:
    """One schema column: categorical (``values``) or numeric (``lower``, ``upper``,
    ``bins``)."""

    name: str
    values: tuple[str, ...] | None = None
    lower: float = 0.0
    upper: float = 0.0
    bins: int = DEFAULT_BINS

    @property
    def levels(self) -> int:
        return len(self.values) if self.values is not None else self.bins


@dataclass(frozen=True)
class Schema:
    """A table's public facts: its name, label, target and columns."""

    name: str
    label: str
    target: str
    columns: tuple[Column, ...]

    def domain(self) -> dict[str, int]:
        """Attribute -> number of levels, in the schema's column order."""
        return {c.name: c.levels for c in self.columns}

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def _number(value: Any, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}={value!r} is not a number") from None
    if not math.isfinite(out):
        raise DataError(f"{where}={value!r} must be a finite number")
    return out


def _column(name: str, spec: Any, where: str) -> Column:
    if not isinstance(spec, Mapping):
        raise DataError(f"{where}: column {name!r} must be {{values: [...]}} (categorical) or "
                        f"{{lower: .., upper: .., bins: ..}} (numeric), got {spec!r}")
    keys = set(spec)
    if "values" in keys:
        if keys != {"values"}:
            raise DataError(f"{where}: categorical column {name!r} takes only values; "
                            f"unknown: {', '.join(sorted(keys - {'values'}))}")
        values = spec["values"]
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, str) for v in values):
            raise DataError(f"{where}: column {name!r}: values must be a non-empty list of "
                            f"values, got {values!r}")
        if len(set(values)) != len(values):
            raise DataError(f"{where}: column {name!r} repeats a value: {values}")
        return Column(name, values=tuple(values))
    unknown = sorted(keys - set(NUMERIC_KEYS))
    if unknown or not {"lower", "upper"} <= keys:
        got = f"unknown: {', '.join(unknown)}" if unknown else f"got {', '.join(sorted(keys))}"
        raise DataError(f"{where}: column {name!r} needs values (categorical) or lower and "
                        f"upper (numeric, optional bins); {got}")
    lower = _number(spec["lower"], f"{where}: {name}.lower")
    upper = _number(spec["upper"], f"{where}: {name}.upper")
    if not upper > lower:
        raise DataError(f"{where}: column {name!r}: upper={spec['upper']} must exceed "
                        f"lower={spec['lower']}")
    bins = spec.get("bins", str(DEFAULT_BINS))
    if not (isinstance(bins, str) and bins.isdigit() and int(bins) >= 1):
        raise DataError(f"{where}: column {name!r}: bins={bins!r} must be a whole number >= 1")
    return Column(name, lower=lower, upper=upper, bins=int(bins))


def parse_schema(text: str, where: str, default_name: str) -> Schema:
    """A schema from its yaml text (one-line DataError naming ``where`` and what is valid)."""
    try:
        node = yaml.load(text, Loader=yaml.BaseLoader)   # every scalar as written
    except yaml.YAMLError as exc:
        raise DataError(f"{where} is not valid yaml ({' '.join(str(exc).split())})") from None
    if not isinstance(node, Mapping):
        raise DataError(f"{where} must be a map with {', '.join(SCHEMA_KEYS)} ({DOC})")
    unknown = sorted(set(node) - set(SCHEMA_KEYS))
    if unknown:
        raise DataError(f"{where}: unknown key {unknown[0]!r}; valid: {', '.join(SCHEMA_KEYS)}")
    columns = node.get("columns")
    if not isinstance(columns, Mapping) or not columns:
        raise DataError(f"{where} needs columns: {{name: {{values: [...]}} or {{lower, upper, "
                        f"bins}}}} for every column of the CSV ({DOC})")
    cols = tuple(_column(str(k), v, where) for k, v in columns.items())
    target = node.get("target")
    if not isinstance(target, str) or target not in columns:
        raise DataError(f"{where}: target={target!r} must name one of its columns; valid: "
                        f"{', '.join(columns)}")
    name = node.get("name", default_name)
    if not (isinstance(name, str) and name.replace("_", "").replace("-", "").isalnum()):
        raise DataError(f"{where}: name={name!r} must be letters, digits, _ or - (the "
                        "table's id on the board)")
    label = node.get("label", name)
    return Schema(name=name, label=str(label), target=target, columns=cols)


def code_table(frame: pd.DataFrame, schema: Schema, where: str) -> pd.DataFrame:
    """The CSV's cells (text) as integer codes over the schema's domain, after checking
    every one (one-line DataError naming the column, row, value and what is valid; rows
    count from 1 after the header)."""
    import pandas as pd

    names = [c.name for c in schema.columns]
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise DataError(f"{where} lacks the schema's column(s) {missing}; its columns: "
                        f"{', '.join(map(str, frame.columns))}")
    extra = [str(c) for c in frame.columns if c not in names]
    if extra:
        raise DataError(f"{where} has column(s) {extra} the schema does not declare; valid: "
                        f"{', '.join(names)} (add them to the schema or drop them)")
    if frame.empty:
        raise DataError(f"{where} has no rows")
    out = {}
    for c in schema.columns:
        text = frame[c.name].astype(str).str.strip()
        if c.values is not None:
            codes = text.map({v: i for i, v in enumerate(c.values)})
            bad = codes.isna().to_numpy()
            if bad.any():
                i = int(np.argmax(bad))
                raise DataError(f"{where}: column {c.name!r}, row {i + 1}: value "
                                f"{text.iloc[i]!r} is not among its schema values; valid: "
                                f"{', '.join(c.values)}")
            out[c.name] = codes.to_numpy().astype(np.int64)
            continue
        x = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(x) | (x < c.lower) | (x > c.upper)
        if bad.any():
            i = int(np.argmax(bad))
            why = "is not a number" if not np.isfinite(x[i]) else "lies outside"
            raise DataError(f"{where}: column {c.name!r}, row {i + 1}: value {text.iloc[i]!r} "
                            f"{why} the schema's bounds [{c.lower:g}, {c.upper:g}]")
        codes = np.floor((x - c.lower) / (c.upper - c.lower) * c.bins).astype(np.int64)
        out[c.name] = np.minimum(codes, c.bins - 1)
    return pd.DataFrame(out, columns=names)


@dataclass(frozen=True)
class OwnData:
    """A checked table: its schema, integer codes and both files' sha256."""

    schema: Schema
    codes: pd.DataFrame
    sha256: dict[str, str]


def read_own(file: str, schema: str) -> OwnData:
    """The CSV ``file`` checked against the yaml ``schema`` and coded (:func:`code_table`),
    parsed once per version of the two files (path, size, modification time)."""
    paths = [Path(file), Path(schema)]
    for what, p in zip(("data", "schema"), paths, strict=True):
        if not p.is_file():
            raise DataError(f"{what}={p}: no such file")
    versions = [(p.stat().st_size, p.stat().st_mtime_ns) for p in paths]
    return _read_own(str(paths[0]), str(paths[1]), *versions)


@functools.lru_cache(maxsize=8)
def _read_own(file: str, schema: str, *versions: tuple[int, int]) -> OwnData:
    import pandas as pd

    del versions                       # the cache key: a changed file is read again
    raw = {"data": Path(file).read_bytes(), "schema": Path(schema).read_bytes()}
    try:
        text = raw["schema"].decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"schema={schema} is not UTF-8 text") from None
    parsed = parse_schema(text, f"schema={schema}", Path(file).stem)
    try:
        frame = pd.read_csv(io.BytesIO(raw["data"]), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"data={file} is not a valid CSV "
                        f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                        ) from None
    codes = code_table(frame, parsed, f"data={file}")
    return OwnData(parsed, codes, {k: hashlib.sha256(v).hexdigest() for k, v in raw.items()})


def tasks_served(schema: Schema) -> dict[str, str]:
    """Each task of :data:`TASKS` the table serves -> empty, or the one it does not -> why."""
    target = schema.column(schema.target)
    binary = target.values is not None and len(target.values) == 2
    numeric = target.values is None
    return {"query_release": "",
            "classification": "" if binary else
            f"classification needs a categorical target with two values; {target.name!r} has "
            f"{'numeric bounds' if numeric else f'{target.levels} values'}",
            "regression": "" if numeric else
            f"regression needs a numeric target (lower, upper); {target.name!r} is categorical"}


def own_entry(file: str, schema: str) -> tuple[str, dict[str, Any]]:
    """The table's id and its dataset entry (what a dataset yaml would hold: loader, label,
    capabilities, one task view per task it serves), its files checked and hashed."""
    table = read_own(file, schema)
    served = [t for t, why in tasks_served(table.schema).items() if not why]
    views: dict[str, Any] = {t: {"params": {"view": t}} for t in served}
    if "classification" in views:
        views["classification"]["provides"] = ["binary_label"]
    return table.schema.name, {
        "_target_": LOADER, "label": table.schema.label, "provides": ["discrete"],
        "tasks": views,
        "params": {"file": str(Path(file).resolve()), "schema": str(Path(schema).resolve()),
                   "sha256": dict(table.sha256)}}


def load_own(*, rng: np.random.Generator, file: str, schema: str, sha256: Mapping[str, str],
             view: str) -> Split:
    """The split of an own table for one task ``view`` (module docstring), after checking
    that neither file changed since its trial keys were made (``sha256``)."""
    table = read_own(file, schema)
    now = {k: hashlib.sha256(Path(f).read_bytes()).hexdigest()     # the bytes, not a cache
           for k, f in (("data", file), ("schema", schema))}
    if dict(sha256) != now or now != table.sha256:
        changed = [k for k in now if now[k] != sha256.get(k)] or ["data or schema"]
        raise DataError(f"{' and '.join(changed)} file of table {table.schema.name!r} changed "
                        "since its trials were planned (sha256 differs); run the command again: "
                        "a changed file is a new table")
    why = tasks_served(table.schema).get(view)
    if why is None:
        raise DataError(f"view={view!r} unknown; valid: {', '.join(TASKS)}")
    if why:
        raise DataError(why)
    s, frame, domain = table.schema, table.codes, table.schema.domain()
    if view == "classification":
        return split_coded(frame, domain, rng=rng, where=file, target=s.target, scheme="raw",
                           protocol="holdout", test_frac=TEST_FRAC, n_train_max=None)
    if view == "regression":
        categorical = [c.name for c in s.columns if c.values is not None]
        return split_coded(frame, domain, rng=rng, where=file, target=s.target,
                           categorical=categorical, target_kind="numeric",
                           test_frac=TEST_FRAC, n_train_max=None)
    enc = build_encoding(domain, s.target, (), None, "raw")
    xb, yb = feature_bound(enc), float(np.max(np.abs(enc.target_values)))

    def part(rows: pd.DataFrame) -> TabularData:
        rows = rows.reset_index(drop=True)
        X, y = enc.encode(rows)
        return TabularData(X=X, y=y, x_bound=xb, y_bound=yb, feature_names=enc.columns,
                           target=s.target, discrete=rows, domain=domain, encoding=enc)

    return Split(train=part(frame), test=part(frame.iloc[:0]))


def own_dataset(data: str | None, schema: str | None, task: str, taken: Sequence[str]
                ) -> tuple[str, dict[str, Any]] | None:
    """``data=`` / ``schema=`` of a command: the table's id and dataset entry
    (:func:`own_entry`), which replace the experiment's datasets; None when neither is
    given. A one-line DataError when one comes without the other, the files do not hold,
    the id is a shipped dataset's (``taken``) or the table cannot serve ``task``."""
    if data is None and schema is None:
        return None
    if data is None or schema is None:
        given, other = ("data", "schema=<yaml>") if schema is None else ("schema", "data=<csv>")
        raise DataError(f"{given}={data if schema is None else schema} needs {other}: a CSV "
                        f"and a schema of its public bounds and categories come together "
                        f"({DOC})")
    name, entry = own_entry(str(data), str(schema))
    if name in taken:
        raise DataError(f"schema={schema}: name={name!r} is a shipped dataset's; give the "
                        "table another name (schema key name)")
    if task not in entry["tasks"]:
        why = tasks_served(read_own(str(data), str(schema)).schema).get(task) or \
            f"an own table serves {', '.join(TASKS)}"
        raise DataError(f"data={data} cannot serve task {task!r}: {why}")
    return name, entry
