"""ResultStore: one atomically written JSON file per trial, keyed by the spec hash.

Writes go to a temporary file in the same directory, are fsynced, then renamed
over the final name, so a crash (even kill -9) leaves either the old record or
the new one, never a partial file. Records are never deleted by dpbench; a
failed record is replaced only by a later attempt at the same trial.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from dpbench.runner.artifacts import atomic_write_bytes

OK, FAILED = "ok", "failed"


class ResultStore:
    """Directory ``<root>/trials/<key[:2]>/<key>.json``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.trials = self.root / "trials"

    def path(self, key: str) -> Path:
        return self.trials / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self.path(key)
        try:
            return json.loads(p.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError:  # cannot happen with atomic writes; treat as absent
            return None

    def status(self, key: str) -> str | None:
        rec = self.get(key)
        return None if rec is None else rec.get("status")

    def statuses(self, keys: Iterable[str]) -> dict[str, str | None]:
        return {k: self.status(k) for k in keys}

    def put(self, record: dict[str, Any]) -> Path:
        """Atomically write ``record`` (must contain ``key``)."""
        final = self.path(record["key"])
        final.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(record, sort_keys=True, indent=1, allow_nan=True)
        atomic_write_bytes(final, data.encode())
        return final

    def remove_stale_temp(self, older_than_s: float = 3600.0) -> int:
        """Delete temp files left by writes killed mid-way (older than ``older_than_s``,
        so a write in progress in another process is never touched)."""
        import time

        n = 0
        if self.trials.exists():
            cutoff = time.time() - older_than_s
            for p in self.trials.glob("*/.tmp-*"):
                if p.stat().st_mtime < cutoff:
                    p.unlink(missing_ok=True)
                    n += 1
        return n

    def records(self) -> Iterator[dict[str, Any]]:
        """Every stored record, in key order."""
        if not self.trials.exists():
            return
        for p in sorted(self.trials.glob("*/*.json")):
            if p.name.startswith(".tmp-"):
                continue
            rec = self.get(p.stem)
            if rec is not None:
                yield rec

    def keys(self) -> list[str]:
        if not self.trials.exists():
            return []
        return sorted(p.stem for p in self.trials.glob("*/*.json") if not p.name.startswith("."))

    def compact(self, out: str | Path | None = None) -> Path:
        """Flatten every record into one parquet file for analysis (read-only copy)."""
        out = Path(out) if out else self.root / "trials.parquet"
        frame = pd.json_normalize(list(self.records()), sep=".")
        frame = frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object})
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".parquet.tmp")
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, out)
        return out
