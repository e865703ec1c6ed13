"""What one site page states, as data: :class:`Page` (saved as ``page.json`` beside the
page) with its :class:`Provenance`, and the fingerprint that says when to rebuild it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dpbench.report.fingerprint import is_current, mark_built
from dpbench.runner.reference import origin_of
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import FAILED, OK, ResultStore

EXPERIMENT, ARENA = "experiment", "arena"
PAGE_FILE = "page.json"


@dataclass(frozen=True)
class Provenance:
    """Where a page's numbers come from: the commits, library versions and host kinds its
    ok trials ran with (each with its trial count), when the first and last of them
    finished, and the profile and trials per cell of its grid."""

    profile: str
    origin: str                          # e.g. "smoke profile, 2 trials per cell; <caveat>"
    commits: dict[str, int] = field(default_factory=dict)
    versions: dict[str, dict[str, int]] = field(default_factory=dict)
    hosts: dict[str, int] = field(default_factory=dict)
    first: str = ""
    last: str = ""
    #: where the ok trials come from (``reference, <commit>, <date>, <host>`` or ``this
    #: machine``: ``runner/reference.py``), with their counts
    origins: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """One (experiment, profile) page: an experiment's report or an arena's board."""

    kind: str                            # EXPERIMENT | ARENA
    experiment: str
    profile: str
    paper: str | None
    description: str
    folder: str                          # relative to the site root
    trials_ok: int
    trials_asked: int
    trials_failed: int
    shortfalls: list[str]
    claims: dict[str, int]               # verdict -> count (PASS / FAIL / SKIP)
    alerts: list[str]                    # privacy facts a reader must see first
    notes: list[str]                     # relation / budget statements
    provenance: Provenance
    #: an ad-hoc grid's overrides (``dpbench run`` with the grid changed on the command
    #: line), empty for a grid as written
    custom: str = ""

    @property
    def complete(self) -> bool:
        """Does every cell hold the trials its grid asks for?"""
        return not self.shortfalls and self.trials_ok >= self.trials_asked

    def save(self, folder: Path, fingerprint: str) -> None:
        """``page.json`` then ``.fingerprint`` (last: a page whose build died is rebuilt)."""
        (folder / PAGE_FILE).write_text(json.dumps(asdict(self), indent=1, sort_keys=True))
        mark_built(folder, fingerprint)

    @classmethod
    def load(cls, folder: Path, fingerprint: str) -> Page | None:
        """The page saved in ``folder`` if its fingerprint is ``fingerprint``, else None."""
        try:
            if not is_current(folder, fingerprint):
                return None
            data = json.loads((folder / PAGE_FILE).read_text())
            return cls(**{**data, "provenance": Provenance(**data["provenance"])})
        except (OSError, ValueError, TypeError, KeyError):
            return None


def provenance(specs: Sequence[TrialSpec], store: ResultStore, profile: str,
               origin: str) -> tuple[Provenance, Counter[str]]:
    """The :class:`Provenance` of the grid's ok trials, and the count of its records per
    status (ok, failed)."""
    commits: Counter[str] = Counter()
    hosts: Counter[str] = Counter()
    libs: dict[str, Counter[str]] = {}
    status: Counter[str] = Counter()
    times: list[str] = []
    origins: Counter[str] = Counter()
    for s in specs:
        rec = store.get(s.key)
        if rec is None:
            continue
        status[str(rec.get("status"))] += 1
        if rec.get("status") != OK:
            continue
        commits[str(rec.get("commit", "not recorded"))] += 1
        hosts[str(rec.get("cpu") or rec.get("host", "not recorded"))] += 1
        origins[origin_of(rec)] += 1
        for lib, ver in (rec.get("versions") or {}).items():
            libs.setdefault(lib, Counter())[str(ver)] += 1
        if rec.get("finished_at"):
            times.append(str(rec["finished_at"]))
    return Provenance(profile, origin, dict(commits.most_common()),
                      {lib: dict(sorted(c.items())) for lib, c in sorted(libs.items())},
                      dict(hosts.most_common()), min(times, default=""),
                      max(times, default=""), dict(origins.most_common())), status


def counts(status: Counter[str]) -> tuple[int, int]:
    """(ok, failed) of a status count."""
    return status.get(OK, 0), status.get(FAILED, 0)


def claim_counts(claims_json: Path) -> dict[str, int]:
    """Verdict -> count of a ``claims.json`` (empty when there is none)."""
    try:
        rows = json.loads(claims_json.read_text())
    except (OSError, ValueError):
        return {}
    return dict(sorted(Counter(str(r.get("status")) for r in rows).items()))
