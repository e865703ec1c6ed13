"""The workspace: what every command and the results site work on, between the command line
and the runner and report layers.

It composes the config (Hydra's compose API with dpbench's one-line refusals), expands and
validates each (experiment, profile) grid once (the grid's refused cells with their
reasons, every dataset checked against every method before any work: :func:`preflight`),
opens the store once (each record read once per command: ``ResultStore.read``), and hands
typed objects to the commands: a :class:`Grid` (config, trials, refused cells), the results
frame with its shortfalls (:func:`report_inputs`), the figure folders and boards it builds.
``dpbench.cli`` parses the command line and prints; ``dpbench.site`` builds pages from what
this module gives it. Nothing here imports either of them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import omegaconf
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from dpbench import lazy
from dpbench.checksum import code_digest, read_kept, write_kept
from dpbench.compile_cache import cache_root
from dpbench.data.files import DataError, MissingDownload, data_root
from dpbench.report.figure_keys import check_figure
from dpbench.report.fingerprint import (
    FINGERPRINT_FILE,
    config_text,
    fingerprint,
    is_current,
    mark_built,
    report_files,
)
from dpbench.roots import conf_dirs
from dpbench.runner import hostspeed, refusals
from dpbench.runner.cost import (
    SlurmLimits,
    Stored,
    cost_lines,
    grid_cost,
    local_workers,
    record_seconds,
    reference_trials,
)
from dpbench.runner.diskspace import full_line, is_full
from dpbench.runner.execute import import_object, trial_ledger
from dpbench.runner.grid import RefusedCell, expand, expand_cells, experiment_entry, load_entry
from dpbench.runner.reference import shipped
from dpbench.runner.reference_costs import (
    read_reference,
    reference_files,
    results_lines,
    summary,
)
from dpbench.runner.schema import (
    ConfigError,
    check_settings,
    choices,
    conf_dir,
    did_you_mean,
    entries,
    fast_omegaconf_load,
    figure_fields,
    top_level_keys,
    unknown,
)
from dpbench.runner.spec import TrialSpec, digest
from dpbench.runner.store import CORRUPT, CUSTOM, OK, Damage, ResultStore
from dpbench.tasks import TASKS

if TYPE_CHECKING:
    import pandas as pd

    from dpbench.report.frame import Shortfall
    from dpbench.report.leaderboard import Board

# the report's readers and writers (pandas, matplotlib, scipy): imported by the commands that
# read results or draw, not by `plan`
board_files = lazy.module("dpbench.report.board_files")
report_build = lazy.module("dpbench.report.build")
report_frame = lazy.module("dpbench.report.frame")
report_leaderboard = lazy.module("dpbench.report.leaderboard")
report_privacy = lazy.module("dpbench.report.privacy")
slurm = lazy.module("dpbench.runner.slurm")      # submitit: for `runner=slurm` only
joblib = lazy.module("joblib")                   # worker processes that draw

#: the figure folder's list of the files it holds (what an unchanged folder prints)
OUTPUTS_FILE = ".outputs"


class UserError(Exception):
    """Bad input: printed as one line, exit status 2."""


def override_hint(override: str, before: str) -> str:
    """What an unknown override most likely meant: the rest of a list the shell split at a
    space (quote it), an experiment named without ``experiment=``, or the closest key."""
    head = override.partition("=")[0].split(".")[0]
    if before.count("[") > before.count("]") or before.count("{") > before.count("}"):
        return (f" (a list with spaces splits into words: quote it, e.g. "
                f"'{before} {override}', or leave out the spaces)")
    if "=" not in override and head in choices("experiment"):
        return f" (did you mean experiment={head}?)"
    return did_you_mean(head, sorted({*top_level_keys(), "dataset", "method"}))


def compose_config(overrides: Sequence[str]) -> DictConfig:
    """Hydra compose of conf/ with the given overrides (errors become one line)."""
    overrides = list(overrides)
    valid = sorted({*top_level_keys(), "dataset", "method"})
    for i, ov in enumerate(overrides):
        key, _, value = ov.partition("=")
        key = key.lstrip("+~")
        head = key.split(".")[0].split("@")[0]
        if head not in valid and head != "hydra":  # Hydra would refuse it, or add it unread
            raise UserError(f"unknown key {head!r} in {ov!r}"
                            f"{override_hint(ov, overrides[i - 1] if i else '')}; "
                            f"valid top-level keys: {', '.join(valid)}")
        if key in ("experiment", "profile", "runner") and "/" in value:  # paper/name form
            stem = value.rpartition("/")[2]
            if stem in choices(key) and group_path(key, stem) == value:
                value = stem
        for group in ("experiment", "profile", "runner", "dataset", "method"):
            if key == group and value not in choices(group):
                raise UserError(str(unknown(group, value, choices(group))))
        if key in ("experiment", "profile", "runner"):  # a name may live in a subfolder
            overrides[i] = f"{ov.partition('=')[0]}={group_path(key, value)}"
        if key in ("dataset", "method"):  # shortcut for a one-element axis
            overrides[i] = f"{key}s=[{value}]"
    extra = conf_dirs()[1:]
    if extra:  # configs outside the repository (DPBENCH_PATH): Hydra searches them too
        overrides.append("hydra.searchpath=[" + ",".join(f"file://{p}" for p in extra) + "]")
    kept = cache_root() / "configs" / f"{digest(overrides)[:24]}.cfg"
    inputs = digest({"overrides": overrides, "conf": conf_state()})
    cfg = read_kept(kept, COMPOSED_TAG, inputs)
    if not isinstance(cfg, DictConfig):
        cfg = hydra_compose(overrides)
        write_kept(kept, COMPOSED_TAG, inputs, cfg, quiet=True)
    apply_experiment_profile(cfg, overrides)
    check_settings(cfg)
    return cfg


def hydra_compose(overrides: Sequence[str]) -> DictConfig:
    """Hydra's compose of conf/ (Hydra is imported here: a command whose config is kept,
    :func:`compose_config`, never imports it)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    fast_omegaconf_load()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
            return compose(config_name="config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        msg = " ".join(str(exc).split())
        raise UserError(f"bad override: {msg}") from None


def group_path(group: str, name: str) -> str:
    """Hydra's name for a group entry: its path under ``conf/<group>/`` (e.g. a paper's
    subfolder ``<paper>/<name>``), so users can name it by its file stem alone."""
    path = entries(group)[name]
    base = next(d / group for d in conf_dirs() if path.is_relative_to(d / group))
    return path.relative_to(base).with_suffix("").as_posix()


def apply_experiment_profile(cfg: DictConfig, overrides: Sequence[str]) -> None:
    """Merge ``experiment.profiles.<profile>`` (e.g. {smoke: {trials: 10}}) over the profile
    caps, except for caps given explicitly on the command line (``profile.trials=...``)."""
    block = (cfg.experiment.get("profiles") or {}).get(cfg.profile.name) or {}
    explicit = {o.partition("=")[0].lstrip("+~") for o in overrides}
    with open_dict(cfg):
        for key, value in block.items():
            if f"profile.{key}" not in explicit:
                cfg.profile[key] = value


def capped_note(cfg: DictConfig, overrides: Sequence[str]) -> str | None:
    """A line saying that the profile caps a ``trials=`` the user gave (else None): the
    experiment's profile block (e.g. ``default: {trials: 2}``) wins over ``trials=8``."""
    cap, asked = cfg.profile.get("trials"), cfg.trials
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (cap, asked)):
        return None                     # unset or malformed: grid() names a bad value
    if given(overrides, "trials") and cap < asked:
        return (f"note: profile {cfg.profile.name} caps trials at {cap} (trials={cfg.trials} "
                f"given); add profile.trials={cfg.trials} to run {cfg.trials}")
    return None


def given(overrides: Sequence[str], key: str) -> bool:
    """Does the command line set ``key`` (``key=...``, ``+key=...`` or ``++key=...``)?"""
    return any(o.split("=")[0].lstrip("+") == key for o in overrides)


def profile_order() -> list[str]:
    """Every profile, ``default`` first (the order ``figures`` builds them in)."""
    return sorted(choices("profile"), key=lambda p: (p != "default", p))


def store_of(cfg: DictConfig, *, reference: bool | None = None) -> ResultStore:
    """The store of ``results_dir``, with the shipped reference results behind it unless
    ``reference=false`` (``runner/reference.py``; ``reference`` overrides the config)."""
    use = bool(cfg.get("reference", True)) if reference is None else reference
    return ResultStore(Path(cfg.results_dir) / "store", shipped(use))


#: bytes the write probe writes (and syncs): a folder with less room fails up front
PROBE_BYTES = 2**20


#: what the one-line full-disk error of ``run`` and of ``figures`` ends with
RUN_FULL = "finished records are kept; free space and rerun to resume"

FIGURES_FULL = "the stored records are untouched; free space and rerun `dpbench figures`"

BOARD_FULL = "the stored records are untouched; free space and rerun `dpbench leaderboard`"

SITE_FULL = "the stored records are untouched; free space and rerun `dpbench site`"


def require_writable(path: Path, cfg: DictConfig) -> None:
    """Refuse (one line) unless files can be written in ``path``, checked before any work so
    a read-only, misplaced or full ``results_dir`` fails up front, not after the first trial.

    It really writes, syncs and deletes a file of :data:`PROBE_BYTES` (in ``path``, or in
    its nearest existing ancestor when dpbench would create the rest): permission bits
    alone say nothing for root, a read-only mount or a path under a regular file are
    refused for every user, and an empty file is created even on a full disk."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    why = None
    if not probe.is_dir():
        why = f"{probe} is not a directory"
    else:
        name = None
        try:
            fd, name = tempfile.mkstemp(prefix=".dpbench-probe-", dir=probe)
            with os.fdopen(fd, "wb") as fh:
                fh.write(bytes(PROBE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            if is_full(exc):
                raise UserError(full_line(exc, probe, "nothing was written; free space "
                                                   "and rerun")) from None
            why = f"{exc.strerror or exc}: {probe}"
        finally:
            if name is not None:
                Path(name).unlink(missing_ok=True)
    if why:
        raise UserError(f"cannot write to {path} ({why}); results_dir={cfg.results_dir} must "
                        "be a folder this user can write, e.g. results_dir=/tmp/results")


@contextmanager
def stops_when_full(folder: Path, then: str) -> Iterator[None]:
    """A full disk within the block is one line (a :class:`UserError`): the folder the write
    failed in (else ``folder``), its free space, and ``then``."""
    try:
        yield
    except OSError as exc:
        if not is_full(exc):
            raise
        raise UserError(full_line(exc, folder, then)) from None


def grid(cfg: DictConfig) -> list[TrialSpec]:
    try:
        return expand(cfg)
    except (ConfigError, ValueError) as exc:
        raise UserError(str(exc)) from None


def preflight(specs: Sequence[TrialSpec], *, collect: bool = False,
              unloaded: list[str] | None = None) -> list[RefusedCell]:
    """Load every dataset once and build every method before any trial runs.

    Catches missing or corrupted data files, bad method parameters and methods that cannot
    run on a dataset (``Method.check_data``) up front, so a bad invocation changes nothing in
    the store. ``collect`` (an arena): a method that cannot run on a dataset is returned as
    a refused cell instead (the other cells run; the board lists it with its reason).
    ``unloaded`` (``plan``): a dataset that cannot be loaded (not downloaded yet) is named
    there, one line each, and its cells left unchecked, so a grid is sized before its data
    is fetched while every check the data allows is the run's.
    """
    import numpy as np

    def mkey(s: TrialSpec) -> str:
        return f"{s.method_target}|{sorted(s.method_params.items())}"

    methods: dict[str, object] = {}
    by_data: dict[str, list[TrialSpec]] = {}
    refused: list[RefusedCell] = []
    for s in specs:
        by_data.setdefault(f"{s.dataset}|{s.dataset_target}|"
                           f"{sorted(s.dataset_params.items())}", []).append(s)
        if mkey(s) not in methods:
            try:
                methods[mkey(s)] = import_object(s.method_target)(**s.method_params)
            except (ValueError, TypeError) as exc:
                raise UserError(f"method {s.method!r}: {exc}") from None
    for group in by_data.values():            # one dataset in memory at a time
        first = group[0]
        try:
            split = import_object(first.dataset_target)(rng=np.random.default_rng(0),
                                                         **first.dataset_params)
        except MemoryError as exc:       # a size no check caught: one line, no traceback
            raise UserError(f"dataset {first.dataset!r} does not fit in memory ({exc}); "
                            "lower its number of rows") from None
        except (DataError, ValueError, TypeError, FileNotFoundError) as exc:
            if unloaded is not None and not collect and isinstance(exc, MissingDownload):
                unloaded.append(f"{first.dataset!r} ({' '.join(str(exc).split())})")
                continue
            if not collect:
                raise UserError(f"dataset {first.dataset!r}: {exc}") from None
            why = f"dataset {first.dataset!r}: {' '.join(str(exc).split())}"
            refused += [RefusedCell(s.dataset, s.method, why)
                        for s in {(s.dataset, s.method): s for s in group}.values()]
            continue
        try:
            TASKS[first.task].check_split(split, first.task_params)
        except ValueError as exc:
            raise UserError(f"task {first.task!r} on dataset {first.dataset!r}: {exc}") from None
        checked: set[str] = set()
        out: set[str] = set()
        for s in group:      # the data, then each budget (delta rule, unit, relation, range)
            budget = f"{s.epsilon!r}|{s.delta!r}|{s.budget_unit}|{s.relation}"
            if mkey(s) in out or f"{mkey(s)}|{budget}" in checked:
                continue
            try:
                if mkey(s) not in checked:
                    methods[mkey(s)].check_data(split.train)
                checked |= {mkey(s), f"{mkey(s)}|{budget}"}
                trial_ledger(s, split.train.n, methods[mkey(s)])
            except ValueError as exc:
                if not collect:
                    raise UserError(f"method {s.method!r} on dataset {first.dataset!r}: "
                                    f"{exc}") from None
                out.add(mkey(s))
                refused.append(RefusedCell(s.dataset, s.method, " ".join(str(exc).split())))
    return refused


def arena_grid(cfg: DictConfig, *, data: bool = True, store: ResultStore | None = None
               ) -> tuple[list[TrialSpec], list[RefusedCell]]:
    """The trials to run and the refused cells of an experiment: every cell the grid and
    the data allow in an arena (the rest refused with their reasons); the whole grid, with
    any problem a one-line error, elsewhere. ``data=False``: the grid's refusals only,
    no dataset loaded (the methods' data checks are left out). ``store`` (``run``): an
    arena's refused cells are written into it for the readers (``runner/refusals.py``)."""
    try:
        specs, refused = expand_cells(cfg)
    except (ConfigError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if not cfg.experiment.get("arena"):
        if data:
            preflight(specs)
            if store is not None:     # passed: kept, so ``plan`` need not load the data
                keep_refusals(cfg, store, specs, [], [], quiet=False)
        return specs, refused
    if not data:
        return specs, refused
    by_grid = list(refused)
    refused += preflight(specs, collect=True)
    if store is not None:
        keep_refusals(cfg, store, specs, by_grid, refused, quiet=False)
    return without(specs, refused), refused


def without(specs: Sequence[TrialSpec], refused: Sequence[RefusedCell]) -> list[TrialSpec]:
    """The specs of the cells not ``refused``."""
    out = {(r.dataset, r.method) for r in refused}
    return [s for s in specs if (s.dataset, s.method) not in out]


def refusals_name(cfg: DictConfig) -> str:
    """The name a grid's refused cells are stored under: ``<experiment>@<profile>``, and
    ``-custom-<hash>`` after it for an ad-hoc grid (:func:`custom_suffix`)."""
    return f"{cfg.experiment.name}@{cfg.profile.name}{custom_suffix(cfg)}"


def keep_refusals(cfg: DictConfig, store: ResultStore, specs: Sequence[TrialSpec],
                  by_grid: Sequence[RefusedCell], refused: Sequence[RefusedCell], *,
                  quiet: bool = True) -> None:
    """Store the grid's refused cells under :func:`refusals_name` (``runner/refusals.py``);
    ``quiet``: a reader's cache, so a store it cannot write is left as it is (``run``'s
    own record is not quiet: a store it cannot write is an error)."""
    try:
        refusals.keep(store, refusals_name(cfg), str(cfg.experiment.name),
                      str(cfg.profile.name), specs, by_grid, refused)
    except OSError:
        if not quiet:
            raise


def refused_cells(cfg: DictConfig, store: ResultStore, specs: Sequence[TrialSpec],
                  by_grid: Sequence[RefusedCell]) -> list[RefusedCell]:
    """Every refused cell of an arena grid whose config allows ``specs`` and refuses
    ``by_grid``: the ones its run stored when they are current (no dataset loaded:
    ``runner/refusals.py``), else ``by_grid`` and the data's, found as the run found them
    (:func:`preflight`) and then stored, so that the next reader need not load the data
    again (a clean clone's store has none; a store it cannot write is left as it is)."""
    kept = refusals.stored(store, refusals_name(cfg), specs, by_grid)
    if kept is not None:
        return [RefusedCell(*r) for r in kept]
    found = [*by_grid, *preflight(specs, collect=True)]
    keep_refusals(cfg, store, specs, by_grid, found)
    return found


def planned(cfg: DictConfig, store: ResultStore, unloaded: list[str]
            ) -> tuple[list[TrialSpec], list[RefusedCell]]:
    """``plan``'s grid, checked as ``run`` checks it (:func:`preflight`; a dataset not
    downloaded yet named in ``unloaded``), unless the store holds a current record of the
    same checks (an arena's refused cells, or a grid that passed them:
    ``runner/refusals.py``); a check that passed with every dataset loaded is kept."""
    if cfg.experiment.get("arena"):
        return runnable(cfg, store)
    specs = grid(cfg)
    if refusals.stored(store, refusals_name(cfg), specs, []) != []:
        preflight(specs, unloaded=unloaded)
        if not unloaded:
            keep_refusals(cfg, store, specs, [], [])
    return specs, []


def runnable(cfg: DictConfig, store: ResultStore | None = None
             ) -> tuple[list[TrialSpec], list[RefusedCell]]:
    """The grid's trials (and, in an arena, the cells refused by the grid or the data: an
    arena's plan and status count only what it will run; with ``store``, the refusals its
    run stored when current)."""
    if not cfg.experiment.get("arena"):
        return grid(cfg), []
    if store is None:
        return arena_grid(cfg)
    specs, by_grid = arena_grid(cfg, data=False)
    refused = refused_cells(cfg, store, specs, by_grid)
    return without(specs, refused), refused


def pending(specs: Sequence[TrialSpec], store: ResultStore) -> list[TrialSpec]:
    """Trials not yet stored as ok (failed ones are retried), without duplicates."""
    seen: set[str] = set()
    out = []
    for s in specs:
        if s.key not in seen and store.status(s.key) != OK:
            seen.add(s.key)
            out.append(s)
    return out


def set_aside(store: ResultStore, damaged: Sequence[Damage],
              names: dict[str, str] | None = None) -> dict[str, str]:
    """Quarantine each damaged record (``ResultStore.quarantine``); per key one line saying
    which file, why it is unusable and where it went (or why it stays)."""
    lines: dict[str, str] = {}
    for d in damaged:
        what = f"damaged record {d.path}" + (f" ({names[d.key]})" if names and d.key in names
                                             else "")
        try:
            moved = store.quarantine(d.key)
        except OSError as exc:
            lines[d.key] = (f"{what}: {d.reason}; cannot move it aside "
                            f"({exc.strerror or exc}), it counts as not done")
            continue
        if moved is not None:
            lines[d.key] = (f"{what}: {d.reason}; moved to {moved.path}, the trial is to be "
                            "recomputed")
        elif store.status(d.key) == CORRUPT:
            lines[d.key] = f"{what}: {d.reason}; a running run holds the trial and moves it aside"
    return lines


def trial_names(specs: Sequence[TrialSpec]) -> dict[str, str]:
    """``dataset/method/epsilon/trial`` of each key of the grid."""
    return {s.key: f"{s.dataset}/{s.method}/{s.epsilon:g}/{s.trial}" for s in specs}


def privacy_alerts(specs: Sequence[TrialSpec], store: ResultStore, name: str,
                   facts: bool = False) -> list[str]:
    """Lines (each ending in a newline) for the grid's stored trials whose paper's accounting
    under-states the true spend or that publish private rows (``report.privacy.alerts``);
    with ``facts``, the neighbouring relations too."""
    frame = report_frame.results_frame(specs, store, name)
    lines = [*report_privacy.alerts(frame),
             *([report_privacy.neighbours_note(frame)] if facts else [])]
    return [f"{line}\n" for line in lines if line]


def status_counts(specs: Sequence[TrialSpec], store: ResultStore) -> tuple[Counter, dict]:
    """The grid's trials by status (ok / failed / pending: a damaged record is pending), in
    total and per (dataset, method, eps) cell."""
    total: Counter[str] = Counter()
    cells: dict[tuple[str, str, float], Counter[str]] = {}
    for s in specs:
        st = store.status(s.key) or "pending"
        st = "pending" if st == CORRUPT else st  # a damaged record: its trial is not done
        total[st] += 1
        cells.setdefault((s.dataset, s.method, s.epsilon), Counter())[st] += 1
    return total, cells


def trial_seconds(specs: Sequence[TrialSpec], store: ResultStore) -> dict[tuple, list[float]]:
    """Per (dataset, method, eps) cell, the wall seconds (data + fit + evaluation, as each
    trial recorded them) of its ok trials: what a cell costs, e.g. to size a SLURM run."""
    out: dict[tuple, list[float]] = {}
    for s in specs:
        rec = store.get(s.key)
        if rec and rec.get("status") == OK:
            out.setdefault((s.dataset, s.method, s.epsilon), []).append(record_seconds(rec))
    return out


def reference_of(cfg: DictConfig, specs: Sequence[TrialSpec] = ()
                 ) -> tuple[list[Stored], str | None]:
    """The reference fits that ship with dpbench, and where they come from: with ``specs``,
    the shipped results' trials of their dataset-and-method cells first (a finished trial
    there replaces a stopped one's line), then every paper's ``costs.jsonl``, the
    experiment's own first. The results price a grid whether or not ``reference=false``
    keeps them out of its done trials (``DPBENCH_REFERENCE=off`` leaves them out)."""
    files, seen = [], set()
    results = shipped() if specs else None
    if results is not None:
        lines = results_lines(results, specs)
        seen.update(ln["key"] for ln in lines)
        if lines:
            files.append((results.folder, lines))
    for path in reference_files(cfg.experiment.get("paper"), str(cfg.experiment.name)):
        lines = [ln for ln in read_reference(path) if ln["key"] not in seen]
        seen.update(ln["key"] for ln in lines)    # a trial two files hold: the first's line
        if lines:
            files.append((path, lines))
    if not files:
        return [], None
    return reference_trials([ln for _, lines in files for ln in lines]), summary(files)


def plan_cost(cfg: DictConfig, specs: Sequence[TrialSpec], todo: Sequence[TrialSpec],
              store: ResultStore, brief: bool = False) -> list[str]:
    """The cost lines of a plan (``runner.cost``) for the configured runner: the local
    runner's workers, or the SLURM array's limits (``runner.*`` validated as ``run`` would)."""
    chosen = hostspeed.setting()         # checked before any work (cli._grid_config)
    # this machine's speed is measured (or read from its cache) only if a trial needs it
    speed = chosen if chosen != hostspeed.MEASURE else \
        partial(hostspeed.target, cache_root() / hostspeed.CACHE_FILE)
    cost = grid_cost(specs, todo, store, *reference_of(cfg, specs), speed=speed)
    if cfg.runner.name != "slurm":
        return cost_lines(cost, workers=local_workers(int(cfg.runner.n_jobs)), brief=brief)
    s = slurm.SlurmSettings.from_cfg(cfg.runner)
    limits = SlurmLimits(s.timeout_min, s.mem_gb, s.trials_per_task, s.array_parallelism)
    return cost_lines(cost, slurm=limits, brief=brief)


def status_configs(cfg: DictConfig, overrides: Sequence[str]) -> list[DictConfig]:
    """What ``status`` reports on: the profile given, else every profile the experiment was
    run at in this store (``default`` first), else the default profile."""
    if given(overrides, "profile"):
        return [cfg]
    name = str(cfg.experiment.name)
    ran = {p for e, p in store_of(cfg).runs() if e == name}
    profiles = [p for p in profile_order() if p in ran]
    if not profiles or profiles == [str(cfg.profile.name)]:
        return [cfg]
    return [compose_config([*overrides, f"profile={p}"]) for p in profiles]


def computing_lines(specs: Sequence[TrialSpec], store: ResultStore) -> list[str]:
    """One line per trial of the grid not stored ok whose lease a live run holds."""
    out = []
    for key, name in trial_names(specs).items():
        holder = store.holder(key) if store.status(key) != OK else None
        if holder:
            out.append(f"computing {name}: claimed by pid {holder.get('pid')} on "
                       f"{holder.get('host')} (lease expires {holder.get('expires_at', '?')} "
                       "unless renewed)")
    return out


def quarantine_lines(store: ResultStore, names: dict[str, str],
                     reported: set[str] = frozenset()) -> list[str]:
    """The records of the grid in quarantine whose trial is not stored ok yet (the next run
    recomputes them; ``reported`` keys are left out), then how many records it keeps."""
    entries = store.quarantined()
    out = [f"quarantined {names[q.key]}: {q.reason} (was {q.origin}, kept as {q.path}); "
           "the next run recomputes it"
           for q in entries
           if q.key in names and q.key not in reported and store.status(q.key) != OK]
    if entries:
        out.append(f"quarantine: {len(entries)} damaged record(s) kept in "
                   f"{store.quarantine_dir} (never read again; delete them when inspected)")
    return out


#: the grid settings whose override on the command line makes a run ad hoc
GRID_KEYS = ("datasets", "methods", "epsilons", "delta", "trials", "budget_unit",
             "dataset_sweep", "method_sweep", "data", "schema")


def custom_grid(cfg: DictConfig) -> dict[str, object]:
    """The grid settings (:data:`GRID_KEYS`, ``experiment.task_params``) in which the
    composed config differs from its experiment yaml (with conf/config.yaml's defaults):
    empty for the experiment as written."""
    entry = load_entry("experiment", str(cfg.experiment.name))
    root = OmegaConf.to_container(OmegaConf.load(conf_dir() / "config.yaml"), resolve=True)
    out: dict[str, object] = {}
    for key in GRID_KEYS:
        want = entry.get(key, root.get(key))
        got = OmegaConf.to_container(cfg[key]) if OmegaConf.is_config(cfg[key]) else cfg[key]
        if got != want:
            out[key] = got
    tp = cfg.experiment.get("task_params")
    tp = OmegaConf.to_container(tp) if OmegaConf.is_config(tp) else tp
    if tp != (entry.get("experiment") or {}).get("task_params"):
        out["task_params"] = tp
    return out


def figure_dir(cfg: DictConfig) -> Path:
    """``<results_dir>/figures/<experiment>[-<profile>]``, and ``-custom-<hash>`` after it
    for a grid narrowed or changed on the command line (:func:`custom_grid`), so an ad-hoc
    run never overwrites the folder of the experiment as written (a paper's figures)."""
    name = cfg.experiment.name
    folder = name if cfg.profile.name == "default" else f"{name}-{cfg.profile.name}"
    return Path(cfg.results_dir) / "figures" / (folder + custom_suffix(cfg))


def custom_suffix(cfg: DictConfig) -> str:
    """``-custom-<hash of the changed settings>`` for an ad-hoc grid, else empty."""
    custom = custom_grid(cfg)
    return f"{CUSTOM}{digest(custom)[:8]}" if custom else ""


#: overrides that name the grid or choose where and how it runs, not which trials it holds
#: (``runner.*`` and ``hydra.*`` entirely; ``experiment.*`` and ``profile.*`` do shape it)
NOT_GRID = ("experiment", "profile", "results_dir", "reference")
NOT_GRID_GROUPS = ("runner", "hydra")


def grid_overrides(overrides: Sequence[str]) -> list[str]:
    """The command line's overrides that shape the grid (all but :data:`NOT_GRID` and
    :data:`NOT_GRID_GROUPS`): what an ad-hoc run notes so the site can compose it again."""
    keys = [o.split("=")[0].lstrip("+~") for o in overrides]
    return [o for o, k in zip(overrides, keys, strict=True)
            if k not in NOT_GRID and k.split(".")[0] not in NOT_GRID_GROUPS]


def figure_specs(cfg: DictConfig) -> list[dict]:
    """The experiment's figures: a ``conf/figure`` name or an inline ``{kind, name, ...}``,
    each with the experiment's title (unless the figure has its own), paper and note (the
    experiment's note, which states its setting choices, replaces a figure's generic one)."""
    out = []
    for item in cfg.experiment.get("figures") or []:
        if isinstance(item, str):
            fig = {"name": item, **load_entry("figure", item)}
        else:
            fig = OmegaConf.to_container(item, resolve=True)
            figure_fields(fig)          # an inline spec names its kind and itself
        fig.setdefault("title", cfg.experiment.name)
        fig.setdefault("paper", cfg.experiment.get("paper"))
        if cfg.experiment.get("note"):     # the figure's own choices, then the experiment's
            fig["note"] = " ".join(filter(None, [str(fig.get("note") or "").strip(),
                                                 str(cfg.experiment.note).strip()]))
        out.append(fig)
    return out


def check_figures(cfg: DictConfig) -> None:
    """Refuse, before any trial runs, a figure spec of the experiment with an unknown kind
    or key (``report.build.check_figure``)."""
    for fig in figure_specs(cfg):
        check_figure(fig)


def origin_text(cfg: DictConfig, specs: Sequence[TrialSpec]) -> str:
    """Where a report's numbers come from, stated on each of its figures, tables and claims:
    ``<profile> profile, <n> trials per cell`` (the grid's) and the profile's ``caveat``."""
    asked = Counter((s.dataset, s.method, s.epsilon) for s in specs).values()
    lo, hi = min(asked), max(asked)
    n = f"{lo}" if lo == hi else f"{lo}-{hi}"
    text = f"{cfg.profile.name} profile, {n} trial{'s' if hi > 1 else ''} per cell"
    caveat = cfg.profile.get("caveat")
    return f"{text}; {caveat}" if caveat else text


def build_figures(cfg: DictConfig, specs: Sequence[TrialSpec] | None = None,
                  out: Path | None = None, store: ResultStore | None = None) -> list[Path]:
    """Every figure, table and claim check of one experiment, from the store only; a cell
    with fewer ok trials than the grid asks is marked in each (``report.frame.shortfalls``)
    and damaged records are quarantined first (one line each on stderr). Nothing is written
    (and [] returned) when no trial of the grid is stored. Into the experiment's figure
    folder (``out`` None) it also writes the folder's list of files and, last, its
    fingerprint (report.fingerprint), so an unchanged folder is not drawn again."""
    specs = grid(cfg) if specs is None else specs
    store = store_of(cfg) if store is None else store
    folder = out or figure_dir(cfg)
    if out is None:
        (folder / FINGERPRINT_FILE).unlink(missing_ok=True)  # stale until the build ends
    frame, short = report_inputs(cfg, specs, store)
    if frame.empty:
        return []
    experiment = OmegaConf.to_container(cfg.experiment, resolve=True)
    paths = report_build.build_report(frame, experiment, figure_specs(cfg), folder, short,
                         origin_text(cfg, specs))
    if out is None and paths:
        digest = _figures_digest(cfg, specs, store)  # after any quarantine done
        (folder / OUTPUTS_FILE).write_text("".join(f"{p.relative_to(folder)}\n"
                                                   for p in paths))
        mark_built(folder, digest)
    return paths


def _figures_digest(cfg: DictConfig, specs: Sequence[TrialSpec], store: ResultStore) -> str:
    return fingerprint(specs, store, config_text(cfg), report_files(cfg))


def current_figures(cfg: DictConfig, specs: Sequence[TrialSpec], store: ResultStore
                    ) -> list[Path] | None:
    """The files of the experiment's figure folder if nothing they are built from changed
    since they were drawn (report.fingerprint), else None."""
    folder = figure_dir(cfg)
    listed = folder / OUTPUTS_FILE
    if not (listed.is_file() and is_current(folder, _figures_digest(cfg, specs, store))):
        return None
    paths = [folder / name for name in listed.read_text().splitlines() if name]
    return paths if all(p.is_file() for p in paths) else None


def report_inputs(cfg: DictConfig, specs: Sequence[TrialSpec],
                  store: ResultStore | None = None) -> tuple[pd.DataFrame, list[Shortfall]]:
    """The results frame of the grid and its cells short of trials (said on stderr), after
    quarantining damaged records (one line each on stderr)."""
    store = store_of(cfg) if store is None else store
    names = trial_names(specs)
    for line in set_aside(store, store.damaged(names), names).values():
        print(line, file=sys.stderr)
    frame = report_frame.results_frame(specs, store, cfg.experiment.name)
    short = report_frame.shortfalls(specs, frame) if not frame.empty else []
    if short:
        print(f"{cfg.experiment.name} ({cfg.profile.name} profile): {len(short)} cell(s) "
              "hold fewer trials than the grid asks; the figures and tables mark them",
              file=sys.stderr)
    if not frame.empty:
        missing = report_build.finite_shortfalls(frame, figure_specs(cfg))
        if missing:
            print(f"{cfg.experiment.name} ({cfg.profile.name} profile): {len(missing)} "
                  "cell(s) hold trials without a finite value of "
                  f"{', '.join(sorted({m.metric for m in missing}))}; the figures, tables "
                  "and claims mark them", file=sys.stderr)
    return frame, short


def experiment_field(name: str, key: str) -> object:
    """``experiment.<key>`` of experiment ``name`` as composed (its ``defaults`` merged,
    :func:`grid.experiment_entry`), without composing; None if unset."""
    return (experiment_entry(name).get("experiment") or {}).get(key)


def is_arena(name: str) -> bool:
    """Does experiment ``name`` (or an experiment its ``defaults`` extend) set
    ``experiment.arena: true``?"""
    return bool(experiment_field(name, "arena"))


def page_board(cfg: DictConfig, store: ResultStore, specs: Sequence[TrialSpec],
               by_grid: Sequence[RefusedCell], folder: Path
               ) -> tuple[Board, list[TrialSpec], list[Path]]:
    """An arena page's board (its primary metric's), the specs it covers and its files in
    ``folder``: the files ``leaderboard`` wrote, copied, while nothing they are built from
    changed (:func:`current_board`), else drawn there (``report.board_files``)."""
    refused = all_refused(cfg, store, specs, by_grid)
    kept = current_board(cfg, board_digest(cfg, specs, store, refused))
    if kept is not None:
        board, files = kept
        return board, without(specs, refused), [Path(shutil.copy2(p, folder / p.name))
                                                for p in files]
    boards, covered = arena_boards(cfg, store, specs, refused)
    board = next(iter(boards.values()))
    return board, covered, board_files.write_board(board, folder)


def prune_plots(folder: Path, kept: Sequence[Path]) -> None:
    """Delete the plots (PNG, PDF) in ``folder`` that a board just written there did not
    draw: a file of an older board (e.g. a diagram of an epsilon no longer on it) would
    otherwise stay beside the new ones."""
    keep = {p.name for p in kept}
    for plot in [*folder.glob("*.png"), *folder.glob("*.pdf")]:
        if plot.name not in keep:
            plot.unlink(missing_ok=True)


def board_dir(cfg: DictConfig) -> Path:
    """``<results_dir>/leaderboard/<experiment>-<profile>``, and ``-custom-<hash>`` after
    it for an ad-hoc grid: where ``leaderboard`` writes an arena grid's boards."""
    return Path(cfg.results_dir) / "leaderboard" / \
        f"{cfg.experiment.name}-{cfg.profile.name}{custom_suffix(cfg)}"


def board_digest(cfg: DictConfig, specs: Sequence[TrialSpec], store: ResultStore,
                 refused: Sequence[RefusedCell]) -> str:
    """What an arena grid's boards are built from (``report.fingerprint``: its config,
    trials, inputs and the report code) and its refused cells with their reasons."""
    return digest({"inputs": fingerprint(specs, store, config_text(cfg), report_files(cfg)),
                   "refused": [list(r) for r in refused]})


def current_board_files(cfg: DictConfig, built_from: str) -> list[Path] | None:
    """The files of the primary board ``leaderboard`` wrote for the grid, if it was built
    from what ``built_from`` (:func:`board_digest`) describes, else None."""
    folder = board_dir(cfg)
    listed = folder / OUTPUTS_FILE
    if not (listed.is_file() and is_current(folder, built_from)):
        return None
    paths = [folder / name for name in listed.read_text().splitlines() if name]
    return paths if all(p.is_file() for p in paths) else None


def current_board(cfg: DictConfig, built_from: str) -> tuple[Board, list[Path]] | None:
    """:func:`current_board_files` with the board they show (read from its ``board.json``)."""
    paths = current_board_files(cfg, built_from)
    if paths is None:
        return None
    try:
        board = report_leaderboard.from_json((board_dir(cfg) / "board.json").read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return board, paths


def arena_boards(cfg: DictConfig, store: ResultStore, specs: Sequence[TrialSpec],
                 refused: Sequence[RefusedCell]) -> tuple[dict[str, Board], list[TrialSpec]]:
    """The boards of an arena grid from the store, one per rankable metric (the primary
    first), and the specs they cover: the ``refused`` cells (every one, the grid's and the
    data's: :func:`all_refused`) are listed, not run."""
    specs = without(specs, refused)
    boards = report_leaderboard.boards_from_store(
        specs, store, OmegaConf.to_container(cfg.experiment, resolve=True),
        profile=cfg.profile.name, delta=cfg.delta, trials=origin_text(cfg, specs),
        refused=refused)
    return boards, specs


def all_refused(cfg: DictConfig, store: ResultStore, specs: Sequence[TrialSpec],
                by_grid: Sequence[RefusedCell]) -> list[RefusedCell]:
    """:func:`refused_cells` for a board: the data's checks that cannot run (e.g. a bad
    method parameter) said in a note, the grid's refusals kept."""
    try:        # the cells the data refuse (the run stored them; they hold no record)
        return refused_cells(cfg, store, specs, by_grid)
    except UserError as exc:
        print(f"note: {cfg.experiment.name}: the methods' data checks not run ({exc})")
        return list(by_grid)


@dataclass(frozen=True)
class Grid:
    """One composed (experiment, profile) grid: its config, its trials (an arena's: the
    cells the grid allows) and the cells it refuses, with their reasons."""

    cfg: DictConfig
    specs: list[TrialSpec]
    refused: list[RefusedCell] = field(default_factory=list)
    #: the overrides that make an ad-hoc grid (from its run note), empty as written
    extra: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.cfg.experiment.name)

    @property
    def folder(self) -> str:
        """``<experiment>-<profile>``, with ``-custom-<hash>`` for an ad-hoc grid."""
        return f"{self.name}-{self.profile}{custom_suffix(self.cfg) if self.extra else ''}"

    @property
    def profile(self) -> str:
        return str(self.cfg.profile.name)

    @property
    def arena(self) -> bool:
        return bool(self.cfg.experiment.get("arena"))

    def names(self) -> dict[str, str]:
        """``dataset/method/epsilon/trial`` of each trial key."""
        return trial_names(self.specs)


class Workspace:
    """What one command works on: the config composed from its overrides, the store opened
    once (each record read once: ``ResultStore.read``), and each (experiment, profile) grid
    composed and expanded once, however many questions the command asks of it."""

    def __init__(self, overrides: Sequence[str]) -> None:
        self.overrides = list(overrides)
        self.cfg = compose_config(self.overrides)
        self.store = store_of(self.cfg)
        self._configs: dict[tuple[str | None, str | None, tuple[str, ...]], DictConfig] = {}
        self._grids: dict[tuple[str | None, str | None, tuple[str, ...]], Grid] = {}
        #: a folder where each grid, once composed and expanded, is kept between commands
        #: (:func:`kept_grid`; the site's), None: composed afresh in every command
        self.keep: Path | None = None
        self._tree: str | None = None

    def compose(self, experiment: str | None = None, profile: str | None = None,
                extra: Sequence[str] = ()) -> DictConfig:
        """The command's config with ``experiment=`` / ``profile=`` set (None: as given)
        and ``extra`` overrides after them (an ad-hoc grid's, from its run note)."""
        key = (experiment, profile, tuple(extra))
        if key not in self._configs:
            more = [*([] if experiment is None else [f"experiment={experiment}"]),
                    *([] if profile is None else [f"profile={profile}"]), *extra]
            self._configs[key] = compose_config([*self.overrides, *more]) if more \
                else self.cfg
        return self._configs[key]

    def grid(self, experiment: str | None = None, profile: str | None = None,
             extra: Sequence[str] = ()) -> Grid:
        """The grid of :meth:`compose`'s config, expanded once (an arena's cells the grid
        refuses listed; the data's refusals are :func:`preflight`'s, asked where needed)."""
        key = (experiment, profile, tuple(extra))
        if key in self._grids:
            return self._grids[key]
        more = [*([] if experiment is None else [f"experiment={experiment}"]),
                *([] if profile is None else [f"profile={profile}"]), *extra]
        if self.keep is not None and self._tree is None:
            self._tree = tree_state()      # once: the conf and data files do not change
        kept = None if self.keep is None or not more else \
            kept_grid(self.keep, [*self.overrides, *more], self._tree)
        if kept is not None:
            self._configs[key] = kept.cfg
            self._grids[key] = Grid(kept.cfg, kept.specs, kept.refused, tuple(extra))
            return self._grids[key]
        cfg = self.compose(experiment, profile, extra)
        specs, refused = arena_grid(cfg, data=False) if cfg.experiment.get("arena") \
            else (grid(cfg), [])
        self._grids[key] = Grid(cfg, specs, refused, tuple(extra))
        if self.keep is not None and more:
            keep_grid(self.keep, [*self.overrides, *more], self._tree, self._grids[key])
        return self._grids[key]

    def held(self, g: Grid) -> int:
        """How many of the grid's trials the store holds ok."""
        return sum(self.store.status(s.key) == OK for s in g.specs)

    def quarantine(self, g: Grid) -> list[str]:
        """Move the grid's damaged records aside; one line each (:func:`set_aside`)."""
        names = g.names()
        return list(set_aside(self.store, self.store.damaged(names), names).values())


#: the header of a kept grid's file (``checksum.seal``: checked before it is unpickled)
KEPT_TAG = b"dpbench-grid 2\n"
#: the header of a composed config's file (:func:`compose_config`)
COMPOSED_TAG = b"dpbench-config 1\n"


def _stats(files: Sequence[Path]) -> list[str]:
    out = []
    for f in sorted(set(files)):
        try:
            st = f.stat()
            out.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            out.append(f"{f}:-")
    return out


def _versions() -> dict[str, str]:
    """dpbench's code (``checksum.code_digest``), Hydra's and OmegaConf's versions."""
    return {"code": code_digest(), "hydra": metadata.version("hydra-core"),
            "omegaconf": omegaconf.__version__}


def tree_state() -> str:
    """A digest of what composing and expanding any grid reads beyond its overrides:
    :func:`_versions`, and the size and modification time of every file under each root's
    ``conf/`` and under the data root."""
    files = [f for d in [*conf_dirs(), data_root()] if d.is_dir() for f in d.rglob("*")
             if f.is_file()]
    return digest({**_versions(), "files": _stats(files)})


def conf_state() -> str:
    """A digest of what Hydra's compose reads beyond the overrides: :func:`_versions`, and
    the path and content of every file under each root's ``conf/`` (~150 small yamls: their
    bytes, not their modification times, which a quick rewrite can leave equal)."""
    h = hashlib.sha256(digest(_versions()).encode())
    for d in conf_dirs():
        for f in sorted(d.rglob("*")):
            if f.is_file():
                h.update(f"{f}\0{f.stat().st_size}\0".encode() + f.read_bytes())
    return h.hexdigest()


def grid_inputs(overrides: Sequence[str], tree: str) -> str:
    """A digest of what composing and expanding a grid from ``overrides`` reads: the
    overrides, ``tree`` (:func:`tree_state`) and the stat of each file an override names."""
    named = [Path(v) for v in (o.partition("=")[2] for o in overrides) if v and Path(v).is_file()]
    return digest({"overrides": list(overrides), "tree": tree, "named": _stats(named)})


def _kept_path(folder: Path, overrides: Sequence[str]) -> Path:
    return folder / f"{digest(list(overrides))[:24]}.grid"


def kept_grid(folder: Path, overrides: Sequence[str], tree: str) -> Grid | None:
    """The grid :func:`keep_grid` kept in ``folder`` for ``overrides`` while nothing it was
    composed and expanded from changed (:func:`grid_inputs`), else None."""
    kept = read_kept(_kept_path(folder, overrides), KEPT_TAG, grid_inputs(overrides, tree))
    if not isinstance(kept, tuple):
        return None
    cfg, specs, refused = kept
    return Grid(cfg, specs, [RefusedCell(*r) for r in refused])


def keep_grid(folder: Path, overrides: Sequence[str], tree: str, g: Grid) -> None:
    """Keep grid ``g`` composed from ``overrides`` in ``folder``, with the digest of what it
    comes from (:func:`grid_inputs`)."""
    for s in g.specs:           # each key (a digest) kept with its spec: not computed again
        _ = s.key
    write_kept(_kept_path(folder, overrides), KEPT_TAG, grid_inputs(overrides, tree),
               (g.cfg, g.specs, [tuple(r) for r in g.refused]))


@dataclass(frozen=True)
class Drawn:
    """One grid's figure folder: the files (drawn now, or unchanged since they were)."""

    grid: Grid
    paths: list[Path]
    unchanged: bool


def draw_figures(ws: Workspace, names: Sequence[str | None], profiles: Sequence[str | None]
                 ) -> tuple[list[Drawn], list[str]]:
    """``dpbench figures``' folders: each (experiment, profile) grid holding results, drawn
    unless unchanged (its fingerprint); a grid never run whose trials are only partly stored
    (other grids share them) is skipped unless ``profile=`` was given. Returns the folders
    and the skipped grids (``name (profile: held of total)``)."""
    profile_given = list(profiles) == [None]
    drawn: list[Drawn] = []
    skipped: list[str] = []
    for name in names if ws.store.keys() or ws.store.reference is not None else []:
        for profile in profiles:
            g = ws.grid(name, profile)
            held = ws.held(g)
            if held == 0:
                continue
            if not profile_given and held < len(g.specs) \
                    and not ws.store.was_run(g.name, g.profile):
                skipped.append(f"{g.name} ({g.profile}: {held} of {len(g.specs)})")
                continue
            paths = current_figures(g.cfg, g.specs, ws.store)
            unchanged = paths is not None
            if paths is None:
                require_writable(figure_dir(g.cfg), g.cfg)
                paths = build_figures(g.cfg, g.specs, store=ws.store)
            if paths:
                drawn.append(Drawn(g, paths, unchanged))
    return drawn, skipped


def drawing_workers(overrides: Sequence[str], cfg: DictConfig, jobs: int) -> int:
    """Worker processes for ``jobs`` pieces of drawing (site pages, boards):
    ``runner.n_jobs`` when given, else one per core (drawing is light on memory), never more
    than the jobs."""
    n = int(cfg.runner.n_jobs) if given(overrides, "runner.n_jobs") else -1
    return max(1, min(jobs, (os.cpu_count() or 1) if n == -1 else n))


def draw_boards(jobs: Sequence[tuple[Board, Path]], workers: int) -> list[list[Path]]:
    """Each board's files (``report.board_files.write_board``) in its folder, ``workers``
    at a time (matplotlib draws on one core: a board's plots are most of ``leaderboard``'s
    time); the files of each, in order."""
    if workers <= 1:
        return [board_files.write_board(board, out) for board, out in jobs]
    return joblib.Parallel(n_jobs=workers)(joblib.delayed(board_files.write_board)(board, out)
                                           for board, out in jobs)


def write_boards(ws: Workspace, names: Sequence[str | None], profiles: Sequence[str | None]
                 ) -> tuple[list[Path], list[str], list[str]]:
    """``dpbench leaderboard``'s boards: for each arena grid holding an ok trial (a grid
    never run only when all its trials are stored, unless ``profile=`` was given), its
    damaged records quarantined (said on stderr), one board per rankable metric under
    ``<results_dir>/leaderboard/<experiment>-<profile>/`` (the primary metric's; the
    others in a folder each), then the folder's list of the primary board's files and,
    last, its fingerprint (:func:`board_digest`), so an unchanged board is not written
    again and a site page copies it. Returns the board files (written now or unchanged),
    the grids skipped, with why, and the grids left unchanged."""
    written: list[Path] = []
    skipped: list[str] = []
    unchanged: list[str] = []
    todo: list[tuple[Path, str, dict[str, Board]]] = []   # (folder, built_from, boards)
    for name in names:
        for profile in profiles:
            g = ws.grid(name, profile)
            for line in ws.quarantine(g):
                print(line, file=sys.stderr)
            held = ws.held(g)
            why = "no ok trial stored" if not held else None
            if held and profile is not None and held < len(g.specs) \
                    and not ws.store.was_run(g.name, g.profile):
                why = (f"never run; {held} of its {len(g.specs)} trials are stored because "
                       "other grids share them (profile=... builds it)")
            if why:
                skipped.append(f"{g.name} ({g.profile}): {why}")
                continue
            out = board_dir(g.cfg)
            require_writable(out, g.cfg)
            refused = all_refused(g.cfg, ws.store, g.specs, g.refused)
            built_from = board_digest(g.cfg, g.specs, ws.store, refused)
            kept = current_board_files(g.cfg, built_from)   # no board read: no scipy import
            if kept is not None:
                written += kept
                unchanged.append(f"{g.name} ({g.profile})")
                continue
            (out / FINGERPRINT_FILE).unlink(missing_ok=True)  # stale until the boards end
            todo.append((out, built_from, arena_boards(g.cfg, ws.store, g.specs, refused)[0]))
    # the primary metric's board is the arena's; one folder per other metric
    jobs = [(board, out if i == 0 else out / metric) for out, _, boards in todo
            for i, (metric, board) in enumerate(boards.items())]
    files = iter(draw_boards(jobs, drawing_workers(ws.overrides, ws.cfg, len(jobs))))
    for out, built_from, boards in todo:
        drawn = [next(files) for _ in boards]
        for paths in drawn:
            prune_plots(paths[0].parent, paths)
        written += [p for paths in drawn for p in paths]
        (out / OUTPUTS_FILE).write_text("".join(f"{p.name}\n" for p in drawn[0]))
        mark_built(out, built_from)
    return written, skipped, unchanged
