"""The cells a run refuses, kept in the store (issue 59, "read once").

An arena's ``dpbench run`` learns which cells cannot run by expanding the grid (the grid's
own refusals) and by loading every dataset and checking every method against it (the
data's: ``workspace.preflight``). It writes what it found to
``<store>/refusals/<experiment>@<profile>[-custom-<hash>].json`` (:data:`SCHEMA`: the
experiment, the profile, each refused cell with its reason and who refused it, and the
:func:`fingerprint` of what decided them), atomically as the trial records are written. A
reader (``status``, ``leaderboard``, the site's arena pages) then takes the refused cells
from that file instead of loading every dataset again, but only while the fingerprint of
its own grid is the stored one; otherwise it computes them as the run did.

The file is no trial record: it lives outside ``<store>/trials/`` (no reader of trials
lists it), has no ``key`` or ``status`` (``store.parse_record`` refuses it) and names its
schema, which the reader checks.

The fingerprint covers what a refusal depends on: every cell's resolved settings (dataset
and method, their targets and parameters, the task, the budget; trial indices left out),
the grid's own refused cells, dpbench's version and the content of its code, and the size
and modification time of every file under the data root (and of any file a dataset
parameter names). Code outside dpbench that a target imports is not covered.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpbench.checksum import canonical_json, code_digest
from dpbench.data.files import data_root
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import REFUSALS_SCHEMA, ResultStore, machine

SCHEMA = REFUSALS_SCHEMA
#: who refused a cell: the grid (config alone) or the data (a dataset loaded, a method
#: checked against it)
BY_GRID, BY_DATA = "grid", "data"

Refusal = tuple[str, str, str]          # (dataset, method, reason)


def _cell(s: TrialSpec) -> dict[str, Any]:
    """A spec's settings that can decide a refusal (its trial index left out)."""
    return {"dataset": s.dataset, "dataset_target": s.dataset_target,
            "dataset_params": s.dataset_params, "method": s.method,
            "method_target": s.method_target, "method_params": s.method_params,
            "task": s.task, "task_params": s.task_params, "epsilon": s.epsilon,
            "delta": s.delta, "budget_unit": s.budget_unit, "relation": s.relation}


def _files(specs: Sequence[TrialSpec]) -> list[Path]:
    """Every file under the data root, and every existing file a dataset parameter names."""
    root = data_root()
    found = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
    for s in specs:
        for v in s.dataset_params.values():
            if isinstance(v, str) and Path(v).is_file():
                found.append(Path(v))
    return sorted(set(found))


def fingerprint(specs: Sequence[TrialSpec], grid_refused: Iterable[Refusal]) -> str:
    """What decides the refused cells of a grid whose cells to check are ``specs`` and
    whose config refuses ``grid_refused``: see the module docstring."""
    h = hashlib.sha256(f"{SCHEMA}\n{code_digest()}\n".encode())
    for text in sorted({canonical_json(_cell(s)) for s in specs}):
        h.update(text.encode() + b"\n")
    h.update(canonical_json([list(r) for r in grid_refused]).encode())
    for f in _files(specs):
        try:
            st = f.stat()
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
        except OSError:
            h.update(f"{f}:-;".encode())
    return h.hexdigest()


def keep(store: ResultStore, name: str, experiment: str, profile: str,
         specs: Sequence[TrialSpec], grid_refused: Sequence[Refusal],
         refused: Sequence[Refusal]) -> Path:
    """Write the refused cells of a run's grid (``refused``: the grid's ``grid_refused``
    first, then the data's) under ``name`` (``<experiment>@<profile>[-custom-<hash>]``),
    with the fingerprint of ``specs`` (the cells checked) and ``grid_refused``."""
    n_grid = len(grid_refused)
    record = {"schema": SCHEMA, "experiment": experiment, "profile": profile,
              "fingerprint": fingerprint(specs, grid_refused),
              "refused": [{"dataset": d, "method": m, "reason": why,
                           "by": BY_GRID if i < n_grid else BY_DATA}
                          for i, (d, m, why) in enumerate(refused)],
              "at": datetime.now(UTC).isoformat(), "by": {**machine(), "pid": os.getpid()}}
    return store.put_refusals(name, record)


def stored(store: ResultStore, name: str, specs: Sequence[TrialSpec],
           grid_refused: Sequence[Refusal]) -> list[Refusal] | None:
    """The refused cells a run stored under ``name`` if they are current for a grid whose
    cells to check are ``specs`` and whose config refuses ``grid_refused`` (the same
    fingerprint); None if none is stored, it is damaged, or it is stale."""
    record = store.read_refusals(name)
    if record is None or record.get("fingerprint") != fingerprint(specs, grid_refused):
        return None
    try:
        return [(str(r["dataset"]), str(r["method"]), str(r["reason"]))
                for r in record["refused"]]
    except (KeyError, TypeError):
        return None
