"""``dpbench site``: each grid a ``dpbench run`` started (``ResultStore.runs``), composed
and expanded once by the workspace (:mod:`dpbench.workspace`), its page rebuilt when its
fingerprint changed; then the index, the papers' pages and the data files
(``dpbench.site``). Built on the workspace and report layers, never on ``dpbench.cli``."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from joblib import Parallel, delayed
from omegaconf import DictConfig, OmegaConf

from dpbench import workspace
from dpbench.catalog import description
from dpbench.report.build import build_report, finite_shortfalls
from dpbench.report.fingerprint import config_text, fingerprint, report_files
from dpbench.report.privacy import alerts, budget_note, neighbours_note
from dpbench.roots import paper_dir, papers_dirs, version_text
from dpbench.runner.local import progress_bar
from dpbench.runner.reference import Reference
from dpbench.runner.schema import choices
from dpbench.runner.store import ResultStore
from dpbench.site import build
from dpbench.site.html import TEMPLATES
from dpbench.site.model import (
    ARENA,
    EXPERIMENT,
    Page,
    claim_counts,
    counts,
    provenance,
)


def papers() -> list[build.Paper]:
    """Every paper folder with notes, in name order (the first root that has a name wins)."""
    found: dict[str, build.Paper] = {}
    for base in papers_dirs():
        for d in sorted(p for p in base.iterdir() if p.is_dir()):
            found.setdefault(d.name, build.Paper(d.name, d / "README.md"))
    return sorted(found.values(), key=lambda p: p.name)


def paper_of(cfg: DictConfig) -> build.Paper | None:
    name = cfg.experiment.get("paper")
    if not name:
        return None
    try:
        d = paper_dir(str(name))
    except ValueError:
        return None
    return build.Paper(str(name), d / "README.md")


def inputs(cfg: DictConfig) -> list[Path]:
    """The files a page depends on beyond its trials and the code commit: its report's
    (report.fingerprint.report_files) and the site's templates."""
    return [*report_files(cfg), *TEMPLATES.iterdir()]


def page_fingerprint(g: workspace.Grid, store: ResultStore) -> str:
    """What one composed grid's page is built from: its trials, config, code and inputs."""
    return fingerprint(g.specs, store, config_text(g.cfg), inputs(g.cfg))


def build_page(g: workspace.Grid, store: ResultStore, out: Path, fp: str) -> Page:
    """Write the page of one composed grid into ``out/<experiment>-<profile>`` (its figures,
    tables, board and ``index.html``) and save it with its fingerprint ``fp``."""
    cfg, specs, refused = g.cfg, g.specs, g.refused
    name, profile, arena = g.name, g.profile, g.arena
    folder = out / g.folder
    version = version_text()
    shutil.rmtree(folder, ignore_errors=True)     # derived files only: the store is untouched
    folder.mkdir(parents=True)
    origin = workspace.origin_text(cfg, specs)
    if g.extra:             # an ad-hoc grid: said wherever the page's origin is
        origin += f"; ad hoc: {' '.join(g.extra)}"
    ctx = build.common("../", papers(), version)
    if arena:   # the board `leaderboard` wrote, copied when current, else drawn here
        board, specs, paths = workspace.page_board(cfg, store, specs, refused, folder)
    frame, short = workspace.report_inputs(cfg, specs, store)
    marked = short
    prov, status = provenance(specs, store, profile, origin)
    ok, failed = counts(status)
    if not arena:
        experiment = OmegaConf.to_container(cfg.experiment, resolve=True)
        figures = workspace.figure_specs(cfg)
        marked = [*short, *finite_shortfalls(frame, figures)]   # the page lists both
        paths = reused_figures(cfg, specs, store, folder)
        if paths is None and not frame.empty:
            paths = build_report(frame, experiment, figures, folder, short, origin)
        paths = paths or []
    page = Page(ARENA if arena else EXPERIMENT, name, profile,
                None if arena else cfg.experiment.get("paper"), description("experiment", name),
                g.folder, ok, len(specs), failed,
                [s.text(build.unit_of(frame)) for s in marked],
                claim_counts(folder / "claims.json"),
                alerts(frame) if not frame.empty else [],
                [n for n in (budget_note(frame), neighbours_note(frame)) if n]
                if not frame.empty else [], prov, " ".join(g.extra))
    if arena:
        build.write_arena_page(page, folder, board, frame, paths, ctx)
    else:
        build.write_experiment_page(page, folder, frame, paths,
                                    {f["name"]: f["kind"] for f in figures},
                                    str(experiment.get("note") or ""), paper_of(cfg), ctx)
    page.save(folder, fp)
    return page


def reused_figures(cfg: DictConfig, specs: list, store: ResultStore, folder: Path
                   ) -> list[Path] | None:
    """The experiment's figure folder copied into the page's ``folder`` when nothing it is
    built from changed since ``dpbench figures`` drew it (the same files the page would draw:
    same config, trials and code); None when it must be drawn."""
    drawn = workspace.current_figures(cfg, specs, store)
    if drawn is None:
        return None
    return [Path(shutil.copy2(p, folder / p.name)) for p in drawn]


def _build_in_worker(g: workspace.Grid, store_root: str, reference: str | None, out: str,
                     fp: str) -> Page:
    """:func:`build_page` in a worker process (headless plotting, its own store handle,
    with the same reference results behind it as the command's)."""
    import matplotlib

    matplotlib.use("Agg")
    store = ResultStore(store_root, Reference(reference) if reference else None)
    return build_page(g, store, Path(out), fp)


def site(args: argparse.Namespace) -> int:
    """``dpbench site`` (``entry.COMMANDS``)."""
    return cmd_site(args.overrides)


def cmd_site(overrides: Sequence[str]) -> int:
    """Build ``<results_dir>/site``: a page per (experiment, profile) run (all, or those
    ``experiment=`` / ``profile=`` name), the papers' pages, the index and the data files."""
    ws = workspace.Workspace(overrides)
    out = Path(ws.cfg.results_dir) / "site"
    workspace.require_writable(out, ws.cfg)
    ws.keep = out / ".grids"      # a warm site composes and expands no grid again
    with workspace.stops_when_full(out, workspace.SITE_FULL):
        return _build_site(ws, out)


def _build_site(ws: workspace.Workspace, out: Path) -> int:
    """:func:`cmd_site` once its output folder is known to be writable."""
    overrides, base, store = ws.overrides, ws.cfg, ws.store
    names = set(choices("experiment"))
    def wanted(e: str, p: str) -> bool:
        return e in names \
            and (not workspace.given(overrides, "experiment") or e == base.experiment.name) \
            and (not workspace.given(overrides, "profile") or p == base.profile.name)

    # the grids as written, then the ad-hoc ones (their run notes keep their overrides),
    # unless the site itself is asked for a changed grid (its pages are that grid then)
    custom = [] if workspace.grid_overrides(overrides) else store.custom_runs()
    runs = [(e, p, ()) for e, p in store.runs() if wanted(e, p)] + \
        [(e, p, tuple(o)) for e, p, o in custom if o and wanted(e, p)]
    version = version_text()
    pages: dict[int, Page] = {}
    stale: list[tuple[int, workspace.Grid, str]] = []
    grids = []
    for experiment, profile, extra in runs:
        try:
            grids.append(ws.grid(experiment, profile, extra))
        except workspace.UserError as exc:   # an ad-hoc grid the code no longer composes
            print(f"note: ad-hoc run of {experiment} ({' '.join(extra)}) not shown: {exc}",
                  file=sys.stderr)
    for i, g in enumerate(grids):
        fp = page_fingerprint(g, store)
        cached = Page.load(out / g.folder, fp)
        if cached is None:
            stale.append((i, g, fp))
        else:
            pages[i] = cached
    workers = workspace.drawing_workers(overrides, base, len(stale))
    with progress_bar(disable=not base.runner.get("progress", True)) as bar:
        task = bar.add_task("site", total=len(stale), status=f"{workers} worker(s)")
        if workers == 1:
            built = (build_page(g, store, out, fp) for _, g, fp in stale)
        else:
            reference = None if store.reference is None else str(store.reference.folder)
            built = Parallel(n_jobs=workers, return_as="generator")(
                delayed(_build_in_worker)(g, str(store.root), reference, str(out), fp)
                for _, g, fp in stale)
        for (i, _, _), page in zip(stale, built, strict=True):
            pages[i] = page
            bar.advance(task)
    rebuilt = len(stale)
    pages = [pages[i] for i in range(len(grids))]
    experiments = {n: None if workspace.is_arena(n)
                   else str(workspace.experiment_field(n, "paper") or "") for n in sorted(names)}
    build.write_index(out, papers(), experiments,
                      {n: description("experiment", n) for n in names}, pages, version)
    build.write_data(out, pages)
    if not runs:
        print(f"no `dpbench run` recorded under {store.root}: the site lists the experiments "
              "only; run one, e.g. `make demo`", file=sys.stderr)
    print(f"{out / 'index.html'}: {len(pages)} page(s), {rebuilt} rebuilt, "
          f"{len(pages) - rebuilt} unchanged")
    return 0
