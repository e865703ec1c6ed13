"""The claim kinds: one spec dataclass and one check function each (see ``engine`` for the
claims.yaml contract). A check turns a results frame into ``Verdict`` rows.

Every kind reads only ids and numbers from its spec; no paper, method or dataset is named
here.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpbench.report.frame import (
    histogram_edges,
    mean_se,
    pooled_counts,
    share_within,
    summarise,
)
from dpbench.report.numbers import compare, read_numbers, sd_se

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Verdict:
    """One checked row: claim id and text, where (dataset, eps; eps None = all epsilons),
    what beyond that (``subject``: a method or column, "" when the claim names it), the
    status and the numbers behind it."""

    claim: str
    text: str
    dataset: str
    eps: float | None
    status: str
    numbers: str
    subject: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def status(ok: bool | None) -> str:
    return SKIP if ok is None else (PASS if ok else FAIL)


# ----------------------------------------------------------------------------- selection
_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt,
        ">": operator.gt}


def eps_condition(text: str) -> Callable[[float], bool]:
    """"<=0.1" / ">=1" / "<0.5" / ">0.1" / "==1" (a bare number means ==) as a predicate."""
    m = re.fullmatch(r"\s*(<=|>=|==|<|>)?\s*([-+0-9.eE]+)\s*", str(text))
    if not m:
        raise ValueError(f"eps condition {text!r}: expected e.g. '<=0.1', '>=1', '==1'")
    op, bound = _OPS[m.group(1) or "=="], float(m.group(2))
    if op is operator.eq:
        return lambda e: bool(np.isclose(e, bound))
    return lambda e: bool(op(e, bound))


@dataclass
class Where:
    """Row filters: dataset ids (None = all) and eps conditions (all must hold)."""

    datasets: list[str] | None = None
    eps: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._eps = [eps_condition(c) for c in self.eps]

    def eps_ok(self, eps: float) -> bool:
        return all(c(eps) for c in self._eps)

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        keep = np.ones(len(frame), dtype=bool)
        if self.datasets is not None:
            keep &= frame["dataset"].isin(self.datasets).to_numpy()
        if self._eps:
            keep &= np.array([self.eps_ok(float(e)) for e in frame["epsilon"]], dtype=bool)
        return frame[keep]


GROUP = "[*]"


def in_group(method: str, ident: str) -> bool:
    """Whether ``method`` is ``ident`` or, for a group ``name[*]``, any point of ``name``
    (``name`` itself or a sweep point ``name[k=v,...]``)."""
    if not ident.endswith(GROUP):
        return method == ident
    name = ident[:-len(GROUP)]
    return method == name or method.startswith(name + "[")


def first_present(ids: list[str], present: set[str]) -> str | None:
    """The first id of ``ids`` that is present (the alternatives of a claim's method); a
    group ``name[*]`` is present when any point of ``name`` is."""
    return next((i for i in ids if any(in_group(m, i) for m in present)), None)


def _methods(frame: pd.DataFrame, ids: list[str] | None) -> list[str]:
    present = sorted(frame["method"].unique()) if "method" in frame else []
    return present if ids is None else [m for m in present if m in ids]


def _fmt(x: float) -> str:
    return f"{x:.4g}"


# ----------------------------------------------------------------------------- specs
@dataclass
class Claim:
    """Keys every claim has. ``experiments`` empty = every experiment of the paper."""

    id: str
    text: str
    kind: str
    experiments: list[str] = field(default_factory=list)
    where: Where = field(default_factory=Where)


@dataclass
class Compare(Claim):
    """Method ``a`` against method ``b`` per (dataset, eps), on the first ``metric`` present.
    A method ``name[*]`` stands for the best of that method's sweep points in each cell
    (e.g. the best of three per-dataset teacher counts).

    ``better``: "higher" / "lower" (default: the file's ``better`` entry for the metric).
    ``require``: which rows are written: "b" (where b has results; SKIP when a has none),
    "both" (only where both have results), "none" (every dataset and eps; SKIP when either
    has none)."""

    a: list[str] = field(default_factory=list)
    b: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    better: str | None = None
    require: str = "b"


@dataclass
class Similar(Compare):
    """|a - b| <= the sum of the two standard errors, or a / b inside ``ratio`` [lo, hi]."""

    ratio: list[float] | None = None


@dataclass
class Better(Compare):
    """a's mean is strictly better than b's (direction from ``better``)."""


@dataclass
class Competitive(Compare):
    """a is at most ``tol`` (absolute) worse than b; without ``tol``, at most the sum of the
    two standard errors worse (one-sided)."""

    tol: float | None = None


@dataclass
class Trend(Claim):
    """Each ``columns`` metric (regex, full match) is non-increasing (or non-decreasing) in
    eps within ``z`` x combined s.e.: for every eps_a < eps_b, the change in the wrong
    direction is at most z * sqrt(se_a^2 + se_b^2). One row per (dataset, method, column)."""

    columns: str = ""
    direction: str = "nonincreasing"
    z: float = 2.0
    methods: list[str] | None = None


@dataclass
class Band(Claim):
    """A statistic per (dataset, method, eps) inside [lo, hi] (``strict``: open interval) for
    every coefficient j: ``column`` / ``other`` are templates with ``{j}`` (j = 0, 1, ... as
    long as the column exists) or with ``{suffix}`` ("" and every ``_<name>`` for which
    both columns hold values, e.g. a task's per-target metrics ``accuracy_<target>``).
    ``stat``: "mean" (of column), "sd_over_mean" (sd of column, ddof 1, over the mean of
    other), "mean_diff" (mean of column minus mean of other)."""

    column: str = ""
    other: str | None = None
    stat: str = "mean"
    lo: float = -math.inf
    hi: float = math.inf
    strict: bool = False
    methods: list[str] | None = None


@dataclass
class Extreme(Claim):
    """Per (method, eps), ``dataset`` is the one whose mean of ``column`` (minus the mean of
    ``other`` when given, e.g. a drop from a reference) is the largest (``which: max``) or
    the smallest (``min``) among the datasets with results; SKIP when it has none."""

    dataset: str = ""
    column: str = ""
    other: str | None = None
    which: str = "max"
    methods: list[str] | None = None


@dataclass
class ShareWithin(Claim):
    """Mass of a stored histogram (JSON counts in ``column``, pooled over trials) whose bin
    centres lie in [-bound, bound] is > ``threshold``, per (dataset, eps) of ``method``.
    Bin edges from the ``edges_column`` (JSON list) or, for records without it, ``edges``
    {start, stop, num} (numpy.linspace)."""

    method: list[str] = field(default_factory=list)
    column: str = ""
    edges_column: str | None = None
    edges: dict[str, float] | None = None
    bound: float = 0.0
    threshold: float = 0.5


@dataclass
class MatchesPaper(Claim):
    """|z| <= ``tol`` for every row of the paper's numbers.csv (``table`` filter) whose
    dataset and method have results, z by ``report.numbers.compare`` (as the paper_table
    cells): (ours - paper) / sqrt(se^2 + se_paper^2 + r^2), r = unit of the paper's last
    printed digit / sqrt(12). ``stat``: mean / mean_se (s.e. over trials), sd, median, min,
    max. A row marked not comparable, with another stat, or with fewer than
    ``numbers.MIN_TRIALS`` trials (not deterministic) is SKIP."""

    table: str | None = None
    tol: float = 2.0
    numbers: str = "numbers.csv"


# ----------------------------------------------------------------------------- checks
@dataclass
class Context:
    frame: pd.DataFrame
    paper_dir: Path | None = None
    better: dict[str, str] = field(default_factory=dict)


def _metric(spec: Compare, ctx: Context) -> tuple[str | None, float]:
    """The first metric present and its sign (+1 when higher is better)."""
    metric = first_present(spec.metric, set(ctx.frame.columns))
    if metric is None:
        return None, 1.0
    direction = spec.better or ctx.better.get(metric)
    if direction not in ("higher", "lower"):
        raise ValueError(f"claim {spec.id!r}: metric {metric!r} needs better: higher|lower")
    return metric, 1.0 if direction == "higher" else -1.0


def _compare_cells(spec: Compare, ctx: Context) -> Iterator[tuple]:
    """(dataset, eps, a row or None, b row or None, metric, sign) for every row to write."""
    metric, sign = _metric(spec, ctx)
    if metric is None:
        return
    s = summarise(spec.where.apply(ctx.frame), metric)
    present = set(s["method"])
    ma, mb = first_present(spec.a, present), first_present(spec.b, present)

    def cell(dataset: str, method: str | None, eps: float) -> pd.Series | None:
        if method is None:
            return None
        rows = s[(s["dataset"] == dataset) & np.isclose(s["epsilon"], eps)]
        rows = rows[[in_group(m, method) for m in rows["method"]]]
        if rows.empty:
            return None
        finite = rows[rows["n"] > 0]        # a cell whose trials hold no finite value
        if finite.empty:                    # has no mean: its row says so (SKIP)
            return rows.iloc[0]
        return finite.loc[(sign * finite["mean"]).idxmax()]   # the best point of a group

    for dataset in sorted(s["dataset"].unique()):
        for eps in sorted(s.loc[s["dataset"] == dataset, "epsilon"].unique()):
            a, b = cell(dataset, ma, eps), cell(dataset, mb, eps)
            if spec.require == "both" and (a is None or b is None):
                continue
            if spec.require == "b" and b is None:
                continue
            yield dataset, float(eps), a, b, metric, sign


def _compare(spec: Compare, ctx: Context,
             test: Callable[[pd.Series, pd.Series, float], tuple[bool, str]]) -> list[Verdict]:
    out = []
    for dataset, eps, a, b, metric, sign in _compare_cells(spec, ctx):
        if a is None or b is None:
            ok, numbers = None, f"no results for {spec.a[0] if a is None else spec.b[0]}"
        elif a["n"] == 0 or b["n"] == 0:
            ok, numbers = None, (f"no finite {metric.upper()} for "
                                 f"{(a if a['n'] == 0 else b)['method']}")
        else:
            ok, extra = test(a, b, sign)
            numbers = f"{metric.upper()} {_fmt(a['mean'])} vs {_fmt(b['mean'])}{extra}"
            best = [f"{r['method']}" for r, ids in ((a, spec.a), (b, spec.b))
                    if any(i.endswith(GROUP) for i in ids)]
            if best:
                numbers += f"; best point: {', '.join(best)}"
        out.append(Verdict(spec.id, spec.text, dataset, eps, status(ok), numbers))
    return out


def _se_sum(a: pd.Series, b: pd.Series) -> float:
    return float(np.nan_to_num(a["se"] + b["se"]))


def check_similar(spec: Similar, ctx: Context) -> list[Verdict]:
    def test(a: pd.Series, b: pd.Series, sign: float) -> tuple[bool, str]:
        gap, tol = abs(a["mean"] - b["mean"]), _se_sum(a, b)
        ok = gap <= tol
        extra = f", abs. diff {gap:.3g} vs s.e. sum {tol:.3g}"
        if spec.ratio is not None:
            ratio = a["mean"] / b["mean"]
            ok = ok or spec.ratio[0] <= ratio <= spec.ratio[1]
            extra += f", ratio {ratio:.3f} vs [{spec.ratio[0]:g}, {spec.ratio[1]:g}]"
        return bool(ok), extra
    return _compare(spec, ctx, test)


def check_better(spec: Better, ctx: Context) -> list[Verdict]:
    def test(a: pd.Series, b: pd.Series, sign: float) -> tuple[bool, str]:
        ok = a["mean"] > b["mean"] if sign > 0 else a["mean"] < b["mean"]
        return bool(ok), f" ({'higher' if sign > 0 else 'lower'} is better)"
    return _compare(spec, ctx, test)


def check_competitive(spec: Competitive, ctx: Context) -> list[Verdict]:
    def test(a: pd.Series, b: pd.Series, sign: float) -> tuple[bool, str]:
        tol = _se_sum(a, b) if spec.tol is None else float(spec.tol)
        ok = a["mean"] >= b["mean"] - tol if sign > 0 else a["mean"] <= b["mean"] + tol
        what = "s.e. sum" if spec.tol is None else "tol"
        return bool(ok), f", allowed {'below' if sign > 0 else 'above'}: {what} {tol:.3g}"
    return _compare(spec, ctx, test)


def _columns(frame: pd.DataFrame, pattern: str) -> list[str]:
    return sorted((c for c in frame.columns if re.fullmatch(pattern, c)),
                  key=lambda c: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", c)])


def check_trend(spec: Trend, ctx: Context) -> list[Verdict]:
    if spec.direction not in ("nonincreasing", "nondecreasing"):
        raise ValueError(f"claim {spec.id!r}: direction {spec.direction!r}; valid: "
                         "nonincreasing, nondecreasing")
    frame = spec.where.apply(ctx.frame)
    sign = 1.0 if spec.direction == "nonincreasing" else -1.0
    out = []
    for (dataset, method), part in frame.groupby(["dataset", "method"], sort=True):
        if spec.methods is not None and method not in spec.methods:
            continue
        for col in _columns(part, spec.columns):
            stats = [(float(e), *mean_se(g[col])) for e, g in part.groupby("epsilon", sort=True)]
            worst, detail = -math.inf, ""
            for i, (ea, ma, sa, _) in enumerate(stats):
                for eb, mb, sb, _ in stats[i + 1:]:
                    tol = spec.z * math.sqrt(np.nan_to_num(sa) ** 2 + np.nan_to_num(sb) ** 2)
                    excess = sign * (mb - ma) - tol
                    if excess > worst:
                        worst = excess
                        detail = (f"largest change {col}({eb:.4g}) - {col}({ea:.4g}) = "
                                 f"{mb:.3f} - {ma:.3f} = {mb - ma:+.3f}, allowed {tol:.3f} "
                                 f"= {spec.z:g} x combined s.e.; n = {stats[0][3]} per eps")
            ok = None if len(stats) < 2 else worst <= 0
            out.append(Verdict(spec.id, spec.text, str(dataset), None, status(ok),
                               detail or "fewer than two epsilons", f"{method} {col}"))
    return out


def _band_fills(g: pd.DataFrame, spec: Band) -> list[dict[str, object]]:
    """The template fills of a band's columns: ``{suffix}`` over "" and every ``_<name>``
    with values in both columns, else ``{j}`` = 0, 1, ... while present (one fill for a
    plain column)."""
    if "{suffix}" in spec.column:
        head, tail = spec.column.split("{suffix}", 1)
        pattern = re.escape(head) + r"(_\w+)?" + re.escape(tail)
        found = sorted({m.group(1) or "" for c in g.columns if (m := re.fullmatch(pattern, c))})
        fills = [{"suffix": x} for x in found]
        return [f for f in fills if _filled(g, spec.column, f) and _filled(g, spec.other, f)]
    fills, j = [], 0
    while _filled(g, spec.column, {"j": j}) and _filled(g, spec.other, {"j": j}):
        fills.append({"j": j})
        j += 1
        if "{j}" not in spec.column:
            break
    return fills


def _filled(g: pd.DataFrame, template: str | None, fill: dict[str, object]) -> bool:
    """No template, or its column for this fill exists with a value."""
    return not template or (template.format(**fill) in g
                            and bool(g[template.format(**fill)].notna().any()))


_STATS = {
    "mean": lambda x, y: float(np.mean(x)),
    "sd_over_mean": lambda x, y: float(np.std(x, ddof=1) / np.mean(y)),
    "mean_diff": lambda x, y: float(np.mean(x) - np.mean(y)),
}


def check_band(spec: Band, ctx: Context) -> list[Verdict]:
    if spec.stat not in _STATS:
        raise ValueError(f"claim {spec.id!r}: stat {spec.stat!r}; valid: {', '.join(_STATS)}")
    if spec.stat != "mean" and not spec.other:
        raise ValueError(f"claim {spec.id!r}: stat {spec.stat!r} needs other:")
    frame = spec.where.apply(ctx.frame)
    out = []
    for (dataset, method, eps), g in frame.groupby(["dataset", "method", "epsilon"], sort=True):
        if spec.methods is not None and method not in spec.methods:
            continue
        values, names = [], []
        for fill in _band_fills(g, spec):
            x = g[spec.column.format(**fill)].to_numpy(dtype=float)
            y = g[spec.other.format(**fill)].to_numpy(dtype=float) if spec.other else x
            values.append(_STATS[spec.stat](x, y))
            names.append(f"{fill['suffix'].lstrip('_') or 'main'} " if "suffix" in fill else "")
        if spec.strict:
            ok = all(spec.lo < v < spec.hi for v in values)
        else:
            ok = all(spec.lo <= v <= spec.hi for v in values)
        band = (f"({spec.lo:g}, {spec.hi:g})" if spec.strict
                else f"[{spec.lo:g}, {spec.hi:g}]")
        cells = ", ".join(f"{n}{v:.3f}" for n, v in zip(names, values, strict=True))
        numbers = (f"{spec.stat} {cells} vs {band}" if values else f"no column {spec.column}")
        out.append(Verdict(spec.id, spec.text, str(dataset), float(eps),
                           status(ok if values else None), numbers, str(method)))
    return out


def check_extreme(spec: Extreme, ctx: Context) -> list[Verdict]:
    if spec.which not in ("max", "min"):
        raise ValueError(f"claim {spec.id!r}: which {spec.which!r}; valid: max, min")
    frame = spec.where.apply(ctx.frame)
    needed = [c for c in (spec.column, spec.other) if c]
    if frame.empty or any(c not in frame for c in needed):
        return []
    out = []
    for (method, eps), g in frame.groupby(["method", "epsilon"], sort=True):
        if spec.methods is not None and method not in spec.methods:
            continue
        stat = g.groupby("dataset")[spec.column].mean()
        if spec.other:
            stat = stat - g.groupby("dataset")[spec.other].mean()
        stat = stat.dropna()
        if spec.dataset not in stat.index:
            out.append(Verdict(spec.id, spec.text, spec.dataset, float(eps), SKIP,
                               f"no results for {spec.dataset}", str(method)))
            continue
        top = stat.idxmax() if spec.which == "max" else stat.idxmin()
        what = spec.column if not spec.other else f"{spec.column} - {spec.other}"
        ranked = stat.sort_values(ascending=spec.which == "min")
        listing = ", ".join(f"{d} {v:.3f}" for d, v in ranked.items())
        out.append(Verdict(spec.id, spec.text, spec.dataset, float(eps),
                           status(bool(top == spec.dataset)),
                           f"{spec.which} of {what}: {top}; {listing}", str(method)))
    return out


def check_share_within(spec: ShareWithin, ctx: Context) -> list[Verdict]:
    frame = spec.where.apply(ctx.frame)
    method = first_present(spec.method, set(frame["method"])) if len(frame) else None
    if method is None or spec.column not in frame:
        return []
    out = []
    rows = frame[frame["method"] == method]
    for (dataset, eps), g in rows.groupby(["dataset", "epsilon"], sort=True):
        counts = pooled_counts(g, spec.column)
        if counts is None:
            continue
        share = share_within(counts, histogram_edges(g, spec.edges_column, spec.edges),
                             spec.bound)
        out.append(Verdict(spec.id, spec.text, str(dataset), float(eps),
                           status(share > spec.threshold),
                           f"share {share:.3f} of {int(counts.sum())} (needs > "
                           f"{spec.threshold:g})"))
    return out


def check_matches_paper(spec: MatchesPaper, ctx: Context) -> list[Verdict]:
    if ctx.paper_dir is None or not (ctx.paper_dir / spec.numbers).exists():
        return []
    numbers = read_numbers(ctx.paper_dir / spec.numbers)
    if spec.table is not None:
        numbers = numbers[numbers["table"] == spec.table]
    frame = spec.where.apply(ctx.frame)
    out = []
    for _, p in numbers.iterrows():
        eps = float(p["epsilon"]) if math.isfinite(p["epsilon"]) else None
        g = frame[(frame["dataset"] == p["dataset"]) & (frame["method"] == p["method"])]
        if eps is not None:
            g = g[np.isclose(g["epsilon"], eps)]
        if g.empty or p["metric"] not in g:
            continue
        subject = f"{p['method']} {p['metric']} {p['stat']}"
        vals = g[p["metric"]].to_numpy(dtype=float)
        ours, se = _paper_stat(str(p["stat"]), vals)
        if not p["comparable"] or not math.isfinite(ours):
            out.append(Verdict(spec.id, spec.text, str(p["dataset"]), eps, SKIP,
                               "not comparable" if not p["comparable"]
                               else f"stat {p['stat']} not computed", subject))
            continue
        digits, value = int(p["digits"]), float(p["value"])
        gap = compare(ours, se, int(np.isfinite(vals).sum()), p)
        head = f"ours {ours:.{digits}f} vs paper {value:.{digits}f}, "
        if gap.z is None:
            out.append(Verdict(spec.id, spec.text, str(p["dataset"]), eps, SKIP,
                               head + gap.text, subject))
            continue
        out.append(Verdict(spec.id, spec.text, str(p["dataset"]), eps,
                           status(abs(gap.z) <= spec.tol),
                           head + f"z {gap.text} (|z| <= {spec.tol:g}; s.e. ours "
                           f"{gap.se:.{digits + 1}f}, paper {gap.paper_se:.{digits + 1}f})",
                           subject))
    return out


def _paper_stat(stat: str, vals: np.ndarray) -> tuple[float, float]:
    """Our value of a paper statistic and its s.e. (nan when unknown)."""
    if stat in ("mean", "mean_se"):
        m, se, _ = mean_se(vals)
        return m, se
    if stat in ("median", "min", "max"):
        return float(getattr(np, stat)(vals)), math.nan
    if stat == "sd" and len(vals) > 1:
        return sd_se(vals)
    return math.nan, math.nan


KINDS: dict[str, tuple[type[Claim], Callable[..., list[Verdict]]]] = {
    "similar": (Similar, check_similar),
    "better": (Better, check_better),
    "competitive": (Competitive, check_competitive),
    "trend": (Trend, check_trend),
    "band": (Band, check_band),
    "extreme": (Extreme, check_extreme),
    "share_within": (ShareWithin, check_share_within),
    "matches_paper": (MatchesPaper, check_matches_paper),
}
