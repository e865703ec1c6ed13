"""``dpbench site``: each grid a ``dpbench run`` started (``ResultStore.runs``), composed
and expanded once by the workspace (:mod:`dpbench.workspace`), its page rebuilt when its
fingerprint changed; then the index, the papers' pages and the data files
(``dpbench.site``). Built on the workspace and report layers, never on ``dpbench.cli``."""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from rich.progress import Progress, TaskID

from dpbench import lazy, workspace
from dpbench.catalog import description
from dpbench.checksum import code_digest, digest
from dpbench.report.fingerprint import (
    FINGERPRINT_FILE,
    config_text,
    fingerprint,
    is_current,
    mark_built,
    report_files,
)
from dpbench.report.privacy import alerts, budget_note, neighbours_note
from dpbench.roots import paper_dir, papers_dirs, version_text
from dpbench.runner.progress import progress_bar
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

# what only a page drawn now needs: the report's drawing (pandas, matplotlib) and the workers
report_build = lazy.module("dpbench.report.build")
joblib = lazy.module("joblib")


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


#: the site's own files beside the pages (:func:`index_digest` says when to write them)
SITE_FILES = ("index.html", "data/trials.csv", "data/trials.parquet")


def page_built(out: Path, page: Page) -> str:
    """The fingerprint a page was saved with ("" if none)."""
    try:
        return (out / page.folder / FINGERPRINT_FILE).read_text()
    except OSError:
        return ""


def index_digest(out: Path, pages: Sequence[Page], experiments: Mapping[str, str | None],
                 descriptions: Mapping[str, str], version: str) -> str:
    """What the index, the papers' pages and the data files are built from: the pages
    (each with its page fingerprint, so a rebuilt page changes it), the experiments and
    their descriptions, the papers' folders (each file's size and time), the version and
    dpbench's code."""
    folders = [str(p.readme.parent) for p in papers()]
    files = sorted(f for d in folders for f in Path(d).rglob("*") if f.is_file())
    return digest({"pages": [[asdict(p), page_built(out, p)] for p in pages],
                   "experiments": dict(experiments), "descriptions": dict(descriptions),
                   "papers": folders, "files": [[str(f), f.stat().st_size,
                                                  f.stat().st_mtime_ns] for f in files],
                   "version": version, "code": code_digest()})


def page_fingerprint(g: workspace.Grid, store: ResultStore,
                     stats: Mapping[str, tuple[int, int]] | None = None) -> str:
    """What one composed grid's page is built from: its trials (``stats``: the store's
    listing, :meth:`ResultStore.file_stats`), config, code and inputs."""
    return fingerprint(g.specs, store, config_text(g.cfg), inputs(g.cfg), stats)


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
        marked = [*short, *report_build.finite_shortfalls(frame, figures)]   # the page lists both
        paths = reused_figures(cfg, specs, store, folder)
        if paths is None and not frame.empty:
            paths = report_build.build_report(frame, experiment, figures, folder, short,
                                              origin)
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


def _build_in_worker(i: int, g: workspace.Grid, store_root: str, reference: str | None,
                     out: str, fp: str) -> tuple[int, Page]:
    """:func:`build_page` in a worker process (headless plotting, its own store handle,
    with the same reference results behind it as the command's), returned with ``i``."""
    import matplotlib

    matplotlib.use("Agg")
    store = ResultStore(store_root, Reference(reference) if reference else None)
    return i, build_page(g, store, Path(out), fp)


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

    def stale_pages(bar: Progress, task: TaskID) -> Iterator[tuple[int, workspace.Grid, str]]:
        """Each run's grid, composed as the workers draw the pages before it (the arenas
        first: the longest pages, so the workers end together); a current page is kept."""
        for i in sorted(range(len(runs)), key=lambda i: not workspace.is_arena(runs[i][0])):
            experiment, profile, extra = runs[i]
            try:
                g = ws.grid(experiment, profile, extra)
            except workspace.UserError as exc:  # an ad-hoc grid the code no longer composes
                print(f"note: ad-hoc run of {experiment} ({' '.join(extra)}) not shown: "
                      f"{exc}", file=sys.stderr)
                bar.advance(task)
                continue
            fp = page_fingerprint(g, store, stats)
            cached = Page.load(out / g.folder, fp)
            if cached is None:
                yield i, g, fp
            else:
                pages[i] = cached
                bar.advance(task)

    stats = store.file_stats()          # one listing of the store for every page
    rebuilt = 0
    with progress_bar(disable=not base.runner.get("progress", True)) as bar:
        task = bar.add_task("site", total=len(runs), status="")
        jobs = stale_pages(bar, task)
        # none or one page stale (a warm site, one grid re-run): drawn here, no worker started
        head = list(itertools.islice(jobs, 2))
        todo = itertools.chain(head, jobs)
        workers = 1 if len(head) < 2 else workspace.drawing_workers(overrides, base, len(runs))
        bar.update(task, status=f"{workers} worker(s)")
        if workers == 1:
            built = ((i, build_page(g, store, out, fp)) for i, g, fp in todo)
        else:
            reference = None if store.reference is None else str(store.reference.folder)
            built = joblib.Parallel(n_jobs=workers, return_as="generator")(
                joblib.delayed(_build_in_worker)(i, g, str(store.root), reference, str(out), fp)
                for i, g, fp in todo)
        for i, page in built:
            pages[i] = page
            rebuilt += 1
            bar.advance(task)
    pages = [pages[i] for i in sorted(pages)]
    experiments = {n: None if workspace.is_arena(n)
                   else str(workspace.experiment_field(n, "paper") or "") for n in sorted(names)}
    descriptions = {n: description("experiment", n) for n in names}
    built_from = index_digest(out, pages, experiments, descriptions, version)
    if not (rebuilt == 0 and is_current(out, built_from)
            and all((out / f).is_file() for f in SITE_FILES)):
        (out / FINGERPRINT_FILE).unlink(missing_ok=True)    # stale until both are written
        build.write_index(out, papers(), experiments, descriptions, pages, version)
        build.write_data(out, pages)
        mark_built(out, built_from)
    if not runs:
        print(f"no `dpbench run` recorded under {store.root}: the site lists the experiments "
              "only; run one, e.g. `make demo`", file=sys.stderr)
    print(f"{out / 'index.html'}: {len(pages)} page(s), {rebuilt} rebuilt, "
          f"{len(pages) - rebuilt} unchanged")
    return 0
