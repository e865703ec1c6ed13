"""The verdicts of the per-paper claim checks the claims engine replaced, per experiment
(tests/papers/golden_verdicts.json, written by tests/papers/extract_old_verdicts.py), and
the comparison of an experiment's claims.json with them."""

from __future__ import annotations

import json
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
    want, got = _rows(rows), _rows(ours)
    missing = [r for r in want if r not in got]
    extra = [r for r in got if r not in want]
    assert not missing and not extra, (f"{experiment}: verdicts differ from the old checks;"
                                       f"\nmissing {missing}\nextra {extra}")
