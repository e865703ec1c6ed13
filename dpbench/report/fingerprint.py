"""When a derived folder (an experiment's figures, a site page) must be built again: a
digest of everything it is built from, kept beside it.

The digest covers the composed config with the code commit and version (text), the stat
(size, modification time) of each trial record of the grid, the content of the input files
(experiment and figure yamls, the paper's folder: numbers, claims, notes) and of the
report code, so an edit shows before it is committed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from dpbench.checksum import canonical_json
from dpbench.roots import commit, paper_dir, version_text
from dpbench.runner.schema import entries
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import ResultStore

FINGERPRINT_FILE = ".fingerprint"
REPORT_CODE = Path(__file__).resolve().parent


def fingerprint(specs: Sequence[TrialSpec], store: ResultStore, config: str,
                files: Iterable[Path], stats: Mapping[str, tuple[int, int]] | None = None
                ) -> str:
    """A digest of ``config`` (text), the stat of each trial record of ``specs`` (from
    ``stats``, one listing of the store for many grids, :meth:`ResultStore.file_stats`;
    else each record's file looked up), the reference behind the store (its sha256) and the
    content of ``files``."""
    h = hashlib.sha256(config.encode())
    if store.reference is not None:
        h.update(f"reference:{store.reference.manifest().get('sha256')};".encode())
    for s in specs:
        st = stats.get(s.key) if stats is not None else store.file_stat(s.key)
        h.update((f"{s.key}:-;" if st is None else f"{s.key}:{st[0]}:{st[1]};").encode())
    for f in sorted(set(files)):
        try:
            h.update(str(f).encode() + f.read_bytes())
        except OSError:
            h.update(f"{f}:-".encode())
    return h.hexdigest()


#: top-level config keys that say how trials run, never what a figure shows (workers, the
#: progress bar, SLURM's settings): left out of the digest, so ``runner.n_jobs=1`` draws
#: nothing again
NOT_DRAWN = ("runner",)


def config_text(cfg: DictConfig) -> str:
    """The code commit, the version and the composed config (without :data:`NOT_DRAWN`),
    as one text."""
    drawn = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items()
             if k not in NOT_DRAWN}
    return f"{commit()}\n{version_text()}\n{canonical_json(drawn)}"


def report_files(cfg: DictConfig) -> list[Path]:
    """The files an experiment's report depends on beyond its trials and the commit: its
    experiment and figure yamls, its paper's folder and the report code."""
    files = [entries("experiment")[str(cfg.experiment.name)]]
    figs = entries("figure")
    files += [figs[f] for f in cfg.experiment.get("figures") or [] if isinstance(f, str)
              and f in figs]
    name = cfg.experiment.get("paper")
    if name:
        try:
            files += [f for f in paper_dir(str(name)).rglob("*") if f.is_file()]
        except ValueError:
            pass
    return files + sorted(REPORT_CODE.rglob("*.py"))


def is_current(folder: Path, digest: str) -> bool:
    """Was ``folder`` built from what ``digest`` describes (and finished)?"""
    try:
        return (folder / FINGERPRINT_FILE).read_text() == digest
    except OSError:
        return False


def mark_built(folder: Path, digest: str) -> None:
    """Record that ``folder`` is built from ``digest`` (written last: a build that died
    is built again)."""
    (folder / FINGERPRINT_FILE).write_text(digest)
