"""Arena leaderboards: every method of one arena experiment, per (epsilon, dataset), on the
task's primary metric, written as ``board.md``, ``board.tex``, ``board.json`` and
``board.csv`` (``report.board_files``, with a quality / time Pareto plot per dataset and a
mean-rank plot).

The rules, stated on every board:

- a cell shows the mean ± s.e. of the primary metric over its ok trials
  (``frame.mean_se``), its trials ok / asked, the median fit seconds, the median CPU
  seconds of a whole trial and the median peak RSS; a failed cell shows its error, a
  refused cell (one the arena cannot run) its reason;
- a method is *ranked* only where its mean beats the best baseline's mean (no baseline
  result: no bar); baselines and non-private references are shown, never ranked;
- the ranked methods are compared pairwise, and each with the bar, by paired t-tests over
  the trials that share a trial index (same data split and seed for every method, as the
  spec's ``data_rng`` depends on the dataset and trial only), two-sided, the whole family
  Holm-corrected at alpha 0.05 (``board_stats``: with every method equal, at most alpha of
  boards mark any of them worse); fewer than two pairs: no test;
- ranked methods are ranked by their mean (1 = best); the confidence set for the best is
  the methods no better-ranked method is significantly better than, closed in rank order;
  its members are tied (shown ``3 (=1)``, the best ``1=``); the best is the *winner* only
  if it is the set's only member and significantly better than the bar ("beats the
  baseline" is that test, ``vs_bar``); each table states the power of its procedure to find
  a method leading by 2 noise sds at its number of methods and trials (simulated);
- a table with trials still to run is *incomplete*: it shows its numbers, but no rank,
  tie or winner, and names the cells short of trials;
- per epsilon, each method's mean rank over every complete table (a refused, failed or
  missing cell counts as last, sharing the last ranks), the Friedman test and Nemenyi's
  critical difference (Demšar 2006) with its diagram, and per (epsilon, dataset) the
  quality / fit-time Pareto front among the methods significantly better than the bar
  (``vs_bar``; with no bar, among the ranked methods).

``board.json`` (schema ``dpbench-leaderboard/1``) holds the :class:`Board` as data for a
static site: ``{"schema", "header": Header, "tables": [Table with "rows": [Row]],
"mean_ranks": [MeanRank]}``, each object with the fields of its dataclass below; a number
that is not finite is null. ``board.csv`` has one row per (epsilon, dataset, method): the
:class:`Row` fields after the experiment, relation and metric.

Calibration ("as good as the reference on x% of the rows", the reading SDNist gives its
scores): where the arena runs its non-private reference on random shares of the training
rows (sweep points with a ``fraction`` parameter, e.g. ``{original: {fraction: [0.01,
0.1]}}``), each method's mean is placed on that curve (:func:`calibrate`): the smallest
share on which the reference is at least as good, interpolated log-linearly between the
two points around it; "< 1%" below the smallest share, "> 100%" above the whole data.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpbench.report.board_stats import (
    BAR,
    LEAD_SD,
    best_set,
    dataset_ranks,
    detection_power,
    friedman,
    paired_p,
)
from dpbench.report.frame import mean_se, method_name, results_frame
from dpbench.report.privacy import RELATION_TEXT, alerts, group_note, stated_relation
from dpbench.report.render import latex_table, markdown_table, sig_cell
from dpbench.roots import commit
from dpbench.runner.grid import arena_roles, load_entry
from dpbench.runner.schema import ConfigError
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import FAILED, OK, ResultStore
from dpbench.tasks import TASKS

SCHEMA = "dpbench-leaderboard/1"
ALPHA = 0.05
Cell = tuple[str, str, float]           # (dataset id, method id, epsilon)
#: row roles: ranked candidates, the baselines that set the bar, non-private references
METHOD, BASELINE, REFERENCE = "method", "baseline", "reference"
#: comparison verdicts of a row against the best ranked method
BEST, NO_TEST, NOT_SIGNIFICANT, WORSE, BETTER = "best", "no test", "n.s.", "worse", "better"


@dataclass(frozen=True)
class Rules:
    """What the board ranks on and against: the primary metric and its direction, the
    baseline and reference method ids (or yaml names), the test's level."""

    metric: str
    higher_is_better: bool
    baselines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    alpha: float = ALPHA

    def role(self, method: str) -> str:
        """The role of a method id (a sweep point takes its yaml name's role)."""
        for role, ids in ((REFERENCE, self.references), (BASELINE, self.baselines)):
            if method in ids or method_name(method) in ids:
                return role
        return METHOD

    def better(self, a: float, b: float) -> bool:
        """Is metric value ``a`` strictly better than ``b``?"""
        return a > b if self.higher_is_better else a < b


@dataclass(frozen=True)
class CellFacts:
    """What the grid and the store say of a cell beyond its ok trials."""

    dataset_label: str
    method_label: str
    asked: int
    failed: int = 0
    error: str | None = None            # the first failed trial's one-line error
    refused: str | None = None          # why the arena cannot run the cell


@dataclass(frozen=True)
class Header:
    """Everything a board states once, above its tables."""

    experiment: str
    task: str
    metric: str
    higher_is_better: bool
    relation: str
    delta: str
    profile: str
    trials: str
    test: str
    commit: str
    budget_unit: str = "epsilon"
    #: why the arena ranks on this metric (its yaml's ``metric_why``; "" for another board)
    metric_why: str = ""
    #: the arena's primary metric when this board ranks on another one
    primary: str = ""
    baselines: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    versions: dict[str, dict[str, int]] = field(default_factory=dict)
    alerts: list[str] = field(default_factory=list)
    #: the datasets a cheaper profile runs at fewer epsilons or with task parameters of
    #: their own (:func:`reduced_lines`), one statement each
    reduced: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    """One method on one (epsilon, dataset): its numbers, rank and comparison with the best."""

    epsilon: float
    dataset: str
    dataset_label: str
    method: str
    method_label: str
    role: str
    status: str                         # ok | failed | refused | pending
    trials_ok: int
    trials_asked: int
    n: int = 0                          # trials with a finite metric
    mean: float | None = None
    se: float | None = None
    fit_s: float | None = None          # median over the ok trials
    peak_rss_mb: float | None = None    # median over the ok trials
    ranked: bool = False
    rank: int | None = None
    tied: bool = False
    winner: bool = False
    vs_best: str | None = None          # best | no test | n.s. | worse | better
    diff_vs_best: float | None = None   # mean paired difference, this - best
    p_vs_best: float | None = None
    pairs_vs_best: int = 0
    pareto: bool = False
    note: str = ""
    trials_failed: int = 0
    #: the Holm-corrected test against the bar: better | n.s. | worse | no test
    vs_bar: str | None = None
    p_vs_bar: float | None = None
    #: the share of the real training rows on which the non-private reference reaches this
    #: mean (``calibrate``); None: no calibration points or no mean
    as_good_as: float | None = None
    as_good_as_text: str = ""
    #: median CPU seconds of a whole trial (data, fit and scoring), from the records
    cpu_s: float | None = None
    #: a worse row: the better-ranked method (label) most significantly better than it,
    #: and that comparison's Holm-adjusted p
    worse_than: str | None = None
    p_worse: float | None = None
    #: median budget spent over the ok trials (the board's unit: eps, or mu for GDP) and
    #: its share of the cell's target; None for a non-private row or an unrecorded spend
    spent: float | None = None
    spent_share: float | None = None


@dataclass(frozen=True)
class Table:
    """Every method on one (epsilon, dataset), ranked rows first."""

    epsilon: float
    dataset: str
    dataset_label: str
    bar: str | None                     # the best baseline (its mean is the bar)
    bar_mean: float | None
    best: str | None
    winner: str | None
    rows: list[Row]
    #: "<ok> of <asked> trials; short: <cells>" while trials are still to run (no ranks)
    incomplete: str | None = None
    #: power to find a method leading by LEAD_SD noise sds (simulated), None: no test
    power: float | None = None


@dataclass(frozen=True)
class MeanRank:
    """A method's mean rank at one epsilon over the complete tables (a refused, failed or
    missing cell last): ``ranked_on`` tables of the epsilon's ``datasets``."""

    epsilon: float
    method: str
    method_label: str
    mean_rank: float | None
    ranked_on: int
    datasets: int


@dataclass(frozen=True)
class Across:
    """The methods' ranks across the complete tables of one epsilon: the Friedman test and
    Nemenyi's critical difference (``board_stats.friedman``)."""

    epsilon: float
    methods: list[str]
    labels: list[str]
    mean_ranks: list[float]
    datasets: int
    statistic: float | None
    p: float | None
    cd: float | None


@dataclass(frozen=True)
class Board:
    """One arena experiment's board at one profile."""

    header: Header
    tables: list[Table]
    mean_ranks: list[MeanRank]
    across: list[Across] = field(default_factory=list)


# --- inputs from the grid and the store ---------------------------------------------------


def cell_facts(specs: Sequence[TrialSpec], store: ResultStore,
               refused: Iterable[tuple[str, str, str]] = ()) -> dict[Cell, CellFacts]:
    """Per cell of the grid: labels, trials asked, failed trials and the first error; per
    refused (dataset, method, reason): one cell at each epsilon of the grid."""
    out: dict[Cell, CellFacts] = {}
    labels: dict[str, str] = {}
    for s in specs:
        cell = (s.dataset, s.method, s.epsilon)
        labels[s.dataset] = s.meta.get("dataset_label", s.dataset)
        labels[s.method] = s.meta.get("method_label", s.method)
        facts = out.get(cell) or CellFacts(labels[s.dataset], labels[s.method], 0)
        rec = store.get(s.key)
        if rec is not None and rec.get("status") == FAILED:
            facts = replace(facts, failed=facts.failed + 1,
                            error=facts.error or str(rec.get("error", "")))
        out[cell] = replace(facts, asked=facts.asked + 1)
    every = sorted({s.epsilon for s in specs})
    own: dict[str, set[float]] = {}
    for s in specs:
        own.setdefault(s.dataset, set()).add(s.epsilon)
    for dataset, method, reason in refused:
        # at the epsilons its dataset runs at (a cheaper profile may keep fewer for it)
        for eps in sorted(own.get(dataset) or every):
            out[(dataset, method, eps)] = CellFacts(labels.get(dataset, dataset),
                                                    labels.get(method) or _label(method), 0,
                                                    refused=reason)
    return out


def reduced_lines(specs: Sequence[TrialSpec], experiment: Mapping[str, Any]) -> list[str]:
    """One statement per dataset that the grid runs at fewer epsilons than the others, or
    with task parameters other than the experiment's (an arena's cheaper default profile:
    ``profile.dataset_epsilons``, ``experiment.task_params_by_dataset``): what it runs at,
    beside what the arena's other tables run at."""
    every = sorted({s.epsilon for s in specs})
    common = dict(experiment.get("task_params") or {})
    unit = specs[0].budget_unit if specs else "epsilon"
    eps: dict[str, set[float]] = {}
    seen: dict[str, TrialSpec] = {}
    for s in specs:
        eps.setdefault(s.dataset, set()).add(s.epsilon)
        seen.setdefault(s.dataset, s)

    def values(xs: Iterable[float]) -> str:
        return ", ".join(f"{x:g}" for x in sorted(xs))

    def params(p: Mapping[str, Any]) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(p.items())) or "none"

    out = []
    for dataset, s in seen.items():
        parts = []
        if eps[dataset] != set(every):
            parts.append(f"{unit} {values(eps[dataset])} only (the grid: {values(every)})")
        if dict(s.task_params) != common:
            parts.append(f"task parameters {params(s.task_params)} (the experiment's: "
                         f"{params(common)})")
        if parts:
            label = s.meta.get("dataset_label", dataset)
            out.append(f"{label}: {'; '.join(parts)}")
    return out


def _label(method: str) -> str:
    """A method's label from its yaml (a refused method has no spec to carry it)."""
    try:
        return str(load_entry("method", method_name(method)).get("label", method))
    except ConfigError:
        return method


def versions(specs: Sequence[TrialSpec], store: ResultStore) -> dict[str, dict[str, int]]:
    """Per library, each version the grid's ok trials ran with and how many trials did."""
    seen: dict[str, Counter[str]] = {}
    for s in specs:
        rec = store.get(s.key)
        if rec and rec.get("status") == OK:
            for lib, ver in (rec.get("versions") or {}).items():
                seen.setdefault(lib, Counter())[str(ver)] += 1
    return {lib: dict(sorted(c.items())) for lib, c in sorted(seen.items())}


def relation_alerts(frame: pd.DataFrame, relation: str) -> list[str]:
    """One sentence per private method whose trials state their guarantee for another
    neighbouring relation than the arena's (``stated_relation``: a cell converted by group
    privacy states the arena's)."""
    if frame.empty or "privacy.neighbours" not in frame or "privacy.private" not in frame:
        return []
    private = frame[frame["privacy.private"].fillna(False).astype(bool)]
    recorded = stated_relation(private)
    other = private.assign(recorded=recorded)[recorded != relation]
    return [f"RELATION: {label}'s trials record {', '.join(sorted(part['recorded'].unique()))}, "
            f"not the arena's {RELATION_TEXT.get(relation, relation)}"
            for label, part in other.groupby("method_label", sort=True)]


def test_text(alpha: float = ALPHA) -> str:
    """The test the board uses, as stated in its header."""
    return (f"paired t-tests of every pair of ranked methods and of each against the bar, "
            f"over the trials sharing a trial index (same data split and seed), two-sided, "
            f"Holm-corrected over the table at alpha = {alpha:g}; fewer than 2 pairs: no "
            "test; tied = in the confidence set for the best (no better-ranked method "
            "significantly better, closed in rank order); winner = the set's only member "
            "and significantly better than the bar; Pareto front: among the methods "
            "significantly better than the bar; incomplete tables are not ranked")


# --- the board, from the results frame ----------------------------------------------------


def finite(x: Any) -> float | None:
    """``x`` as a float, None when missing or not finite (JSON's null)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def median(values: pd.Series | None) -> float | None:
    """The median of the finite values, None without any."""
    if values is None:
        return None
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else None


#: a row against another over the trials sharing a trial index (``board_stats.paired_p``)
paired_test = paired_p


def verdict(diff: float | None, p: float | None, rules: Rules) -> str:
    """A row's comparison with the best ranked method (``diff`` = row - best)."""
    if p is None or diff is None:
        return NO_TEST
    if p >= rules.alpha:
        return NOT_SIGNIFICANT
    return BETTER if rules.better(diff, 0.0) else WORSE


#: a private member spending less than this share of its cell's budget is flagged on the
#: board (equal terms: it may have no tighter analysis, but the reader must know)
UNDERSPEND = 0.9


#: (spent, target) columns of a cell's spend in its budget's unit, the first recorded wins:
#: a mu budget's (the ledger's mu against the cell's mu), an epsilon budget's (under the
#: cell's relation where group privacy converted the method's own, else its own)
SPEND_COLUMNS = {"mu": (("privacy.mu_spent", "epsilon"),),
                 "epsilon": (("privacy.relation_epsilon", "privacy.cell_epsilon"),
                             ("privacy.spent_epsilon", "privacy.target_epsilon"))}


def spend(rows: pd.DataFrame) -> tuple[float | None, float | None]:
    """Median budget spent by a cell's private ok trials, in the cell's budget unit and
    relation (:data:`SPEND_COLUMNS`: a method that accounts in mu-GDP on an epsilon board
    is read by its epsilon, never its mu against the cell's epsilon), and its median share
    of the target; Nones when no trial is private or none recorded a spend."""
    if rows.empty or "privacy.private" not in rows:
        return None, None
    private = rows[rows["privacy.private"].astype("boolean").fillna(False).astype(bool)]
    units = private["budget_unit"].dropna() if "budget_unit" in private else ()
    unit = "mu" if len(units) and str(units.iloc[0]) == "mu" else "epsilon"
    for spent, target in SPEND_COLUMNS[unit]:
        if spent in private and target in private and private[spent].notna().any():
            got = pd.to_numeric(private[spent], errors="coerce")
            share = got / pd.to_numeric(private[target], errors="coerce")
            return median(got), median(share)
    return None, None


def cell_row(cell: Cell, facts: CellFacts, rows: pd.DataFrame, rules: Rules) -> Row:
    """A cell's row before ranking: numbers of its ok trials (``rows``), status and note
    (a private member spending under :data:`UNDERSPEND` of its budget is flagged; a
    baseline, e.g. one that reads no private row, is not a member)."""
    dataset, method, eps = cell
    mean, se, n = mean_se(rows[rules.metric]) if rules.metric in rows else (math.nan,
                                                                           math.nan, 0)
    status = OK if len(rows) else (
        "refused" if facts.refused else FAILED if facts.failed else "pending")
    spent, share = spend(rows)
    note = cell_note(facts, len(rows), n, rules)
    if share is not None and share < UNDERSPEND and rules.role(method) == METHOD:
        note = "; ".join(filter(None, [f"spends {share:.0%} of its budget", note]))
    return Row(eps, dataset, facts.dataset_label, method, facts.method_label,
               rules.role(method), status, len(rows), facts.asked, n, finite(mean),
               finite(se), median(rows.get("fit_s")), median(rows.get("peak_rss_mb")),
               note=note, trials_failed=facts.failed, cpu_s=median(rows.get("cpu_s")),
               spent=spent, spent_share=share)


def cell_note(facts: CellFacts, ok: int, n: int, rules: Rules) -> str:
    """What a reader must know of the cell: refused, failed, short of trials, no metric."""
    parts = []
    if facts.refused:
        parts.append(f"refused: {facts.refused}")
    if 0 < ok < facts.asked:
        parts.append(f"{ok} of {facts.asked} trials ok")
    if facts.failed:
        parts.append(f"{facts.failed} failed: {facts.error}")
    elif not ok and not facts.refused:
        parts.append("not run yet")
    if n < ok:
        parts.append(f"{ok - n} trial(s) without a finite {rules.metric}")
    return "; ".join(parts)


def with_note(row: Row, text: str, **changes: Any) -> Row:
    """``row`` with ``text`` put before its note (and ``changes``)."""
    return replace(row, note="; ".join(filter(None, [text, row.note])), **changes)


def best_of(rows: Sequence[Row], rules: Rules) -> Row | None:
    """The row with the best mean (first of equals), None without a mean."""
    best = None
    for r in rows:
        if r.mean is not None and (best is None or rules.better(r.mean, best.mean)):
            best = r
    return best


def short_of_trials(rows: Sequence[Row]) -> str | None:
    """``<ok> of <asked> trials; short: <cells>`` when a cell that is not refused still has
    trials to run (neither ok nor failed), else None."""
    short = [r for r in rows if r.status != "refused"
             and r.trials_ok + r.trials_failed < r.trials_asked]
    if not short:
        return None
    ok = sum(r.trials_ok for r in rows)
    asked = sum(r.trials_asked for r in rows if r.status != "refused")
    cells = ", ".join(f"{r.method_label} ({r.trials_ok}/{r.trials_asked})" for r in short)
    return f"incomplete: {ok} of {asked} trials ok; short: {cells}"


def rank_table(rows: Sequence[Row], trials: Mapping[str, Mapping[int, float]],
               rules: Rules) -> Table:
    """Rank one (epsilon, dataset): bar, ranked rows, the confidence set for the best, the
    winner, the tests against the bar, the front (module docstring; ``board_stats``).

    ``trials`` maps each method id to its metric value per trial index."""
    bar = best_of([r for r in rows if r.role == BASELINE], rules)
    above = [r for r in rows if r.role == METHOD and r.mean is not None
             and (bar is None or rules.better(r.mean, bar.mean))]
    out = {r.method: r for r in rows}
    for r in rows:
        if r.role == REFERENCE:
            out[r.method] = with_note(r, "non-private reference, not ranked")
        elif r.role == BASELINE:
            out[r.method] = with_note(r, "baseline (sets the bar)")
        elif r.mean is not None and r not in above:
            out[r.method] = with_note(r, f"does not beat baseline {bar.method_label}")
    first = rows[0]
    incomplete = short_of_trials(rows)
    if incomplete:
        final = [out[r.method] for r in rows]
        return Table(first.epsilon, first.dataset, first.dataset_label,
                     bar.method if bar else None, bar.mean if bar else None, None, None,
                     sorted(final, key=row_order(rules)), incomplete)
    order = [r.method for r in sorted(above, key=lambda r: -r.mean if rules.higher_is_better
                                      else r.mean)]
    tests = best_set(order, trials, bar.method if bar else None, rules.higher_is_better,
                     rules.alpha)
    best = order[0] if order else None
    members = set(tests.best_set)
    for i, m in enumerate(order):
        row = replace(out[m], ranked=True, rank=i + 1,
                      tied=m in members and len(members) > 1)
        pairs = paired_p(trials.get(m, {}), trials.get(best, {}))[2]
        if m == best:
            row = replace(row, vs_best=BEST)
        else:
            p, d = tests.adjusted.get((best, m)), tests.diffs.get((best, m))
            row = replace(row, vs_best=NO_TEST if p is None else
                          NOT_SIGNIFICANT if m in members else WORSE,
                          diff_vs_best=None if d is None else -d, p_vs_best=p,
                          pairs_vs_best=pairs)
            if m in tests.worse_than:
                by = tests.worse_than[m]
                row = replace(row, worse_than=out[by].method_label,
                              p_worse=tests.adjusted[by, m])
        if bar is not None:
            p_bar = tests.adjusted.get((m, BAR))
            beats = tests.beats_bar.get(m)
            row = replace(row, p_vs_bar=p_bar, vs_bar=NO_TEST if beats is None
                          else BETTER if beats else NOT_SIGNIFICANT)
        out[m] = row
    winner = best if best is not None and tests.best_set == [best] else None
    if winner and bar is not None and out[winner].vs_bar != BETTER:
        out[winner] = with_note(out[winner], "not significantly better than the bar")
        winner = None
    if winner:
        out[winner] = replace(out[winner], winner=True)
    # the front among the methods that beat the bar, by its test (module docstring)
    front = pareto([out[m] for m in order if bar is None or out[m].vs_bar == BETTER], rules)
    final = [replace(out[r.method], pareto=r.method in front) for r in rows]
    n = max((r.trials_asked for r in above), default=0)
    power = detection_power(len(order), n, rules.alpha)[0] if len(order) > 1 else None
    return Table(first.epsilon, first.dataset, first.dataset_label,
                 bar.method if bar else None, bar.mean if bar else None, best, winner,
                 sorted(final, key=row_order(rules)), None, power)


def row_order(rules: Rules) -> Any:
    """Sort key: ranked by rank, then other methods, baselines, references (each by mean),
    then the cells without a result."""
    groups = {METHOD: 1, BASELINE: 2, REFERENCE: 3}

    def key(r: Row) -> tuple:
        if r.mean is None:
            return (4, 0, 0.0, r.method)
        score = -r.mean if rules.higher_is_better else r.mean
        return (0 if r.ranked else groups[r.role], r.rank or 0, score, r.method)
    return key


def pareto(rows: Sequence[Row], rules: Rules) -> set[str]:
    """The methods (references left out) with a mean and a fit time that no other such
    method dominates: at least as good in both, strictly better in one."""
    pts = [r for r in rows if r.role != REFERENCE and r.mean is not None
           and r.fit_s is not None]

    def dominates(a: Row, b: Row) -> bool:
        no_worse = not rules.better(b.mean, a.mean) and a.fit_s <= b.fit_s
        return no_worse and (rules.better(a.mean, b.mean) or a.fit_s < b.fit_s)
    return {b.method for b in pts if not any(dominates(a, b) for a in pts)}


def ranks_methods(t: Table) -> bool:
    """Does a table enter the mean ranks: complete, and some method has a mean on it (a
    table whose every cell is refused or failed says nothing of the order: it is listed
    on the board, not averaged)."""
    return t.incomplete is None and any(r.role == METHOD and r.mean is not None
                                        for r in t.rows)


def mean_ranks(tables: Sequence[Table], rules: Rules) -> tuple[list[MeanRank], list[Across]]:
    """Per epsilon: every method's mean rank over the complete tables (a refused, failed
    or missing cell last; ``board_stats.dataset_ranks``) and the Friedman / Nemenyi
    statistics over them."""
    out, across = [], []
    for eps in sorted({t.epsilon for t in tables}):
        at = [t for t in tables if t.epsilon == eps]
        labels = {r.method: r.method_label for t in at for r in t.rows if r.role == METHOD}
        done = [t for t in at if ranks_methods(t)]
        per_table = []
        for t in done:
            means = {m: None for m in labels}
            means.update({r.method: r.mean for r in t.rows if r.role == METHOD})
            per_table.append(dataset_ranks(means, rules.higher_is_better))
        f = friedman(per_table, rules.alpha)
        ranks = dict(zip(f.methods, f.mean_ranks, strict=True))
        out += [MeanRank(eps, m, label, finite(ranks.get(m)), len(done), len(at))
                for m, label in labels.items()]
        across.append(Across(eps, f.methods, [labels[m] for m in f.methods],
                             [float(x) for x in f.mean_ranks], f.datasets, f.statistic, f.p,
                             f.cd))
    ranked = sorted(out, key=lambda x: (x.epsilon, x.mean_rank is None, x.mean_rank or 0,
                                        x.method))
    return ranked, across


def calibration_curve(rows: Sequence[Row], fractions: Mapping[str, float],
                      rules: Rules) -> list[tuple[float, float]]:
    """(fraction of the training rows, reference mean) of a table's calibration points:
    the reference rows fitted on a ``fraction`` of the rows (their sweep points), with the
    same reference on every row as fraction 1; sorted by fraction. Empty without points."""
    points = {r.method: fractions[r.method] for r in rows
              if r.role == REFERENCE and r.method in fractions and r.mean is not None}
    if not points:
        return []
    names = {method_name(m) for m in points}
    full = [r for r in rows if r.role == REFERENCE and r.method in names
            and r.mean is not None]
    curve = [(f, next(r.mean for r in rows if r.method == m)) for m, f in points.items()]
    curve += [(1.0, r.mean) for r in full]
    return sorted(curve)


def percent(share: float) -> str:
    """A share of the rows as a percentage with two significant digits (``0.19%``,
    ``4%``, ``83%``, ``100%``)."""
    return f"{float(f'{share * 100:.2g}'):g}%"


def calibrate(mean: float, curve: Sequence[tuple[float, float]], rules: Rules
              ) -> tuple[float | None, str]:
    """The smallest share of the rows on which the reference is at least as good as
    ``mean``: the first calibration point that is, interpolated log-linearly from the point
    before it; ``(None, "< 1%")`` below the smallest share, ``(None, "> 100%")`` above the
    whole data (the method beats the non-private reference's mean)."""
    if not curve:
        return None, ""
    prev = None
    for f, r in curve:
        if not rules.better(mean, r):           # the reference here is at least as good
            if prev is None:
                return None, f"< {percent(f)}"
            f0, r0 = prev
            t = 1.0 if r == r0 else (mean - r0) / (r - r0)
            share = math.exp(math.log(f0) + t * (math.log(f) - math.log(f0)))
            return share, percent(share)
        prev = (f, r)
    return None, "> 100%"


def build_board(frame: pd.DataFrame, facts: Mapping[Cell, CellFacts], rules: Rules,
                header: Header) -> Board:
    """The board of one arena experiment from its results frame (``frame.results_frame``)
    and the facts of every cell (``cell_facts``)."""
    groups = {} if frame.empty else {
        (d, m, float(e)): g for (d, m, e), g in frame.groupby(
            ["dataset", "method", "epsilon"], sort=False)}
    empty = pd.DataFrame()
    fractions = {} if "method.fraction" not in frame else {
        str(m): float(f) for m, f in frame.groupby("method")["method.fraction"].first().items()
        if pd.notna(f)}
    tables = []
    for eps, dataset in sorted({(c[2], c[0]) for c in facts}):
        cells = [c for c in facts if c[0] == dataset and c[2] == eps]
        rows = [cell_row(c, facts[c], groups.get(c, empty), rules) for c in cells]
        trials = {c[1]: dict(zip(groups[c]["trial"].astype(int),
                                 groups[c][rules.metric].astype(float), strict=True))
                  for c in cells if c in groups and rules.metric in groups[c]}
        table = rank_table(rows, trials, rules)
        curve = calibration_curve(table.rows, fractions, rules)
        if curve:
            table = replace(table, rows=[
                replace(r, **dict(zip(("as_good_as", "as_good_as_text"),
                                      calibrate(r.mean, curve, rules), strict=True)))
                if r.mean is not None and r.role != REFERENCE else r
                for r in table.rows])
        tables.append(table)
    return Board(header, tables, *mean_ranks(tables, rules))


def board_from_store(specs: Sequence[TrialSpec], store: ResultStore,
                     experiment: Mapping[str, Any], *, profile: str, delta: Any, trials: str,
                     refused: Iterable[tuple[str, str, str]] = ()) -> Board:
    """The board of an arena experiment (its composed ``experiment`` block) on its primary
    metric (:func:`boards_from_store`'s first)."""
    return next(iter(boards_from_store(specs, store, experiment, profile=profile,
                                       delta=delta, trials=trials,
                                       refused=refused).values()))


def arena_metrics(experiment: Mapping[str, Any]) -> dict[str, bool]:
    """The metrics an arena's boards rank on, with their direction: its yaml's ``metric``
    (default: the task's primary) first, then the task's other rankable metrics."""
    task = TASKS[str(experiment["task"])]
    ranked = task.ranked_metrics()
    primary = str(experiment.get("metric") or task.primary)
    if primary not in ranked:
        raise ValueError(f"experiment.metric={primary!r} is not a rankable metric of task "
                         f"{task.name!r}; valid: {', '.join(ranked)}")
    return {primary: ranked[primary], **{m: h for m, h in ranked.items() if m != primary}}


def boards_from_store(specs: Sequence[TrialSpec], store: ResultStore,
                      experiment: Mapping[str, Any], *, profile: str, delta: Any,
                      trials: str, refused: Iterable[tuple[str, str, str]] = ()
                      ) -> dict[str, Board]:
    """The boards of an arena experiment (its composed ``experiment`` block) from the store,
    one per rankable metric (:func:`arena_metrics`, the primary first): the grid ``specs``
    of ``profile``, its ``delta`` rule, ``trials`` (e.g. ``smoke profile, 2 trials per
    cell``) and the cells the arena refuses. Each record is read once."""
    name, task = str(experiment["name"]), TASKS[str(experiment["task"])]
    metrics = arena_metrics(experiment)
    primary = next(iter(metrics))
    roles = arena_roles()       # the method yamls' own roles, unless the experiment lists
    baselines = tuple(experiment.get("baselines")
                      or [m for m, r in roles.items() if r == "baseline"])
    references = tuple(experiment.get("references")
                       or [m for m, r in roles.items() if r == "reference"])
    relation = str(experiment.get("relation") or "not stated")
    frame = results_frame(specs, store, name)
    facts = cell_facts(specs, store, refused)
    unit = specs[0].budget_unit if specs else "epsilon"
    common = dict(versions=versions(specs, store),
                  alerts=[*alerts(frame), *relation_alerts(frame, relation),
                          *filter(None, [group_note(frame)])],
                  reduced=reduced_lines(specs, experiment))
    boards = {}
    for metric, higher in metrics.items():
        rules = Rules(metric, higher, baselines, references)
        header = Header(name, task.name, metric, higher, relation, str(delta), profile,
                        trials, test_text(rules.alpha), commit(), unit,
                        str(experiment.get("metric_why") or "") if metric == primary else "",
                        primary, list(baselines), list(references), **common)
        boards[metric] = build_board(frame, facts, rules, header)
    return boards


# --- writing ------------------------------------------------------------------------------


def fmt(x: float | None, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, ``—`` for none."""
    return "—" if x is None else f"{x:.{digits}g}"


def rank_text(r: Row) -> str:
    """``1=`` for the best of a tie, ``3 (=1)`` for a method tied with it, ``1 (winner)``,
    ``3``, or ``—`` when unranked."""
    if not r.ranked:
        return "—"
    if r.tied:
        return "1=" if r.rank == 1 else f"{r.rank} (=1)"
    return f"{r.rank}{' (winner)' if r.winner else ''}"


def comparison_text(r: Row) -> str:
    """``worse: -0.012, p = 0.003 (5 pairs)``, ``best``, ``no test (1 pair)`` or empty."""
    if r.vs_best in (None, BEST):
        return r.vs_best or ""
    if r.vs_best == NO_TEST:
        return f"no test ({r.pairs_vs_best} pair{'s' if r.pairs_vs_best != 1 else ''})"
    p = "p < 0.001" if r.p_vs_best < 0.001 else f"p = {r.p_vs_best:.2g}"
    text = f"{r.vs_best}: {r.diff_vs_best:+.3g}, {p} ({r.pairs_vs_best} pairs)"
    if r.worse_than is not None and r.p_worse is not None:
        text += f"; worse than {r.worse_than} (p = {r.p_worse:.2g})"
    return text


def bar_text(r: Row) -> str:
    """``better, p = 0.003`` / ``n.s., p = 0.4`` / ``no test``: a ranked method against the
    bar (the test that "beats the baseline" is); empty for any other row."""
    if r.vs_bar is None:
        return ""
    if r.p_vs_bar is None:
        return r.vs_bar
    return f"{r.vs_bar}, {'p < 0.001' if r.p_vs_bar < 0.001 else f'p = {r.p_vs_bar:.2g}'}"


def table_header(header: Header) -> list[str]:
    """The columns of every (epsilon, dataset) table."""
    direction = "higher" if header.higher_is_better else "lower"
    return ["rank", "method", f"{header.metric} ({direction} is better)", "trials ok/asked",
            "vs best (paired, Holm)", "vs bar (paired, Holm)", "as good as the reference on",
            "fit s (median)",
            "trial CPU s (median)", "peak RSS MB (median)",
            f"spent / target {header.budget_unit.replace('epsilon', 'eps')}", "Pareto",
            "note"]


def table_rows(t: Table) -> list[list[str]]:
    """The cells of a table, one list per method."""
    return [[rank_text(r), r.method_label,
             sig_cell(r.mean if r.mean is not None else math.nan,
                      r.se if r.se is not None else math.nan, 4),
             f"{r.trials_ok}/{r.trials_asked}", comparison_text(r), bar_text(r),
             f"{r.as_good_as_text} of the rows" if r.as_good_as_text else "", fmt(r.fit_s),
             fmt(r.cpu_s), fmt(r.peak_rss_mb),
             "" if r.spent is None else f"{r.spent:.3g} / {r.epsilon:g}",
             "yes" if r.pareto else "", r.note]
            for r in t.rows]


def table_title(t: Table, header: Header) -> str:
    """``<dataset label>, epsilon = 1``."""
    return f"{t.dataset_label}, {header.budget_unit} = {t.epsilon:g}"


def table_notes(t: Table) -> list[str]:
    """The table's bar and winner, by method label."""
    label = {r.method: r.method_label for r in t.rows}
    bar = (f"bar: baseline {label[t.bar]} (mean {fmt(t.bar_mean, 4)})" if t.bar
           else "bar: none (no baseline result), every method with a result is ranked")
    if t.incomplete:
        return [bar, f"{t.incomplete}: no rank, tie or winner until they are run"]
    win = (f"winner: {label[t.winner]}" if t.winner
           else "no winner (the best is tied, or nothing is ranked)")
    power = ([] if t.power is None else
             [f"power to find a method leading the others by {LEAD_SD:g} noise sds at "
              f"these methods and trials: {percent(t.power)} (simulated)"])
    return [bar, win, *power]


def rank_summary(board: Board) -> tuple[list[str], list[list[str]]]:
    """The mean-rank table: per epsilon and method, the mean rank and over how many of the
    epsilon's datasets (the complete tables)."""
    unit = board.header.budget_unit
    rows = [[f"{m.epsilon:g}", m.method_label, fmt(m.mean_rank),
             f"{m.ranked_on} of {m.datasets}"] for m in board.mean_ranks]
    return [unit, "method", "mean rank", "complete tables (of datasets)"], rows


def across_notes(board: Board) -> list[str]:
    """How a mean rank is taken, then per epsilon: the Friedman test and the critical
    difference, or why there is none."""
    unit = board.header.budget_unit
    out = [f"mean rank per {unit}: over every complete table; a refused, failed or missing "
           "cell counts as last (the methods there share the last ranks)"]
    for a in board.across:
        if a.statistic is None:
            out.append(f"{unit} {a.epsilon:g}: no Friedman test ({a.datasets} complete "
                       f"table(s), {len(a.methods)} methods; it needs 2 and 3)")
        else:
            p = "p < 0.001" if a.p < 0.001 else f"p = {a.p:.2g}"
            out.append(f"{unit} {a.epsilon:g}: Friedman chi2 = {a.statistic:.3g}, {p} over "
                       f"{a.datasets} tables; Nemenyi critical difference {a.cd:.3g} "
                       "(mean ranks further apart differ at alpha "
                       f"{ALPHA:g})")
    return out


def header_lines(h: Header) -> list[str]:
    """The header block: one statement a line."""
    vers = "; ".join(f"{lib} {', '.join(f'{v} ({n})' for v, n in vs.items())}"
                     for lib, vs in h.versions.items()) or "none recorded"
    direction = f"{'higher' if h.higher_is_better else 'lower'} is better"
    metric = (f"ranked on: {h.metric} ({direction}); the arena's primary metric is "
              f"{h.primary} (its board is the main one)" if h.primary and h.primary != h.metric
              else f"primary metric: {h.metric} ({direction})"
              + (f": {h.metric_why}" if h.metric_why else ""))
    return [f"arena: {h.experiment}", f"task: {h.task}", metric,
            f"neighbouring relation: {RELATION_TEXT.get(h.relation, h.relation)} "
            f"({h.relation}), every cell", f"delta: {h.delta}", f"profile: {h.profile}",
            f"trials: {h.trials}", f"baselines: {', '.join(h.baselines) or 'none'}",
            f"references (never ranked): {', '.join(h.references) or 'none'}",
            f"test: {h.test}", f"commit: {h.commit}",
            f"library versions (version (ok trials)): {vers}", *h.alerts,
            *(f"reduced at this profile (cost; docs/arena.md): {x}" for x in h.reduced)]


def to_markdown(board: Board) -> str:
    """``board.md``: the header block, one table per (epsilon, dataset), the mean ranks."""
    lines = [f"# Leaderboard: {board.header.experiment}", ""]
    lines += [f"- {x}" for x in header_lines(board.header)] + [""]
    for t in board.tables:
        lines += markdown_table(table_title(t, board.header), table_header(board.header),
                                table_rows(t), table_notes(t)) + [""]
    lines += markdown_table("Mean rank per " + board.header.budget_unit, *rank_summary(board),
                            across_notes(board))
    return "\n".join(lines) + "\n"


def to_latex(board: Board) -> str:
    """``board.tex``: the header as comments, then the tables of ``board.md`` in LaTeX, each
    caption naming the arena and its relation."""
    lines = [f"% Leaderboard: {board.header.experiment}"]
    lines += [f"% {x}" for x in header_lines(board.header)] + [""]
    relation = f"relation {board.header.relation}"
    for t in board.tables:
        title = table_title(t, board.header)
        lines += latex_table(title, table_header(board.header), table_rows(t),
                             table_notes(t), f"{board.header.experiment}: {title} "
                             f"({relation})") + [""]
    lines += latex_table("Mean rank", *rank_summary(board), across_notes(board))
    return "\n".join(lines) + "\n"


def to_json(board: Board) -> str:
    """``board.json`` (see the module docstring for its schema)."""
    return json.dumps({"schema": SCHEMA, **asdict(board)}, indent=1, sort_keys=True,
                      allow_nan=False)


def from_json(text: str) -> Board:
    """The :class:`Board` of a ``board.json``."""
    data = json.loads(text)
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} board: schema {data.get('schema')!r}")
    tables = [Table(**{**t, "rows": [Row(**r) for r in t["rows"]]}) for t in data["tables"]]
    return Board(Header(**data["header"]), tables,
                 [MeanRank(**m) for m in data["mean_ranks"]],
                 [Across(**a) for a in data.get("across", [])])


def to_frame(board: Board) -> pd.DataFrame:
    """One row per (epsilon, dataset, method), as ``board.csv``."""
    h = board.header
    rows = pd.DataFrame([{"experiment": h.experiment, "relation": h.relation,
                          "metric": h.metric, **asdict(r)}
                         for t in board.tables for r in t.rows])
    return rows.astype({"rank": "Int64"}) if "rank" in rows else rows
