"""Your own data (issue 60 item 5): a CSV and a schema that no yaml of the repository knows
join an arena with ``data=`` / ``schema=`` (dpbench/data/own.py).

End to end: the classification arena's smoke profile, restricted to two cheap methods, runs
on a table written here, and ``dpbench leaderboard`` shows it. Refusals: a schema missing,
malformed, or a CSV value outside it is one line (exit 2) before anything is stored. The
public domain is the schema's, never the rows'; the trial keys follow the files' content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbench import entry
from dpbench.data.files import DataError
from dpbench.data.own import load_own, own_entry, read_own
from dpbench.workspace import compose_config, grid

SCHEMA = """\
name: toy_clinic
label: Toy clinic
target: readmitted
columns:
  age: {lower: 18, upper: 90, bins: 8}
  sex: {values: [F, M, X]}
  visits: {lower: 0, upper: 12, bins: 4}
  readmitted: {values: ["no", "yes"]}
"""
N = 300


def write_table(folder: Path, schema: str = SCHEMA, **change: object) -> tuple[Path, Path]:
    """``clinic.csv`` (N rows; sex never ``X``, so the rows do not show the whole domain)
    and ``clinic.yaml`` in ``folder``; ``change`` sets cells: ``{column: (row, value)}``."""
    rng = np.random.default_rng(7)
    age = rng.integers(18, 91, N)
    sex = rng.choice(["F", "M"], N)
    p = 1 / (1 + np.exp(-(age - 50) / 10 - (sex == "M")))
    frame = pd.DataFrame({"age": age, "sex": sex, "visits": rng.integers(0, 13, N),
                          "readmitted": np.where(rng.random(N) < p, "yes", "no")})
    frame = frame.astype(object)
    for col, (row, value) in change.items():
        frame.loc[row, col] = value
    folder.mkdir(parents=True, exist_ok=True)
    csv, yml = folder / "clinic.csv", folder / "clinic.yaml"
    frame.to_csv(csv, index=False)
    yml.write_text(schema)
    return csv, yml


def own_args(csv: Path, yml: Path, results: Path) -> list[str]:
    return ["experiment=arena_classification", "profile=smoke", f"data={csv}",
            f"schema={yml}", f"results_dir={results}", "methods=[majority,objpert]",
            "runner.n_jobs=1"]


def test_own_table_runs_and_is_on_the_board(tmp_path: Path) -> None:
    """A table no yaml knows: the arena's smoke profile runs on it alone (the profile's own
    datasets left out), and its board shows it by the schema's name and label."""
    csv, yml = write_table(tmp_path / "mine")
    results = tmp_path / "results"
    args = own_args(csv, yml, results)
    specs = grid(compose_config(args))
    assert {s.dataset for s in specs} == {"toy_clinic"}
    assert {s.method for s in specs} == {"majority", "objpert"}
    assert entry.main(["run", *args]) == 0
    assert entry.main(["leaderboard", *args]) == 0
    boards = list((results / "leaderboard").glob("arena_classification-smoke-custom-*"))
    assert len(boards) == 1
    text = (boards[0] / "board.md").read_text()
    assert "## Toy clinic, epsilon = " in text
    assert "ObjPert" in text and "2/2" in text


def test_own_table_on_the_query_release_arena(tmp_path: Path) -> None:
    """The same table through arena_synthetic's smoke profile (query release over the
    schema's discrete domain): two generators run and the board shows it."""
    csv, yml = write_table(tmp_path / "mine")
    results = tmp_path / "results"
    args = ["experiment=arena_synthetic", "profile=smoke", f"data={csv}", f"schema={yml}",
            f"results_dir={results}", "methods=[independent,uniform]", "runner.n_jobs=1"]
    assert entry.main(["run", *args]) == 0
    assert entry.main(["leaderboard", *args]) == 0
    (board,) = (results / "leaderboard").glob("arena_synthetic-smoke-custom-*/board.md")
    text = board.read_text()
    assert "## Toy clinic, epsilon = " in text and "2/2" in text


def test_domain_is_the_schema_s(tmp_path: Path) -> None:
    """The domain comes from the schema only: sex has 3 levels though the rows hold 2, and
    numeric columns have the schema's bins whatever the rows' range; query release sees
    every row, classification an 80/20 split with 0/1 labels (the second value positive)."""
    csv, yml = write_table(tmp_path)
    name, ent = own_entry(str(csv), str(yml))
    params = ent["params"]
    qr = load_own(rng=np.random.default_rng(0), view="query_release", **params)
    assert dict(qr.train.domain) == {"age": 8, "sex": 3, "visits": 4, "readmitted": 2}
    assert qr.train.n == N and qr.test.n == 0
    assert set(qr.train.discrete["sex"]) == {0, 1}          # X (code 2) never drawn
    rows = pd.read_csv(csv)
    want_age = np.minimum(np.floor((rows["age"] - 18) / 72 * 8), 7).astype(int)
    assert (qr.train.discrete["age"].to_numpy() == want_age.to_numpy()).all()
    cls = load_own(rng=np.random.default_rng(0), view="classification", **params)
    assert cls.test.n == int(np.ceil(0.2 * N)) and cls.train.n == N - cls.test.n
    assert set(np.unique(cls.train.y)) == {0.0, 1.0}
    assert cls.train.y.mean() == pytest.approx((rows["readmitted"] == "yes").mean(), abs=0.1)
    assert set(ent["tasks"]) == {"query_release", "classification"}   # target categorical


@pytest.mark.parametrize("case, args, expect", [
    ("no schema", lambda c, y: [f"data={c}"], "needs schema=<yaml>"),
    ("no data", lambda c, y: [f"schema={y}"], "needs data=<csv>"),
    ("schema file missing", lambda c, y: [f"data={c}", f"schema={y}.missing"],
     "no such file"),
])
def test_refused_pairing(tmp_path: Path, case: str, args, expect: str,
                         capsys: pytest.CaptureFixture[str]) -> None:
    csv, yml = write_table(tmp_path)
    results = tmp_path / "results"
    code = entry.main(["run", "experiment=arena_classification", "profile=smoke",
                       f"results_dir={results}", *args(csv, yml)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expect in err and len(err.splitlines()) == 1, (case, err)
    assert not (results / "store" / "trials").exists() or \
        not any((results / "store" / "trials").iterdir())


@pytest.mark.parametrize("case, schema, change, expect", [
    ("value outside bounds", SCHEMA, {"age": (41, 95)},
     "column 'age', row 42: value '95' lies outside the schema's bounds [18, 90]"),
    ("not a number", SCHEMA, {"visits": (3, "many")}, "value 'many' is not a number"),
    ("unknown category", SCHEMA, {"sex": (9, "Q")},
     "column 'sex', row 10: value 'Q' is not among its schema values; valid: F, M, X"),
    ("empty cell", SCHEMA, {"readmitted": (0, "")}, "value '' is not among"),
    ("column missing from schema", SCHEMA.replace("  visits: {lower: 0, upper: 12, bins: 4}\n",
                                                  ""), {}, "does not declare"),
    ("malformed yaml", "columns: [age: {", {}, "is not valid yaml"),
    ("unknown key", SCHEMA + "weights: 3\n", {}, "unknown key 'weights'"),
    ("no bounds", SCHEMA.replace("{lower: 18, upper: 90, bins: 8}", "{bins: 8}"), {},
     "needs values (categorical) or lower and upper"),
    ("bad target", SCHEMA.replace("target: readmitted", "target: outcome"), {},
     "target='outcome' must name one of its columns; valid: age, sex, visits, readmitted"),
    ("shipped name", SCHEMA.replace("toy_clinic", "mpdp_heart"), {}, "a shipped dataset's"),
])
def test_refused_before_any_work(tmp_path: Path, case: str, schema: str, change: dict,
                                 expect: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every bad schema or cell is one line on stderr naming the value and what is valid,
    from ``plan`` and ``run`` alike, and nothing is stored."""
    csv, yml = write_table(tmp_path, schema, **change)
    results = tmp_path / "results"
    for command in ("plan", "run"):
        code = entry.main([command, *own_args(csv, yml, results)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and expect in err and len(err.splitlines()) == 1, (case, err)
    assert not (results / "store" / "trials").exists() or \
        not any((results / "store" / "trials").iterdir())


def test_task_the_table_cannot_serve(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    """A categorical target cannot be a regression arena's: one line, before any work."""
    csv, yml = write_table(tmp_path)
    code = entry.main(["plan", "experiment=arena_regression", "profile=smoke",
                       f"data={csv}", f"schema={yml}", f"results_dir={tmp_path / 'r'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "regression needs a numeric target" in err
    assert len(err.splitlines()) == 1


def test_keys_follow_the_content(tmp_path: Path) -> None:
    """The trial keys hold both files' sha256: a changed CSV (or schema) is a new table's
    cells, never the stored trials of the old one; a trial planned before the change is
    refused by the loader."""
    csv, yml = write_table(tmp_path)
    args = own_args(csv, yml, tmp_path / "r")
    before = grid(compose_config(args))
    again = grid(compose_config(args))
    assert [s.key for s in before] == [s.key for s in again]
    write_table(tmp_path, **{"age": (0, 33)})
    after = grid(compose_config(args))
    assert not {s.key for s in before} & {s.key for s in after}
    yml.write_text(SCHEMA.replace("bins: 4", "bins: 3"))
    assert not {s.key for s in after} & {s.key for s in grid(compose_config(args))}
    with pytest.raises(DataError, match="changed since its trials were planned"):
        load_own(rng=np.random.default_rng(0), **before[0].dataset_params)


def test_read_once_per_version(tmp_path: Path) -> None:
    csv, yml = write_table(tmp_path)
    assert read_own(str(csv), str(yml)) is read_own(str(csv), str(yml))
