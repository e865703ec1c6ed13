"""When a derived folder (an experiment's figures, a site page) must be built again: a
digest of everything it is built from, kept beside it.

The digest covers the composed config with the code commit and version (text), the stat
(size, modification time) of each trial record of the grid, the content of the input files
(experiment and figure yamls, the paper's folder: numbers, claims, notes) and of the
report code, so an edit shows before it is committed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from dpbench.roots import commit, paper_dir, version_text
from dpbench.runner.schema import entries
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import ResultStore

FINGERPRINT_FILE = ".fingerprint"
REPORT_CODE = Path(__file__).resolve().parent


def fingerprint(specs: Sequence[TrialSpec], store: ResultStore, config: str,
                files: Iterable[Path]) -> str:
    """A digest of ``config`` (text), the stat of each trial record of ``specs`` and the
    content of ``files``."""
    h = hashlib.sha256(config.encode())
    for s in specs:
        try:
            st = store.path(s.key).stat()
            h.update(f"{s.key}:{st.st_size}:{st.st_mtime_ns};".encode())
        except OSError:
            h.update(f"{s.key}:-;".encode())
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
    return f"{commit()}\n{version_text()}\n{OmegaConf.to_yaml(OmegaConf.create(drawn))}"


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
