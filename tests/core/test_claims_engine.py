"""claims.yaml parsing (one-line errors), claim selection by experiment, claims.md /
claims.json output and the CLI summary read from claims.json."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpbench.report.claims.engine import build_claims, load_claims, parse_claim, summary
from dpbench.runner.schema import ConfigError

BASE = {"id": "c", "text": "t", "kind": "better", "a": "x", "b": "y", "metric": "score"}


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "bigger"}, "unknown kind 'bigger'; valid: band, better,"),
    ({"tolerance": 1}, "unknown key 'tolerance' for kind better; valid:"),
    ({"where": {"dataset": ["toy"]}}, "unknown where key 'dataset'"),
    ({"where": {"eps": "about 1"}}, "eps condition 'about 1'"),
    ({"require": "all"}, "require 'all'; valid: b, both, none"),
    ({"text": ""}, "missing 'text'"),
    ({"kind": "competitive", "tol": "small"}, "could not convert string to float: 'small'"),
])
def test_bad_claims_are_one_line_errors(change, message):
    with pytest.raises(ConfigError, match="claims: claim 'c': ") as err:
        parse_claim({**BASE, **change})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_file_errors_and_selection_by_experiment(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("claims:\n  - {id: c, text: t, kind: better, a: x, b: y}\n"
                    "  - {id: c, text: u, kind: better, a: x, b: y}\n")
    with pytest.raises(ConfigError, match="claim id 'c' appears 2 times"):
        load_claims(path)
    path.write_text("claim: []\n")
    with pytest.raises(ConfigError, match="unknown key 'claim'"):
        load_claims(path)
    path.write_text("claims:\n  - {id: c, text: t, kind: better, a: x, b: y, experiments: e1}\n"
                    "  - {id: d, text: t, kind: better, a: x, b: y}\n")
    spec = load_claims(path)
    assert [c.id for c in spec.for_experiment("e1")] == ["c", "d"]
    assert [c.id for c in spec.for_experiment("e2")] == ["d"]


def test_build_claims_writes_md_and_json_and_cli_summary(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "papers" / "toy").mkdir(parents=True)
    (root / "papers" / "toy" / "claims.yaml").write_text(
        "claims:\n"
        "  - {id: win, text: 'x beats y (Sec. 1)', kind: better, a: x, b: y, metric: auc}\n"
        "  - {id: lose, text: 'y beats x (Sec. 2)', kind: better, a: y, b: x, metric: auc}\n")
    monkeypatch.setenv("DPBENCH_PATH", str(root))
    frame = pd.DataFrame([{"dataset": "d", "dataset_label": "d", "method": m,
                           "method_label": m, "epsilon": 1.0, "trial": t, "auc": v}
                          for m, v in (("x", 0.9), ("y", 0.8)) for t in range(2)])
    # the direction comes from the task: classification's primary metric auc, higher
    md, js = build_claims(frame, {"name": "e", "paper": "toy", "task": "classification"},
                          tmp_path / "out")
    rows = json.loads(js.read_text())
    assert [(r["claim"], r["status"], r["eps"]) for r in rows] == [
        ("win", "PASS", 1.0), ("lose", "FAIL", 1.0)]
    assert "| FAIL | d | 1 | y beats x (Sec. 2) | AUC 0.8 vs 0.9" in md.read_text()
    assert summary(md).splitlines() == [
        f"{md}: 1 PASS, 1 FAIL, 0 SKIP",
        "  | FAIL | d | 1 | y beats x (Sec. 2) | AUC 0.8 vs 0.9 (higher is better) |"]
    assert build_claims(frame, {"name": "e"}, tmp_path / "none") == []
    with pytest.raises(ConfigError, match="unknown paper 'nope'"):
        build_claims(frame, {"name": "e", "paper": "nope"}, tmp_path / "x")
