"""ResultStore: one atomically written JSON file per trial, keyed by the spec hash.

Writes go to a temporary file in the same directory, are fsynced, then renamed
over the final name, so a crash (even kill -9) leaves either the old record or
the new one, never a partial file. Records are never deleted by dpbench; a
failed record is replaced only by a later attempt at the same trial.

**Damaged records.** A record file that cannot be read (bytes that are not UTF-8, not JSON
(e.g. truncated by a full disk, or empty), JSON that is not an object) or is incomplete (a
required field missing or of the wrong type, a key that is not its file's name, an ok record
without metrics, with a metric that is neither a number nor null (undefined), or with a
``privacy.target_delta`` or ``timing.fit_s`` that is not a number: :func:`number_problem`) is
*damaged*: :meth:`ResultStore.read` returns a :class:`Damage` naming the file and why, it
never raises, and the trial counts as not done. :meth:`ResultStore.quarantine` moves the file,
bytes unchanged, to ``<root>/quarantine/`` with a ``.why.json`` beside it (nothing is
deleted); the next run then recomputes the trial.

**Claims.** A run computes a trial only while it holds the trial's lease,
``<root>/leases/<key>.json``, created with ``O_CREAT | O_EXCL`` (atomic, also on NFS) and
holding the holder's host, pid and expiry. So two runs of one grid into one store (two local
runs, or a local run beside a SLURM array) split the trials instead of computing them twice.
A lease expires when its holder dies: on the same machine (host name, boot id and pid
namespace all equal) it is stale as soon as its pid is gone (or is another process, told by
its start time), elsewhere once its expiry has passed; a live holder pushes the expiry
forward every ``LEASE_TTL_S / 4`` seconds (:meth:`ResultStore.keep_alive`). A stale lease is
broken by renaming it aside and checking that what was moved is the stale lease itself, so
a killed run never blocks a trial and two runs breaking one stale lease never both win.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpbench.artifacts import atomic_write_bytes

if TYPE_CHECKING:
    from dpbench.runner.reference import Reference

OK, FAILED, CORRUPT = "ok", "failed", "corrupt"
#: the schema of a grid's stored refused cells (runner/refusals.py): not a trial record
REFUSALS_SCHEMA = "dpbench-refusals/1"

#: fields every record holds, then the fields of an ok / failed record (name: type)
REQUIRED: dict[str, type] = {"key": str, "status": str, "spec": dict}
REQUIRED_BY_STATUS: dict[str, dict[str, type]] = {
    OK: {"metrics": dict, "privacy": dict, "timing": dict},
    FAILED: {"error": str},
}
#: fields inside an ok record's sections that the report reads
REQUIRED_NESTED: dict[str, tuple[str, ...]] = {"privacy": ("target_delta",), "timing": ("fit_s",)}

#: a lease on another machine is stale this long after its last renewal
LEASE_TTL_S = 900.0
#: a lease file that is still empty or unreadable this long after its creation is stale
LEASE_WRITE_GRACE_S = 30.0


@dataclass(frozen=True)
class Damage:
    """A record file that cannot be used: its trial's key, its path and why."""

    key: str
    path: Path
    reason: str


@dataclass(frozen=True)
class Quarantined:
    """A damaged record moved aside: where it is now, where it was, why and when."""

    key: str
    path: Path
    origin: str
    reason: str
    at: str


@dataclass(frozen=True)
class Lease:
    """A claim held by this process on one trial (``token`` tells it from later claims)."""

    key: str
    path: Path
    token: str


def record_problem(record: Any, key: str) -> str | None:
    """Why a parsed record cannot be used as the record of trial ``key`` (None if it can)."""
    if not isinstance(record, dict):
        return f"valid JSON but {_json_type(record)}, not a record (a JSON object)"
    need = dict(REQUIRED)
    status = record.get("status")
    if status in REQUIRED_BY_STATUS:
        need.update(REQUIRED_BY_STATUS[status])
    missing = [f for f in need if f not in record]
    if missing:
        return f"incomplete record: missing field(s) {', '.join(missing)}"
    wrong = [f"{f} is {_json_type(record[f])}" for f, t in need.items()
             if not isinstance(record[f], t)]
    if wrong:
        return f"incomplete record: {'; '.join(wrong)}"
    if status not in REQUIRED_BY_STATUS:
        return f"status {status!r} is neither {OK!r} nor {FAILED!r}"
    if record["key"] != key:
        return f"holds the record of trial {record['key'][:12]}…, not of its file name's trial"
    if status == OK:
        absent = [f"{sec}.{f}" for sec, fields in REQUIRED_NESTED.items() for f in fields
                  if f not in record[sec]]
        if absent:
            return f"incomplete record: missing field(s) {', '.join(absent)}"
        return number_problem(record)
    return None


def is_number(value: Any) -> bool:
    """A JSON number (NaN and infinities included, as Python's json writes them); a boolean
    is not one."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def number_problem(record: dict[str, Any]) -> str | None:
    """Why an ok record's numbers cannot be averaged: no metric at all, a metric that is
    neither a number nor null (a string, a boolean, a list...), or a
    ``privacy.target_delta`` or ``timing.fit_s`` that is not a number. A metric that is
    legitimately undefined (NaN, inf) is written as null (``execute``: standard JSON): the
    report reads it as NaN and counts it as a missing trial, never as a value."""
    if not record["metrics"]:
        return "ok record without any metric (metrics is empty)"
    wrong = [f"metrics.{k} is {_json_type(v)}" for k, v in record["metrics"].items()
             if not (is_number(v) or v is None)]
    wrong += [f"{sec}.{f} is {_json_type(record[sec][f])}"
              for sec, fields in REQUIRED_NESTED.items() for f in fields
              if not is_number(record[sec][f])]
    if wrong:
        return f"not a number: {'; '.join(wrong)}"
    return None


def parse_record(data: bytes, key: str) -> dict[str, Any] | str:
    """The record stored as ``data`` for trial ``key``, or why it is damaged."""
    if not data:
        return "empty file (0 bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return (f"not valid JSON, e.g. cut short ({exc.msg}: line {exc.lineno} column "
                f"{exc.colno} of {len(data)} bytes)")
    return record_problem(record, key) or record


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


# --- which machine and process holds a lease ---------------------------------------------------

def _read_text(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


@cache
def machine() -> dict[str, str | None]:
    """This machine as a lease names it: host name, boot id and pid namespace (a pid means
    the same process only when all three match)."""
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    return {"host": socket.gethostname(), "boot_id": _read_text(
        "/proc/sys/kernel/random/boot_id"), "pid_ns": pid_ns}


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from /proc), None if unknown."""
    stat = _read_text(f"/proc/{pid}/stat")
    if stat is None:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def pid_alive(pid: int, start: str | None = None) -> bool:
    """Whether process ``pid`` runs (not a zombie) and, if ``start`` is given and /proc can
    tell, is the process that started then (not a later one reusing the pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    stat = _read_text(f"/proc/{pid}/stat")
    if stat is None:
        return True
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return False
    return start is None or fields[19] == start


def lease_alive(info: dict[str, Any], now: float) -> bool:
    """Whether the holder of a lease holding ``info`` may still be at work: on this machine
    while its pid lives, elsewhere until its expiry."""
    here = machine()
    if all(info.get(k) == v for k, v in here.items()) and isinstance(info.get("pid"), int):
        return pid_alive(info["pid"], info.get("pid_start"))
    try:
        return now < float(info["expires_unix"])
    except (KeyError, TypeError, ValueError):
        return False


#: the mark of an ad-hoc grid's folders and run notes (``<name>-<profile>-custom-<hash>``)
CUSTOM = "-custom-"

#: records remembered by :meth:`ResultStore.read` (path -> (file version, parsed)), and the
#: most kept; :data:`FILE_READS` counts the reads of each record file in this process (the
#: read-once test reads it)
READ_CACHE_SIZE = 200_000
_READ: dict[str, tuple[tuple[int, int, int, int], Any]] = {}
FILE_READS: Counter[str] = Counter()


class ResultStore:
    """Directory ``<root>/trials/<key[:2]>/<key>.json``, with ``<root>/quarantine/`` for
    damaged records, ``<root>/leases/`` for the claims of running trials, ``<root>/runs/``
    for the (experiment, profile) grids a ``dpbench run`` was asked for and
    ``<root>/refusals/`` for the cells each arena run refused (``runner/refusals.py``). With a
    ``reference`` (``runner/reference.py``: the trials that ship with dpbench) a key the
    directory does not hold is answered from it, the record marked ``origin: reference``;
    the directory's own record always wins."""

    def __init__(self, root: str | Path, reference: Reference | None = None) -> None:
        self.root = Path(root)
        self.reference = reference
        self.trials = self.root / "trials"
        self.quarantine_dir = self.root / "quarantine"
        self.leases = self.root / "leases"
        self.runs_dir = self.root / "runs"
        self.refusals_dir = self.root / "refusals"

    # --- runs ----------------------------------------------------------------------------------

    def mark_run(self, experiment: str, profile: str, trials: int, *, suffix: str = "",
                 overrides: Sequence[str] = ()) -> None:
        """Note that a run of ``experiment``'s ``profile`` grid (``trials`` trials) started,
        so ``figures`` can tell a grid that was run (and may be partial) from one whose
        trials are stored only because other experiments share them. An ad-hoc grid (one
        changed on the command line) is noted apart, under its ``-custom-<hash>``
        ``suffix``, with the ``overrides`` that make it, so the site can show it too."""
        info = {"experiment": experiment, "profile": profile, "trials": trials,
                "overrides": list(overrides), "started_at": datetime.now(UTC).isoformat(),
                **machine(), "pid": os.getpid()}
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.runs_dir / f"{experiment}@{profile}{suffix}.json",
                           json.dumps(info, sort_keys=True).encode())

    def was_run(self, experiment: str, profile: str) -> bool:
        """Has a ``dpbench run`` of this (experiment, profile) grid ever started here (or
        does the reference behind the store publish it)?"""
        return (experiment, profile) in self.runs()

    def _run_files(self) -> list[Path]:
        return sorted(self.runs_dir.glob("*@*.json")) if self.runs_dir.is_dir() else []

    def runs(self) -> list[tuple[str, str]]:
        """Every (experiment, profile) grid as written that a ``dpbench run`` started here,
        and every grid the reference behind the store publishes, sorted."""
        here = {tuple(p.stem.rsplit("@", 1)) for p in self._run_files()
                if CUSTOM not in p.stem.rsplit("@", 1)[1]}
        if self.reference is not None:
            here |= {tuple(g.rsplit("@", 1)) for g in self.reference.manifest().get("grids", {})}
        return sorted(here)

    def custom_runs(self) -> list[tuple[str, str, list[str]]]:
        """Every ad-hoc grid a ``dpbench run`` started here: (experiment, profile, the
        command line's overrides that make it), in file name order; a note that cannot be
        read is skipped (the grids as written are unaffected)."""
        out = []
        for p in self._run_files():
            if CUSTOM not in p.stem.rsplit("@", 1)[1]:
                continue
            try:
                info = json.loads(p.read_text())
                out.append((str(info["experiment"]), str(info["profile"]),
                            [str(o) for o in info.get("overrides", [])]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return out

    # --- refused cells (runner/refusals.py) ----------------------------------------------------

    def put_refusals(self, name: str, record: dict[str, Any]) -> Path:
        """Atomically write the refused cells of grid ``name`` (``runner.refusals.keep``)
        into ``<root>/refusals/<name>.json``, outside ``trials/``: never a trial record."""
        self.refusals_dir.mkdir(parents=True, exist_ok=True)
        final = self.refusals_dir / f"{name}.json"
        atomic_write_bytes(final, json.dumps(record, sort_keys=True, indent=1).encode())
        return final

    def read_refusals(self, name: str) -> dict[str, Any] | None:
        """The refused cells stored for grid ``name`` (a :data:`REFUSALS_SCHEMA` object), or
        None (absent, unreadable, or of another schema). Read once per version of its file,
        as :meth:`read` reads a record."""
        p = self.refusals_dir / f"{name}.json"
        try:
            st = p.stat()
        except OSError:
            return None
        version = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        hit = _READ.get(str(p))
        if hit is not None and hit[0] == version:
            return hit[1]
        try:
            data = json.loads(p.read_bytes())
        except (OSError, ValueError):
            return None
        FILE_READS[str(p)] += 1
        found = data if isinstance(data, dict) and data.get("schema") == REFUSALS_SCHEMA \
            else None
        _READ[str(p)] = (version, found)
        return found

    def path(self, key: str) -> Path:
        return self.trials / key[:2] / f"{key}.json"

    # --- reading -------------------------------------------------------------------------------

    def read(self, key: str) -> dict[str, Any] | Damage | None:
        """The record of ``key``; a :class:`Damage` if its file is unusable; None if absent.

        Read once per version of its file: the parsed record is remembered with the file's
        identity (inode, size, modification time; a write replaces the inode), so the many
        questions a command asks about one trial (its status, its seconds, its row of the
        frame, the fingerprint's) cost one read and one parse, while a record another
        process writes or moves meanwhile is read again (the change time too enters the
        identity). The record returned is shared: do not change it."""
        p = self.path(key)
        try:
            st = p.stat()
        except FileNotFoundError:
            return None if self.reference is None else self.reference.get(key)
        except OSError as exc:
            return Damage(key, p, f"cannot be read: {exc.strerror or exc}")
        version = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        hit = _READ.get(str(p))
        if hit is not None and hit[0] == version:
            return hit[1]
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return Damage(key, p, f"cannot be read: {exc.strerror or exc}")
        FILE_READS[str(p)] += 1
        parsed = parse_record(data, key)
        found = Damage(key, p, parsed) if isinstance(parsed, str) else parsed
        if len(_READ) >= READ_CACHE_SIZE:
            del _READ[next(iter(_READ))]        # the oldest first: a bounded memory
        _READ[str(p)] = (version, found)
        return found

    def get(self, key: str) -> dict[str, Any] | None:
        """The usable record of ``key``, or None (absent or damaged)."""
        found = self.read(key)
        return found if isinstance(found, dict) else None

    def brief(self, key: str) -> dict[str, Any] | Damage | None:
        """The record of ``key`` (:meth:`read`), or for a trial only the reference holds,
        its brief (status, CPU and timing: ``Reference.brief``), which costs no parse."""
        if self.reference is not None and not self.path(key).exists():
            return self.reference.brief(key)
        return self.read(key)

    def status(self, key: str) -> str | None:
        """ok / failed, ``corrupt`` for a damaged record, None if absent."""
        if self.reference is not None and not self.path(key).exists():
            return self.reference.status(key)      # the reference's answer, unparsed
        found = self.read(key)
        if isinstance(found, Damage):
            return CORRUPT
        return None if found is None else found["status"]

    def statuses(self, keys: Iterable[str]) -> dict[str, str | None]:
        return {k: self.status(k) for k in keys}

    def damaged(self, keys: Iterable[str] | None = None) -> list[Damage]:
        """The damaged records among ``keys`` (default: every record file), in key order
        (only a file can be damaged: the keys without one are not looked up)."""
        wanted = self.keys() if keys is None else sorted(set(keys) & set(self.keys()))
        return [d for d in map(self.read, wanted) if isinstance(d, Damage)]

    def records(self) -> Iterator[dict[str, Any]]:
        """Every usable stored record, in key order."""
        for key in self.keys():
            rec = self.get(key)
            if rec is not None:
                yield rec

    def file_stat(self, key: str) -> tuple[int, int] | None:
        """(size, modification time in ns) of ``key``'s record file; None if it has none."""
        try:
            st = os.stat(f"{self.trials}/{key[:2]}/{key}.json")
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def file_stats(self, inode: bool = False) -> dict[str, tuple[int, ...]]:
        """:meth:`file_stat` of every record file, from one listing of the store (a
        command that fingerprints many grids stats each file once, and no absent one);
        ``inode``: with the file's inode last (a write replaces it: a record rewritten
        within one tick of a coarse clock, at the same size, still differs)."""
        out: dict[str, tuple[int, ...]] = {}
        try:
            folders = [d.path for d in os.scandir(self.trials) if d.is_dir()]
        except OSError:
            return out
        for folder in folders:
            with os.scandir(folder) as files:
                for f in files:
                    if f.name.endswith(".json") and not f.name.startswith("."):
                        try:
                            st = f.stat()
                        except OSError:
                            continue
                        out[f.name[:-5]] = (st.st_size, st.st_mtime_ns, st.st_ino) if inode \
                            else (st.st_size, st.st_mtime_ns)
        return out

    def keys(self) -> list[str]:
        """The key of every record file (usable or damaged), sorted."""
        if not self.trials.exists():
            return []
        return sorted(p.stem for p in self.trials.glob("*/*.json") if not p.name.startswith("."))

    # --- writing -------------------------------------------------------------------------------

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
        n = 0
        if self.trials.exists():
            cutoff = time.time() - older_than_s
            for p in self.trials.glob("*/.tmp-*"):
                with suppress(FileNotFoundError):
                    if p.stat().st_mtime < cutoff:
                        p.unlink(missing_ok=True)
                        n += 1
        return n

    # --- quarantine ----------------------------------------------------------------------------

    def quarantine(self, key: str, lease: Lease | None = None) -> Quarantined | None:
        """Move the damaged record of ``key`` to ``<root>/quarantine/`` (bytes unchanged) with
        a ``.why.json`` beside it; None if it is not damaged (any more) or another run holds
        the trial (that run moves it itself before computing it).

        Done under the trial's lease (``lease`` if the caller holds it, else claimed here), so
        a record written meanwhile by a run computing the trial is never moved."""
        held = lease or self.claim(key)
        if held is None:
            return None
        try:
            found = self.read(key)
            if not isinstance(found, Damage):
                return None
            return self._move_aside(found)
        finally:
            if lease is None:
                self.release(held)

    def _move_aside(self, damage: Damage) -> Quarantined:
        """Write the reason, then rename the record into the quarantine folder."""
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC)
        stem = f"{damage.key}.{now:%Y%m%dT%H%M%S%fZ}.{os.getpid()}"
        dest = self.quarantine_dir / f"{stem}.json"
        entry = Quarantined(damage.key, dest, str(damage.path), damage.reason, now.isoformat())
        why = {"key": entry.key, "record": dest.name, "origin": entry.origin,
               "reason": entry.reason, "at": entry.at, "by": {**machine(), "pid": os.getpid()}}
        atomic_write_bytes(self.quarantine_dir / f"{stem}.why.json",
                           json.dumps(why, indent=1).encode())
        os.rename(damage.path, dest)
        return entry

    def quarantined(self) -> list[Quarantined]:
        """Every record moved aside, oldest first (entries whose move did not happen, e.g.
        interrupted, are left out)."""
        if not self.quarantine_dir.exists():
            return []
        out = []
        for why in self.quarantine_dir.glob("*.why.json"):
            try:
                info = json.loads(why.read_text())
                entry = Quarantined(info["key"], self.quarantine_dir / info["record"],
                                    info["origin"], info["reason"], info["at"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if entry.path.exists():
                out.append(entry)
        return sorted(out, key=lambda q: (q.at, q.key))

    # --- claims --------------------------------------------------------------------------------

    def lease_path(self, key: str) -> Path:
        return self.leases / f"{key}.json"

    def _lease_info(self, lease: Lease, ttl_s: float) -> bytes:
        now = time.time()
        info = {"key": lease.key, "token": lease.token, **machine(), "pid": os.getpid(),
                "pid_start": process_start(os.getpid()), "claimed_unix": now,
                "ttl_s": ttl_s, "expires_unix": now + ttl_s,
                "expires_at": datetime.fromtimestamp(now + ttl_s, UTC).isoformat()}
        return json.dumps(info, indent=1).encode()

    def claim(self, key: str, ttl_s: float = LEASE_TTL_S) -> Lease | None:
        """Take the lease of trial ``key``: the lease, or None if a live holder has it.

        The lease file is created with O_EXCL, so of two runs claiming one trial exactly one
        succeeds; a stale lease (holder dead or expired) is broken first."""
        path = self.lease_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # a stale lease broken, then created by us or taken by another run
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._break_if_stale(path):
                    return None
                continue
            lease = Lease(key, path, uuid.uuid4().hex)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(self._lease_info(lease, ttl_s))
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:   # e.g. a full disk: no half-written lease blocks a rerun
                path.unlink(missing_ok=True)
                exc.filename = exc.filename or str(path.parent)
                raise
            return lease
        return None

    def _read_lease(self, path: Path) -> tuple[bytes, float] | None:
        """A lease file's bytes and modification time; None if there is none."""
        try:
            with open(path, "rb") as fh:
                return fh.read(), os.fstat(fh.fileno()).st_mtime
        except FileNotFoundError:
            return None

    def _stale(self, data: bytes, mtime: float, now: float) -> bool:
        try:
            info = json.loads(data)
        except ValueError:  # still being written, or its writer died mid-way
            return now - mtime > LEASE_WRITE_GRACE_S
        return not isinstance(info, dict) or not lease_alive(info, now)

    def _break_if_stale(self, path: Path) -> bool:
        """Remove the lease at ``path`` if its holder is dead or it expired; True if the path
        is free now. The lease is renamed aside first: if what was moved is not the stale
        lease just read (another run broke it and claimed the trial in between), it is put
        back, so a fresh claim is never lost."""
        seen = self._read_lease(path)
        if seen is None:
            return True
        if not self._stale(*seen, time.time()):
            return False
        aside = path.with_name(f".broken-{uuid.uuid4().hex}-{path.name}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return True
        moved = self._read_lease(aside)
        if moved is not None and moved[0] != seen[0]:
            with suppress(FileExistsError):
                os.link(aside, path)  # put the fresh lease back
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True

    def holds(self, lease: Lease) -> bool:
        """Whether the lease file is still this lease (not broken and taken over)."""
        seen = self._read_lease(lease.path)
        if seen is None:
            return False
        try:
            return json.loads(seen[0]).get("token") == lease.token
        except (ValueError, AttributeError):
            return False

    def renew(self, lease: Lease, ttl_s: float = LEASE_TTL_S) -> bool:
        """Push the lease's expiry ``ttl_s`` ahead; False if it is no longer held."""
        if not self.holds(lease):
            return False
        atomic_write_bytes(lease.path, self._lease_info(lease, ttl_s))
        return True

    def release(self, lease: Lease) -> None:
        """Give the lease up (a lease already broken and taken over is left to its holder)."""
        if self.holds(lease):
            lease.path.unlink(missing_ok=True)

    @contextmanager
    def keep_alive(self, lease: Lease, ttl_s: float = LEASE_TTL_S) -> Iterator[None]:
        """Within the block a daemon thread renews ``lease`` every ``ttl_s / 4`` seconds."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(ttl_s / 4):
                with suppress(OSError):
                    if not self.renew(lease, ttl_s):
                        return

        thread = threading.Thread(target=beat, daemon=True, name=f"dpbench-lease-{lease.key[:8]}")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def holder(self, key: str) -> dict[str, Any] | None:
        """Who holds a live lease on ``key`` (the lease's contents), or None."""
        seen = self._read_lease(self.lease_path(key))
        if seen is None or self._stale(*seen, time.time()):
            return None
        try:
            info = json.loads(seen[0])
        except ValueError:
            return {"host": "?", "pid": "?"}  # being written
        return info if isinstance(info, dict) else None

    # --- export --------------------------------------------------------------------------------

    def compact(self, out: str | Path | None = None) -> Path:
        """Flatten every record into one parquet file for analysis (read-only copy)."""
        out = Path(out) if out else self.root / "trials.parquet"
        import pandas as pd  # only here: every command reads the store, few compact it

        frame = pd.json_normalize(list(self.records()), sep=".")
        frame = frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object})
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".parquet.tmp")
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, out)
        return out
