"""Reference fits: measured costs of trials that ship with dpbench, a paper's grids in
``papers/<paper>/costs.jsonl`` and an experiment of no paper's (an arena's) next to its yaml
(``conf/experiment/<group>/costs.jsonl``), so ``plan`` can size a grid before the user's
store holds any trial of it: a paper profile meant for a cluster, say, from a clean clone.

Each line is one ok trial as a store recorded it, reduced to what its cost tells: its spec
(so its cell and features are those of the grid's trials), its seconds, its peak memory,
its dataset's size, when and on what machine it ran. The seconds are the record's
``cpu_s`` (the worker process's CPU time over the trial, every thread: not stretched when
other work shares the cores, as a wall time would be), else its data + fit + evaluation
wall time, marked ``seconds_are: wall``, which ``plan`` never reads as CPU time (such a line
prices nothing). Beside them, ``host_probe_s``: the machine's speed when the trial ran, where
its record has one (:mod:`~dpbench.runner.hostspeed`; ``plan`` scales the seconds by it).
``scripts/export_costs.py`` writes the lines from a store.

They stand below the user's own trials (:class:`~dpbench.runner.cost.Estimator`): a cell the
store has measured is estimated from the store; a cell only the reference has, from the
reference; any other from one model fitted on both. A plan reads every shipped file, its
experiment's own first (:func:`reference_files`): a cell is the same cell whichever grid
measured it, and a method's cost model learns from every dataset it was measured on. A
reference was measured on another machine: the plan names it, and the user's figures
replace it once their trials exist.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpbench.checksum import read_kept, replace_file, write_kept
from dpbench.roots import paper_dir, papers_dirs
from dpbench.runner import hostspeed
from dpbench.runner.cost import IDENTITIES, artifact_of, identities, record_mem_mb, record_seconds
from dpbench.runner.reference import (
    Reference,
    kept_reading,
    machine_text,  # noqa: F401 (the export script's)
)
from dpbench.runner.schema import ConfigError, entries
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import OK, is_number

FILE = "costs.jsonl"
#: what a reference line must hold, and of which JSON type
FIELDS: Mapping[str, type | tuple[type, ...]] = {
    "key": str, "spec": dict, "seconds": (int, float), "n_train": int, "d": int,
    "finished_at": str, "machine": str}


def home_of(paper: str | None, experiment: str) -> Path:
    """Where an experiment's reference fits are kept: its paper's folder
    (``papers/<paper>/costs.jsonl``), or for an experiment of no paper (an arena) the folder
    of its yaml (``conf/experiment/<group>/costs.jsonl``). ConfigError for an unknown
    paper or experiment, naming the valid ones."""
    if paper:
        try:
            return paper_dir(str(paper)) / FILE
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    yamls = entries("experiment")
    if experiment not in yamls:
        raise ConfigError(f"unknown experiment {experiment!r}; valid: {', '.join(sorted(yamls))}")
    return yamls[experiment].parent / FILE


def shipped_files() -> list[Path]:
    """Every reference file dpbench and the ``DPBENCH_PATH`` roots ship: each paper's (the
    first root that has the paper) and each experiment folder's, in path order."""
    papers = sorted({d.name for base in papers_dirs() for d in base.iterdir()
                     if (d / FILE).is_file()})
    folders = sorted({p.parent for p in entries("experiment").values()})
    found = [paper_dir(n) / FILE for n in papers] + [d / FILE for d in folders]
    return [p for p in found if p.is_file()]


def reference_files(paper: str | None, experiment: str) -> list[Path]:
    """The reference files a plan of ``experiment`` reads: its own first (its paper's, or
    its folder's for an experiment of no paper; :func:`home_of`), then every other one
    dpbench ships (:func:`shipped_files`)."""
    own = home_of(paper, experiment)
    rest = [p for p in shipped_files() if p != own]
    return [own, *rest] if own.is_file() else rest


def read_reference(path: Path) -> list[dict[str, Any]]:
    """The lines of a reference file (ConfigError naming the file and line if one is bad).

    A file read before (the same bytes, read by the same code) comes from a sealed cache
    in ``<cache_root>/reference-costs``, with each line's trial identities
    (:data:`~dpbench.runner.cost.IDENTITIES`): ``plan`` reads every shipped file, ~1,500
    lines whose checks and hashes cost more than the rest of its cost model."""
    data = path.read_bytes()
    cache, inputs = kept_reading(path, data, "reference-costs")
    kept = read_kept(cache, _TAG, inputs)
    if isinstance(kept, tuple):
        lines, known = kept
        IDENTITIES.update(known)
        return lines
    lines = _parse(path, data.decode("utf-8"))
    known = {ln["key"]: identities(TrialSpec.from_dict(ln["spec"], key=ln["key"]))
             for ln in lines}
    write_kept(cache, _TAG, inputs, (lines, known), quiet=True)
    return lines


_TAG = b"dpbench-reference-costs 3\n"


def _parse(path: Path, body: str) -> list[dict[str, Any]]:
    """:func:`read_reference`'s checks, line by line."""
    out = []
    for no, text in enumerate(body.splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: line {no} is not JSON ({exc.msg})") from None
        bad = [k for k, t in FIELDS.items()
               if not isinstance(line, dict) or not isinstance(line.get(k), t)
               or isinstance(line.get(k), bool)]
        if not bad and line["seconds"] < 0:
            bad = ["seconds"]
        if not bad and not isinstance(line.get("unfinished", False), bool):
            bad = ["unfinished"]
        if not bad and "artifact_key" in line and not (
                isinstance(line["artifact_key"], str) and isinstance(line.get("cache_hit"), bool)):
            bad = ["artifact_key and cache_hit"]
        if bad:
            raise ConfigError(f"{path}: line {no} lacks a valid {', '.join(bad)}; each "
                              f"line needs {', '.join(FIELDS)}")
        try:
            spec = TrialSpec.from_dict(line["spec"])
        except (TypeError, KeyError) as exc:
            raise ConfigError(f"{path}: line {no} has a spec dpbench cannot read ({exc})") \
                from None
        if spec.key != line["key"]:
            raise ConfigError(f"{path}: line {no}: its key is not its spec's "
                              f"({line['key'][:12]}… vs {spec.key[:12]}…)")
        out.append(line)
    return out


def reference_line(record: Mapping[str, Any], machine: str) -> dict[str, Any]:
    """One ok store record as a reference line (its spec, seconds, memory, size)."""
    wall = record_seconds(record)
    cpu = record.get("cpu_s")
    return {"key": record["key"], "spec": record["spec"],
            "seconds": round(float(cpu) if is_number(cpu) else wall, 3),
            "seconds_are": "cpu" if is_number(cpu) else "wall",
            "wall_s": round(wall, 3), hostspeed.FIELD: hostspeed.of_record(record),
            "peak_rss_mb": record_mem_mb(record),
            "n_train": int(record["n_train"]), "d": int(record["d"]),
            "commit": record.get("commit"), "finished_at": record.get("finished_at", ""),
            "machine": machine, **artifact_fields(record)}


def artifact_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The shared fit (artifact) a trial used, as a reference line keeps it: its key and
    whether the trial found it built by another (``plan`` then knows what the trial costs
    without that other trial)."""
    key, hit = artifact_of(record)
    return {"artifact_key": key, "cache_hit": hit} if key else {}


def unfinished_line(spec: TrialSpec, cpu_s: float, size: tuple[int, int], machine: str,
                    when: str) -> dict[str, Any]:
    """A reference line for a trial stopped unfinished after ``cpu_s`` CPU seconds: its
    cell's cost is at least that (``plan`` says so), and no cost model fits on it."""
    return {"key": spec.key, "spec": spec.to_dict(), "seconds": round(float(cpu_s), 3),
            "seconds_are": "cpu", "unfinished": True, "peak_rss_mb": None,
            "n_train": int(size[0]), "d": int(size[1]), "commit": None,
            "finished_at": when, "machine": machine}


def export(records: Iterable[Mapping[str, Any]], path: Path, machine: str,
           unfinished: Iterable[Mapping[str, Any]] = ()) -> int:
    """Write the ok ``records`` (and the ``unfinished`` lines of trials stopped before
    the end, :func:`unfinished_line`) into the reference file ``path``: a line per trial,
    a new measurement of a trial replacing its old line, the others kept. Returns how
    many were written."""
    old = {ln["key"]: ln for ln in read_reference(path)} if path.is_file() else {}
    new = {r["key"]: reference_line(r, machine) for r in records if r.get("status") == OK}
    new.update({ln["key"]: dict(ln) for ln in unfinished if ln["key"] not in new})
    lines = {**old, **new}
    ordered = sorted(lines.values(), key=lambda ln: (ln["spec"].get("dataset", ""),
                                                      ln["spec"].get("method", ""),
                                                      ln["spec"].get("epsilon", 0), ln["key"]))
    replace_file(path, "".join(json.dumps(ln, sort_keys=True) + "\n"
                               for ln in ordered).encode())
    return len(new)


def results_lines(reference: Reference, specs: Iterable[TrialSpec]) -> list[dict[str, Any]]:
    """The shipped results' trials (``results/reference``) of the dataset-and-method cells
    of ``specs``, at every budget, as reference lines: each recorded its own CPU time on the
    machine it names, so a cell the results hold is priced from them although no
    ``costs.jsonl`` measured it (or measured it unfinished).

    The trials files are indexed once per version (their stat and dpbench's code) into a
    sealed cache, ``<cache_root>/reference-fits``: a plan unpickles its grid's groups only,
    not the tens of MB of records."""
    cache, inputs = kept_reading(reference.folder, reference.contents(), "reference-fits")
    index = read_kept(cache, _FITS_TAG, inputs)
    if not isinstance(index, dict):
        groups: dict[str, list[tuple[dict[str, Any], tuple[str, str, str]]]] = {}
        for key in reference.keys():
            rec = reference.get(key) or {}
            try:
                ids = identities(TrialSpec.from_dict(rec["spec"], key=key))
                line = reference_line(rec, str(rec.get("cpu") or rec.get("host") or "unknown"))
            except (KeyError, TypeError, ValueError):
                continue                  # not a trial this dpbench reads, or no size: none
            groups.setdefault(ids[1], []).append((line, ids))
        index = {g: pickle.dumps(v) for g, v in groups.items()}
        write_kept(cache, _FITS_TAG, inputs, index, quiet=True)
    out = []
    for group in sorted({identities(s)[1] for s in specs} & index.keys()):
        for line, ids in pickle.loads(index[group]):
            IDENTITIES[line["key"]] = ids
            out.append(line)
    return out


_FITS_TAG = b"dpbench-reference-fits 2\n"


def summary(files: Sequence[tuple[Path, Sequence[Mapping[str, Any]]]]) -> str:
    """Where a plan's reference figures come from: each file and its trial count, when,
    on what machines."""
    lines = [ln for _, part in files for ln in part]
    days = sorted({ln["finished_at"][:10] for ln in lines if ln["finished_at"]})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}" if days else "undated"
    machines = sorted({ln["machine"] for ln in lines})
    where = ", ".join(f"{len(part)} in {path.parent.name}/{path.name}" for path, part in files)
    return (f"reference fits: {len(lines)} trial(s) ({where}), measured {when} on "
            f"{'; '.join(machines)}; your machine's times differ, and your own trials "
            "replace them once stored")
