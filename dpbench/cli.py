"""The ``dpbench`` command: run / plan / status / figures / compact / leaderboard / compare (and
the commands :mod:`dpbench.entry` sends to their own modules: list, site, audit).

This module parses what :mod:`dpbench.entry` hands it and prints; the work is the
workspace's (:mod:`dpbench.workspace`: composed configs, grids expanded once, the store
opened once, figure folders and boards) and the runner's. Every subcommand takes Hydra
overrides (``experiment=linreg_adult profile=smoke epsilons=[0.1,1] trials=3
runner.n_jobs=2``); a bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from dpbench import compile_cache, lazy
from dpbench.report.fingerprint import FINGERPRINT_FILE
from dpbench.roots import version_text  # noqa: F401  (cli.version_text)
from dpbench.runner import hostspeed
from dpbench.runner.execute import FAILED_ELSEWHERE
from dpbench.runner.reference import shipped
from dpbench.runner.schema import choices
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import FAILED, OK, ResultStore
from dpbench.tasks import TASKS
from dpbench.workspace import (
    BOARD_FULL,
    FIGURES_FULL,
    RUN_FULL,
    Drawn,
    UserError,
    Workspace,
    arena_grid,
    capped_note,
    check_figures,
    compose_config,
    computing_lines,
    custom_suffix,
    draw_figures,
    given,
    grid,
    grid_overrides,
    is_arena,
    pending,
    plan_cost,
    planned,
    privacy_alerts,
    profile_order,
    quarantine_lines,
    require_writable,
    runnable,
    set_aside,
    status_configs,
    status_counts,
    stops_when_full,
    store_of,
    trial_names,
    trial_seconds,
    write_boards,
)

# the runners (joblib, rich; submitit): imported by the commands that run or ask SLURM
local = lazy.module("dpbench.runner.local")
slurm = lazy.module("dpbench.runner.slurm")
# the report's readers (pandas, matplotlib, scipy): imported by the commands that read results
claims_engine = lazy.module("dpbench.report.claims.engine")
compare_report = lazy.module("dpbench.report.compare")
leaderboard_report = lazy.module("dpbench.report.leaderboard")


def cmd_run(cfg: DictConfig, overrides: Sequence[str] = ()) -> int:
    """Run (or resume) the grid (composed from ``overrides``); a full disk stops it with
    one line (exit 2), finished records kept."""
    with stops_when_full(store_of(cfg).root, RUN_FULL):
        return _run(cfg, overrides)


def _run(cfg: DictConfig, overrides: Sequence[str]) -> int:
    if cfg.runner.name == "slurm":        # its settings, before anything is written
        slurm.SlurmSettings.from_cfg(cfg.runner)
    store = store_of(cfg)
    for where in (store.trials, Path(cfg.results_dir) / "cache"):  # records, shared artifacts
        require_writable(where, cfg)
    check_figures(cfg)
    specs, refused = arena_grid(cfg, store=store)
    if refused:
        print(f"{len(refused)} cell(s) of the arena cannot run (the board lists each reason):")
        for r in refused:
            print(f"  {r.method} on {r.dataset}: {r.reason}")
    store.remove_stale_temp()
    names = trial_names(specs)
    for line in set_aside(store, store.damaged(names), names).values():
        print(line)
    todo = pending(specs, store)
    name = cfg.experiment.name
    store.mark_run(name, cfg.profile.name, len(specs))
    suffix, changed = custom_suffix(cfg), grid_overrides(overrides)
    if suffix and changed:   # an ad-hoc grid is noted apart too, with what makes it (site)
        store.mark_run(name, cfg.profile.name, len(specs), suffix=suffix, overrides=changed)
    print(f"{name}: {len(specs)} trials, {len(specs) - len(todo)} already done, "
          f"{len(todo)} to run (store: {store.root})")
    if not todo:
        print(*privacy_alerts(specs, store, name), sep="", end="")
        return 0
    for line in plan_cost(cfg, specs, todo, store, brief=True):
        print(f"{name}: {line}")
    if cfg.runner.name == "slurm":
        return slurm.submit(cfg, todo, store)
    counts = local.run_local(todo, str(store.root), n_jobs=int(cfg.runner.n_jobs),
                       progress=bool(cfg.runner.progress),
                       trace_memory=bool(cfg.runner.get("trace_memory", False)), description=name)
    print(f"{name}: {local.summary(counts)}")
    print(*privacy_alerts(specs, store, name), sep="", end="")
    failed = counts[FAILED] + counts[FAILED_ELSEWHERE]
    if failed:
        print(f"{failed} trial(s) failed; `dpbench status experiment={name}` shows why; "
              "rerun to retry them", file=sys.stderr)
        return 1
    return 0


def version_lines(specs: Sequence[TrialSpec], store: ResultStore) -> list[str]:
    """Per library, each version the grid's ok trials ran with and how many trials did
    (``report.leaderboard.versions``), one line per library, mixed versions flagged."""
    seen = leaderboard_report.versions(specs, store)
    if not seen:
        return ["versions: no ok trial stored yet"]
    out = ["library versions of the stored ok trials (version: trials):"]
    for lib, vers in seen.items():
        mixed = "  <- mixed" if len(vers) > 1 else ""
        out.append(f"  {lib}: " + ", ".join(f"{v}: {n}" for v, n in vers.items()) + mixed)
    return out


def cmd_plan(cfg: DictConfig) -> int:
    """The grid's size, what is done and what the rest costs. It checks what ``run`` checks
    before any trial (the grid, the figures, every dataset's data against every method), so
    a cell the run would refuse is refused here in the same line; a dataset not downloaded
    yet is named and its cells priced unchecked."""
    check_figures(cfg)
    unloaded: list[str] = []
    store = store_of(cfg)
    specs, refused = planned(cfg, store, unloaded)
    total, _ = status_counts(specs, store)
    by_method = Counter(s.method for s in specs)
    print(f"experiment {cfg.experiment.name} (profile {cfg.profile.name}): {len(specs)} trials")
    ds = sorted({s.dataset for s in specs})
    eps = sorted({s.epsilon for s in specs})
    print(f"  datasets: {', '.join(ds)}")
    print(f"  methods:  {', '.join(f'{m} ({n})' for m, n in sorted(by_method.items()))}")
    print(f"  {cfg.budget_unit}s: {', '.join(f'{e:g}' for e in eps)}; delta: {cfg.delta}; "
          f"trials per cell: {len({s.trial for s in specs})}")
    print(f"  done {total[OK]}, failed {total[FAILED]}, to do {len(specs) - total[OK]}")
    for line in plan_cost(cfg, specs, pending(specs, store), store):
        print(f"  {line}")
    if refused:
        print(f"  cells that cannot run (listed on the board): "
              f"{'; '.join(f'{r.method} on {r.dataset}' for r in refused)}")
    for line in unloaded:
        print(f"  note: data checks not run for {line}")
    return 0


def cmd_status(cfg: DictConfig, versions: bool = False) -> int:
    store = store_of(cfg)
    specs, _ = runnable(cfg, store)
    names = trial_names(specs)
    # every damaged record of the store (any experiment's) is moved aside and named here
    damage = set_aside(store, store.damaged(), names)
    total, cells = status_counts(specs, store)
    # SLURM hook (whatever runner= says): queued / running / lost trials of earlier
    # `runner=slurm` submissions, from the store's submissions log + squeue/sacct; {} if none
    extra = slurm.status(cfg, specs, store)
    from rich.console import Console
    from rich.table import Table

    seconds = trial_seconds(specs, store)
    table = Table(title=f"{cfg.experiment.name} ({cfg.profile.name})")
    for col in ("dataset", "method", cfg.budget_unit, "ok", "failed", "pending", "s / trial"):
        table.add_column(col)
    for (d, m, e), c in sorted(cells.items()):
        t = seconds.get((d, m, e))
        table.add_row(d, m, f"{e:g}", str(c[OK]), str(c[FAILED]), str(c["pending"]),
                      f"{sum(t) / len(t):.1f}" if t else "")
    Console().print(table)
    computing = computing_lines(specs, store)
    print(f"total: ok {total[OK]}, failed {total[FAILED]}, pending {total['pending']}"
          + "".join(f", {k} {v}" for k, v in extra.items())
          + (f", computing {len(computing)}" if computing else ""))
    if seconds:
        done = [x for t in seconds.values() for x in t]
        print(f"trial time of the ok trials: {sum(done) / 3600:.2f} h in {len(done)} trials "
              f"(data + fit + evaluation per trial, as recorded; wall time of a run with n "
              f"workers is about this / n)")
    for s in specs:
        rec = store.get(s.key)
        if rec and rec.get("status") == FAILED:
            print(f"failed {s.dataset}/{s.method}/{s.epsilon:g}/{s.trial}: {rec.get('error')}")
    for line in [*computing, *damage.values(), *quarantine_lines(store, names, set(damage))]:
        print(line)
    print(*privacy_alerts(specs, store, cfg.experiment.name, facts=True), sep="", end="")
    if versions:
        print("\n".join(version_lines(specs, store)))
    return 0


def cmd_figures(overrides: Sequence[str]) -> int:
    """Build the figures of the experiments (all, or the one given) in every profile that
    holds results (or the one given). Without ``profile=``, an (experiment, profile) that
    was never run is built only if its whole grid is stored (trials shared with other
    experiments or profiles), else named and skipped; a grid that was run (or named with
    ``profile=``) is built with its incomplete cells marked; the summary says which
    profiles were built and which were skipped. A full disk stops it with one line (exit
    2), the stored records untouched."""
    names = [None] if given(overrides, "experiment") else [
        n for n in choices("experiment") if not is_arena(n)]   # arenas: `dpbench leaderboard`
    profiles = [None] if given(overrides, "profile") else profile_order()
    ws = Workspace(overrides)
    base = ws.cfg
    if names == [None] and base.experiment.get("arena"):
        raise UserError(f"experiment {base.experiment.name!r} is an arena: its boards are "
                        f"built by `dpbench leaderboard experiment={base.experiment.name}`")
    with stops_when_full(Path(base.results_dir) / "figures", FIGURES_FULL):
        require_writable(Path(base.results_dir) / "figures", base)
        if ws.store.keys():                          # compact writes <store>/trials.parquet
            require_writable(ws.store.root, base)
        drawn, skipped = draw_figures(ws, names, profiles)
        print_figures(ws, drawn, skipped, names, profiles)
        if ws.store.keys():
            print(ws.store.compact())
    return 0


def print_figures(ws: Workspace, drawn: Sequence[Drawn], skipped: Sequence[str],
                  names: Sequence[str | None], profiles: Sequence[str | None]) -> None:
    """:func:`cmd_figures`' report: each folder's files and claim counts, what was built,
    left unchanged or skipped."""
    built: dict[str, list[str]] = {}
    for d in drawn:
        built.setdefault(d.grid.name, []).append(d.grid.profile)
        for p in d.paths:
            print(p)
        caveat = d.grid.cfg.profile.get("caveat")
        for p in d.paths:
            if p.name == "claims.md":
                print(claims_engine.summary(p) + (f"\n  ({caveat})" if caveat else ""))
    asked = "profile " + (ws.cfg.profile.name if list(profiles) == [None]
                          else ", ".join(profile_order()))
    if not built and not skipped:
        which = f"experiment {ws.cfg.experiment.name}" if list(names) == [None] \
            else "any experiment"
        print(f"no stored results for {which} in {asked} under {ws.store.root}; "
              "run `dpbench run experiment=...`")
    elif built:
        print("built from stored results (experiment: profiles): "
              + "; ".join(f"{e}: {', '.join(ps)}" for e, ps in built.items()))
    unchanged = [f"{d.grid.name} ({d.grid.profile})" for d in drawn if d.unchanged]
    if unchanged:
        print(f"not drawn again (nothing they are built from changed since): "
              f"{', '.join(unchanged)}; delete a folder's {FINGERPRINT_FILE} to force it")
    if skipped:
        print(f"not built (never run; these trials are stored only because other experiments "
              f"or profiles share them): {', '.join(skipped)}; `dpbench figures "
              "experiment=<name> profile=<profile>` builds one with its missing cells marked")


def cmd_leaderboard(overrides: Sequence[str]) -> int:
    """Write the board of each arena experiment (all, or the one given) at each profile
    (all, or the one given) that holds at least one ok trial, under
    ``<results_dir>/leaderboard/<experiment>-<profile>/``; say which were skipped. Without
    ``profile=``, a grid never run is built only if all its trials are stored (as
    ``figures``)."""
    arenas = [n for n in choices("experiment") if is_arena(n)]
    ws = Workspace(overrides)
    base = ws.cfg
    if given(overrides, "experiment") and not base.experiment.get("arena"):
        raise UserError(f"experiment {base.experiment.name!r} is not an arena experiment "
                        f"(experiment.arena is not true); arena experiments: "
                        f"{', '.join(arenas) or '(none)'}")
    names = [None] if given(overrides, "experiment") else arenas
    profiles = [None] if given(overrides, "profile") else profile_order()
    ws.keep = Path(base.results_dir) / "leaderboard" / ".grids"   # warm: no grid composed
    with stops_when_full(Path(base.results_dir) / "leaderboard", BOARD_FULL):
        written, skipped, unchanged = write_boards(ws, names, profiles)
    if not arenas and not given(overrides, "experiment"):
        print("no arena experiment (experiment.arena: true) under conf/experiment/")
    for line in skipped:
        print(f"skipped {line}")
    print("\n".join(map(str, written)) or "no board written")
    if unchanged:
        print(f"not written again (nothing they are built from changed since): "
              f"{', '.join(unchanged)}; delete a board folder's {FINGERPRINT_FILE} to force it")
    return 0


def _grid_config(args: argparse.Namespace) -> DictConfig:
    """``run``'s and ``plan``'s config, checked (the cache cap, the plan's machine speed)
    and with its profile note."""
    cfg = compose_config(args.overrides)
    try:
        compile_cache.max_bytes()      # a bad cache cap stops the run before any work
        hostspeed.setting()            # ... and a malformed DPBENCH_HOST_PROBE
    except ValueError as exc:
        raise UserError(str(exc)) from None
    note = capped_note(cfg, args.overrides)
    if note:               # information, on stdout: stderr carries only the one-line errors
        print(note)
    return cfg


def run(args: argparse.Namespace) -> int:
    """``dpbench run``."""
    return cmd_run(_grid_config(args), args.overrides)


def plan(args: argparse.Namespace) -> int:
    """``dpbench plan``."""
    return cmd_plan(_grid_config(args))


def status(args: argparse.Namespace) -> int:
    """``dpbench status``: each profile the experiment was run at (or the one given)."""
    cfg = compose_config(args.overrides)
    return sum(cmd_status(c, versions=args.versions) for c in status_configs(cfg, args.overrides))


def compact(args: argparse.Namespace) -> int:
    """``dpbench compact``."""
    print(store_of(compose_config(args.overrides)).compact())
    return 0


def figures(args: argparse.Namespace) -> int:
    """``dpbench figures``."""
    return cmd_figures(args.overrides)


def leaderboard(args: argparse.Namespace) -> int:
    """``dpbench leaderboard``."""
    return cmd_leaderboard(args.overrides)


def compare(args: argparse.Namespace) -> int:
    """``dpbench compare``: this machine's trials of an experiment's grid against the
    reference results, cell by cell (``report/compare.py``); exit 1 where they differ."""
    cfg = compose_config(args.overrides)
    reference = shipped()
    if reference is None:
        raise UserError("no reference results to compare with (results/reference/trials/, "
                        "or DPBENCH_REFERENCE); `make reference` builds them from a store")
    metrics = [m for m in TASKS[str(cfg.experiment.task)].metrics if not m.endswith("*")]
    verdict = compare_report.compare(str(cfg.experiment.name), grid(cfg),
                                     store_of(cfg, reference=False), reference, metrics)
    print("\n".join(compare_report.lines(verdict)))
    return 1 if verdict.problems else 0

