"""The verdicts of the per-paper claim checks the claims engine replaced, per experiment
(tests/papers/golden_verdicts.json, written by tests/papers/extract_old_verdicts.py), and
the comparison of an experiment's claims.json with them.

A deliberate change of a method's behaviour moves some smoke verdicts: rerun the smoke
tests of the experiments concerned with ``DPBENCH_UPDATE_GOLDEN=1`` to rewrite their rows
(the diff of golden_verdicts.json then shows exactly which verdicts moved)."""

from __future__ import annotations

import json
import os
from pathlib import Path

GOLDEN = Path(__file__).with_name("papers") / "golden_verdicts.json"


def golden() -> dict[str, list[dict]]:
    return json.loads(GOLDEN.read_text())


def _rows(verdicts: list[dict]) -> list[tuple]:
    return sorted((v["claim"], v["dataset"], None if v["eps"] is None else round(v["eps"], 6),
                   v.get("subject", ""), v["status"]) for v in verdicts)


def assert_golden(experiment: str, claims_json: Path | None) -> None:
    """claims.json rows == the golden rows of ``experiment`` (no file: no golden rows)."""
    rows = golden().get(experiment)
    if rows is None:
        return
    ours = json.loads(claims_json.read_text()) if claims_json and claims_json.exists() else []
    if os.environ.get("DPBENCH_UPDATE_GOLDEN") == "1":
        _update(experiment, rows, ours)
        return
    want, got = _rows(rows), _rows(ours)
    missing = [r for r in want if r not in got]
    extra = [r for r in got if r not in want]
    assert not missing and not extra, (f"{experiment}: verdicts differ from the old checks;"
                                       f"\nmissing {missing}\nextra {extra}")


def _update(experiment: str, rows: list[dict], ours: list[dict]) -> None:
    """Rewrite ``experiment``'s golden rows from ``ours``, keeping each kept row's old text."""
    text = {(r["claim"], r["dataset"], r["eps"], r.get("subject", "")): r.get("old_text", "")
            for r in rows}
    new = [{"claim": v["claim"], "dataset": v["dataset"], "eps": v["eps"],
            "subject": v.get("subject", ""), "status": v["status"],
            "old_text": text.get((v["claim"], v["dataset"], v["eps"], v.get("subject", "")), "")}
           for v in ours]
    allrows = golden()
    allrows[experiment] = new
    GOLDEN.write_text(json.dumps(allrows, indent=1) + "\n")
