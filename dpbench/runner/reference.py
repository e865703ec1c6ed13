"""The reference results that ship with dpbench: a read-only store beside the local one.

``results/reference/trials/<experiment>@<profile>.jsonl.xz`` hold stored trial records (one
JSON object a line, xz; one file a grid, so a grid added or re-run rewrites its own file
and the repository's history keeps every other file once), each with its provenance as the
trial recorded it (commit, host, CPU model, cores, finish time, library versions, CPU
seconds, peak memory), and ``MANIFEST.json`` says how many, from which commits and hosts,
and each file's sha256. A :class:`~dpbench.runner.store.
ResultStore` opened with a reference answers a key it does not hold from it, the record
marked ``origin: reference`` (a local trial is ``this machine``), so ``status``,
``figures``, ``leaderboard``, ``site`` and ``plan`` read the published trials where the
local store lacks them and ``run`` runs only what neither holds. The local store wins:
a trial re-run here replaces the reference's in every reader, and ``dpbench compare`` sets
the two side by side.

``make reference`` rebuilds the files from a store (:func:`write_reference`), keeping the
trials of the grids given; :func:`stale_keys` names reference trials whose key no current
grid has (a key that moved), so they are shown as stale, never read as current.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import lzma
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpbench.checksum import code_digest, read_kept, replace_file, write_kept
from dpbench.compile_cache import cache_root
from dpbench.roots import REPO

REFERENCE = "reference"
LOCAL = "this machine"
#: the one trials file of a reference written before it was kept a file per grid (still read)
TRIALS_FILE = "trials.jsonl.gz"
#: the folder of a reference's trials files, one per part (a grid, ``experiment@profile``)
PARTS_DIR = "trials"
#: the part of a record :func:`write_reference` is not told the grid of
OTHER_PART = "other"
#: a part's file name: its name and this suffix. xz, not gzip: a trial's metrics are
#: full-precision floats that gzip's 32 KB window leaves at ~650 bytes a trial of ~60 and
#: xz at ~470 (tens of thousands of such trials then fit the size cap); it decompresses
#: at ~60 MB/s
PART_SUFFIX = ".jsonl.xz"
#: the xz preset: deterministic, the same records give the same bytes
XZ_PRESET = 9
MANIFEST_FILE = "MANIFEST.json"
#: the size the shipped reference may take (bytes), kept by a test
SIZE_CAP = 25 * 2**20


@functools.lru_cache(maxsize=1)
def machine_text() -> str:
    """This machine as a trial records it: CPU model and core count (Linux), else the OS."""
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh
                          if ln.startswith("model name")), None)
    except OSError:
        pass
    return f"{model or os.uname().sysname}, {os.cpu_count()} cores"


#: environment: a folder to read the reference from instead, or ``off`` for none (the
#: test suite sets ``off``: its grids must run, not be answered by shipped trials)
ENV = "DPBENCH_REFERENCE"


def default_dir() -> Path:
    """``results/reference`` of the repository (shipped with the code)."""
    return REPO / "results" / REFERENCE


def shipped(enabled: bool = True) -> Reference | None:
    """The reference a store reads beside itself: ``DPBENCH_REFERENCE`` (a folder, or
    ``off``), else the repository's; None when disabled or absent."""
    where = os.environ.get(ENV, "")
    if not enabled or where.lower() == "off":
        return None
    found = Reference(Path(where) if where else default_dir())
    return found if found.exists() else None


#: the fields of a record a reference keeps unparsed for each trial (:meth:`Reference.brief`):
#: its status and what its cost is read from (``runner.cost.record_cpu_seconds``)
BRIEF_FIELDS = ("key", "status", "cpu_s", "timing", "host_probe_s")
_BRIEFS_TAG = b"dpbench-reference-briefs 3\n"

#: how each line of the trials file begins (:func:`record_line`): a record's key is read
#: from it without parsing the record, which is parsed when it is asked for
LINE_HEAD = '{"key":"'


def record_line(record: Mapping[str, Any]) -> str:
    """One line of the trials file: the record as sorted, compact JSON with its ``key``
    first (:data:`LINE_HEAD`)."""
    rest = json.dumps({k: v for k, v in record.items() if k != "key"}, sort_keys=True,
                      separators=(",", ":"))
    return '{"key":' + json.dumps(str(record["key"])) + ("," + rest[1:] if rest != "{}"
                                                           else "}")


def kept_reading(path: Path, data: bytes, folder: str) -> tuple[Path, str]:
    """Where a reading of file (or folder) ``path`` is kept (``<cache_root>/<folder>/``, one
    cache file per path) and the digest of what the reading depends on: ``data`` (a file's
    bytes, or a folder's :meth:`Reference.contents`) and dpbench's code
    (``checksum.read_kept`` rebuilds it when either changed)."""
    inputs = hashlib.sha256(data + code_digest().encode()).hexdigest()
    where = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return cache_root() / folder / f"{where}.pickle", inputs


class Reference:
    """The reference records by key: each trials file read once, lazily, when a record of
    it is first asked for, and each record parsed when it is first asked for (a command
    asks for a few grids')."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._lines: dict[Path, dict[str, bytes | dict[str, Any]]] = {}
        self._kept: dict[str, dict[str, Any]] | None = None
        self._manifest: dict[str, Any] | None = None

    def files(self) -> list[Path]:
        """The trials files, sorted: one per part (:data:`PARTS_DIR`), and the single
        :data:`TRIALS_FILE` of an older reference."""
        parts = sorted([*(self.folder / PARTS_DIR).glob("*" + PART_SUFFIX),
                        *(self.folder / PARTS_DIR).glob("*.jsonl.gz")])
        single = self.folder / TRIALS_FILE
        return parts + ([single] if single.is_file() else [])

    def exists(self) -> bool:
        return bool(self.files())

    def contents(self) -> bytes:
        """What the reference's readings depend on: each trials file's name, size,
        modification time and inode (a cache kept of a reading, :func:`kept_reading`, is
        rebuilt when one changed; no file is read for it: the reference is tens of MB)."""
        out = []
        for f in self.files():
            st = f.stat()
            out.append(f"{f.relative_to(self.folder).as_posix()}:{st.st_size}:"
                       f"{st.st_mtime_ns}:{st.st_ino}\n")
        return "".join(out).encode()

    def _load(self, path: Path) -> dict[str, bytes | dict[str, Any]]:
        """Each key's line in file ``path`` (or its record, once parsed; a line of an older
        file that does not begin with :data:`LINE_HEAD` is parsed here). The file is
        decompressed whole and split as bytes: a line is decoded only when its record is
        asked for."""
        if path not in self._lines:
            lines: dict[str, bytes | dict[str, Any]] = {}
            head = LINE_HEAD.encode()
            for line in decompress(path).split(b"\n"):
                if line.startswith(head):
                    lines[line[len(head):line.index(b'"', len(head))].decode()] = line
                elif line.strip():
                    rec = json.loads(line)
                    lines[rec["key"]] = rec
            self._lines[path] = lines
        return self._lines[path]

    def get(self, key: str) -> dict[str, Any] | None:
        """The reference record of ``key`` (marked ``origin: reference``), or None. Only
        the file that holds it is read."""
        where = self._index()["where"].get(key)
        if where is None:
            return None
        lines = self._load(self.folder / where)
        found = lines.get(key)
        if isinstance(found, bytes):
            found = lines[key] = json.loads(found)
        if found is not None:
            found["origin"] = REFERENCE
        return found

    def _index(self) -> dict[str, dict[str, Any]]:
        """Each key's brief (:data:`BRIEF_FIELDS` of its record) and the file that holds it,
        kept per version of the trials files in a sealed cache
        (``<cache_root>/reference-briefs``): a command that asks only which trials the
        reference holds and what they cost (``plan``, ``status``) neither decompresses the
        records nor parses one, and a record asked for decompresses its own file only."""
        if self._kept is None:
            cache, inputs = kept_reading(self.folder, self.contents(), "reference-briefs")
            kept = read_kept(cache, _BRIEFS_TAG, inputs)
            if not isinstance(kept, dict):
                where: dict[str, str] = {}
                for path in self.files():
                    name = path.relative_to(self.folder).as_posix()
                    for key in self._load(path):
                        where.setdefault(key, name)
                self._kept = {"where": where, "briefs": {}}      # what ``get`` looks up
                briefs = {}
                for key in where:
                    rec = self.get(key) or {}
                    briefs[key] = {f: rec[f] for f in BRIEF_FIELDS if f in rec}
                kept = {"where": where, "briefs": briefs}
                write_kept(cache, _BRIEFS_TAG, inputs, kept, quiet=True)
            self._kept = kept
        return self._kept

    def brief(self, key: str) -> dict[str, Any] | None:
        """What a cost needs of ``key``'s record (:data:`BRIEF_FIELDS`, marked ``origin:
        reference``), unparsed; None if the reference does not hold it."""
        found = self._index()["briefs"].get(key)
        return None if found is None else {**found, "origin": REFERENCE}

    def status(self, key: str) -> str | None:
        """``ok`` if the reference holds ``key`` (it holds ok trials only:
        :func:`write_reference`), else None; no record is parsed."""
        return "ok" if key in self._index()["where"] else None

    def keys(self) -> list[str]:
        return sorted(self._index()["where"])

    def __len__(self) -> int:
        return len(self._index()["where"])

    def manifest(self) -> dict[str, Any]:
        """``MANIFEST.json`` (empty without one), read once."""
        if self._manifest is None:
            path = self.folder / MANIFEST_FILE
            self._manifest = json.loads(path.read_text()) if path.is_file() else {}
        return self._manifest


def origin_of(record: Mapping[str, Any]) -> str:
    """Where a record comes from: ``reference, <commit>, <date>, <host>`` or ``this
    machine``."""
    if record.get("origin") != REFERENCE:
        return LOCAL
    commit = str(record.get("commit") or "unknown commit")[:10]
    date = str(record.get("finished_at") or "")[:10] or "undated"
    host = record.get("cpu") or record.get("host") or "unknown host"
    return f"{REFERENCE}, {commit}, {date}, {host}"


def write_reference(records: Iterable[Mapping[str, Any]], folder: str | Path,
                    grids: Mapping[str, Mapping[str, int]] | None = None,
                    parts: Mapping[str, str] | None = None) -> Path:
    """Write ``records`` (ok trials) as the reference in ``folder``: one xz JSON lines file per
    part, ``trials/<part>.jsonl.xz`` (``parts`` maps a key to its part, a grid's
    ``experiment@profile``; a key it does not name goes to :data:`OTHER_PART`), each sorted by
    key, then the manifest (counts, commits, hosts, the machine speeds recorded, each file's
    trials, bytes and sha256, one sha256 over them, and ``grids``: per ``experiment@profile``
    its trials held and asked). A part whose file already holds exactly its lines keeps that
    file's bytes (compressing is the slow step); a file no part fills any more is removed, and
    an older layout's files too. Refuses a result over :data:`SIZE_CAP` before any file is
    replaced. Deterministic: the same records give the same bytes. Returns the folder of the
    trials files."""
    folder = Path(folder)
    out = folder / PARTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    kept = sorted((dict(r) for r in records if r.get("status") == "ok"),
                  key=lambda r: r["key"])
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in kept:
        r.pop("origin", None)
        grouped.setdefault((parts or {}).get(r["key"], OTHER_PART), []).append(r)
    written: dict[str, bytes] = {}
    files: dict[str, dict[str, Any]] = {}
    for part, recs in sorted(grouped.items()):
        name = f"{PARTS_DIR}/{part}{PART_SUFFIX}"
        raw = "".join(record_line(r) + "\n" for r in recs).encode()
        old = folder / name
        same = old.is_file() and _decompressed_or_none(old) == raw
        data = written[name] = old.read_bytes() if same else lzma.compress(raw, preset=XZ_PRESET)
        files[name] = {"trials": len(recs), "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()}
    size = sum(len(b) for b in written.values())
    if size > SIZE_CAP:
        raise ValueError(f"the reference would take {size / 2**20:.1f} MB, more than the "
                         f"{SIZE_CAP / 2**20:.0f} MB cap; keep fewer grids")
    for name, data in written.items():
        replace_file(folder / name, data)
    for old in [*out.glob("*.jsonl.*"), folder / TRIALS_FILE]:
        if old.is_file() and old.relative_to(folder).as_posix() not in written:
            old.unlink()
    manifest = {"trials": len(kept), "bytes": size, "files": files,
                "sha256": files_digest(files),
                "commits": dict(Counter(str(r.get("commit")) for r in kept)),
                "hosts": dict(Counter(str(r.get("cpu") or r.get("host")) for r in kept)),
                # the machine's speed beside the trials that recorded it (runner.hostspeed)
                "host_probes": probe_summary(kept),
                "finished": [min((str(r.get("finished_at")) for r in kept), default=None),
                             max((str(r.get("finished_at")) for r in kept), default=None)],
                "grids": {g: dict(v) for g, v in sorted((grids or {}).items())}}
    replace_file(folder / MANIFEST_FILE,
                 (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    return out


def probe_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How many of ``records`` carry their machine's speed (``host_probe_s``), and its
    range over them (None without any)."""
    probes = [float(r["host_probe_s"]) for r in records
              if isinstance(r.get("host_probe_s"), (int, float))]
    return {"trials": len(probes),
            "range_s": [min(probes), max(probes)] if probes else None}


def decompress(path: Path) -> bytes:
    """A trials file's lines: xz (:data:`PART_SUFFIX`), or gzip (an older layout's)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else lzma.decompress(data)


def _decompressed_or_none(path: Path) -> bytes | None:
    try:
        return decompress(path)
    except (OSError, EOFError, lzma.LZMAError):
        return None


def compacted(record: Mapping[str, Any], keep: Iterable[str]) -> dict[str, Any]:
    """``record`` with only the metrics named in ``keep``, and ``metrics_kept`` naming them:
    what the reference ships of a grid too large to ship whole (its experiment's
    ``reference_metrics``: the metrics its figures read). Provenance, privacy and timing
    stay whole; a reader asking for a dropped metric finds it missing, never invented."""
    names = sorted(set(keep))
    out = dict(record)
    out["metrics"] = {k: v for k, v in (record.get("metrics") or {}).items() if k in names}
    out["metrics_kept"] = names
    return out


def kept_metrics(asks: Iterable[Sequence[str] | None]) -> list[str] | None:
    """The metrics the reference keeps of a trial that the grids asking for it keep
    (``reference_metrics`` each; None: all): all if any grid keeps all, else their union."""
    union: set[str] = set()
    for keep in asks:
        if keep is None:
            return None
        union |= set(keep)
    return sorted(union)


def files_digest(files: Mapping[str, Mapping[str, Any]]) -> str:
    """One sha256 for the whole reference: over each trials file's name and sha256 (the
    manifest's ``files``), in name order."""
    return hashlib.sha256("".join(f"{name}:{f['sha256']}\n" for name, f in
                                  sorted(files.items())).encode()).hexdigest()


def coverage_markdown(manifest: Mapping[str, Any]) -> str:
    """What the reference holds of each grid it tracks (``MANIFEST.json``'s ``grids``): a
    line counting the complete, partial and empty grids, then a Markdown table of each
    grid's trials held / asked. A grid it holds none of shows "not run" on the site from a
    clean clone."""
    grids = manifest.get("grids", {})
    rows, tally = [], Counter()
    for name, g in sorted(grids.items()):
        experiment, profile = name.rsplit("@", 1)
        held, asked = int(g.get("held", 0)), int(g.get("asked", 0))
        state = "complete" if asked and held >= asked else "none yet" if not held else "partial"
        tally[state] += 1
        if g.get("metrics"):
            state += f" (metrics kept: {', '.join(g['metrics'])})"
        rows.append(f"| {experiment} | {profile} | {held:,} / {asked:,} | {state} |")
    head = (f"{len(grids)} grids: {tally['complete']} complete, {tally['partial']} partial, "
            f"{tally['none yet']} with no trial yet; {int(manifest.get('trials', 0)):,} "
            f"trials, {int(manifest.get('bytes', 0)) / 2**20:.2f} MB.")
    return "\n".join([head, "", "| experiment | profile | trials held / asked | |",
                      "|---|---|---|---|", *rows]) + "\n"


def stale_keys(reference: Reference, current: Iterable[str]) -> list[str]:
    """The reference keys no current grid has (their trial's key moved: the code or a
    setting changed); readers never show them as current."""
    now = set(current)
    return [k for k in reference.keys() if k not in now]
