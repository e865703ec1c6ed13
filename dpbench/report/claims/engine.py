"""Claims engine: a paper's claims as data (``papers/<paper>/claims.yaml``), checked against
one experiment's results frame and written as ``claims.md`` (for people) and
``claims.json`` (for tools) in the experiment's figure folder.

claims.yaml format
------------------
::

    better: {auc: higher, mse: lower}     # direction of each metric the claims compare
                                          # (default: the task's primary metric's)
    claims:
      - id: ours_better_baseline          # unique in the file; names the row in claims.json
        text: "Ours MSE < Baseline MSE (Sec. 5)"   # what the paper says, with its section
        kind: better                      # one of the kinds below
        experiments: [linreg_toy]         # experiments it applies to (empty / absent: all)
        where: {datasets: [toy], eps: "<=0.1"}   # optional row filters; eps: one
                                          # condition or a list ("<=0.1", ">=1", ">0.1", "==1")
        a: [ours, ours_logistic]          # a method id, or alternatives: first present wins;
                                          # name[*]: the best of that method's sweep points
        b: baseline
        metric: [mse, auc]                # a metric column, or alternatives: first present
        require: b                        # rows written: b (where b has results; SKIP when a
                                          # has none, the default), both, none (SKIP if either
                                          # is missing)

Kinds and their keys (besides id, text, kind, experiments, where); one row per dataset and
eps unless said otherwise:

* ``similar`` (a, b, metric, better, require, ratio: [lo, hi]): |mean a - mean b| <= the
  sum of their standard errors, or (with ``ratio``) lo <= a / b <= hi.
* ``better`` (a, b, metric, better, require): a's mean strictly better than b's; the
  direction is the claim's ``better: higher|lower``, else the file's entry for the metric.
* ``competitive`` (a, b, metric, better, require, tol): a at most ``tol`` worse than b
  (absolute), or without ``tol`` at most the sum of the two standard errors worse.
* ``trend`` (columns: regex, direction: nonincreasing|nondecreasing, z: 2, methods): per
  (dataset, method, column), for every eps_a < eps_b the change in the wrong direction is at
  most z * sqrt(se_a^2 + se_b^2); eps column "all".
* ``band`` (column, other, stat: mean|sd_over_mean|mean_diff, lo, hi, strict, methods): per
  (dataset, method, eps), the statistic inside [lo, hi] ((lo, hi) if strict) for every
  coefficient j, where ``column`` / ``other`` may hold ``{j}`` (j = 0, 1, ... while present)
  or ``{suffix}`` ("" and every ``_<name>`` present in both, e.g. per-target metrics).
* ``extreme`` (dataset, column, other, which: max|min, methods): per (method, eps), the
  named dataset has the largest / smallest mean of ``column`` (minus ``other``'s mean)
  among the datasets with results.
* ``share_within`` (method, column, edges_column, edges: {start, stop, num}, bound,
  threshold): pooled histogram (JSON counts) mass with bin centres in [-bound, bound] >
  threshold; edges from ``edges_column`` (JSON list) or, lacking it, numpy.linspace(edges).
* ``matches_paper`` (table, tol: 2, numbers: numbers.csv): for each row of the paper's
  numbers.csv (columns table, dataset, method, metric, stat, epsilon, value, digits,
  comparable, note; optional se, k, deterministic) with results: |z| <= tol, z =
  (ours - paper) / sqrt(se^2 + se_paper^2 + r^2), r the rounding sd of the printed digits,
  se_paper the printed one or ours scaled to the paper's k trials (``report.numbers``, the
  same z as the paper_table cells); not comparable rows, and rows with fewer than
  ``numbers.MIN_TRIALS`` trials ("fewer than 3 trials: no verdict"), are SKIP.

Output: ``claims.md``, one table | verdict | dataset | eps | claim | numbers | with the
rows grouped by claim (eps "all" for trend rows; the claim cell adds the row's subject,
e.g. a method); ``claims.json``, a list of {claim, text, dataset, eps, status, numbers,
subject}. ``dpbench figures`` prints "<claims.md>: N PASS, N FAIL, N SKIP" and each FAIL
row, from claims.json.

An unknown kind or key, or a bad value, is a one-line ``ConfigError`` naming the file and
claim. Experiments name their paper with ``paper:`` in their ``experiment:`` block.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from dpbench.report.claims.kinds import KINDS, Claim, Context, Verdict, Where
from dpbench.report.render import incomplete_caption, provenance_line
from dpbench.roots import paper_dir
from dpbench.runner.schema import ConfigError
from dpbench.tasks import TASKS

STATUSES = ("PASS", "FAIL", "SKIP")
LISTS = {"experiments", "a", "b", "metric", "methods", "method"}
NUMBERS = {"tol", "z", "lo", "hi", "bound", "threshold"}
TOP_KEYS = {"paper", "better", "claims"}


@dataclasses.dataclass
class ClaimsFile:
    """A parsed claims.yaml: metric directions and the claims in file order."""

    better: dict[str, str]
    claims: list[Claim]

    def for_experiment(self, name: str) -> list[Claim]:
        return [c for c in self.claims if not c.experiments or name in c.experiments]


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def parse_claim(raw: Mapping[str, Any], source: str = "claims") -> Claim:
    """One claim from its YAML mapping (ConfigError with a one-line message when invalid)."""
    cid = raw.get("id", "?")
    where = f"{source}: claim {cid!r}"
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where}: unknown kind {kind!r}; valid: {', '.join(sorted(KINDS))}")
    cls = KINDS[kind][0]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} for kind {kind}; valid: "
                          f"{', '.join(sorted(names))}")
    missing = [k for k in ("id", "text") if not raw.get(k)]
    if missing:
        raise ConfigError(f"{where}: missing {missing[0]!r}")
    values = {k: (_as_list(v) if k in LISTS and v is not None else v) for k, v in raw.items()}
    try:
        values.update({k: float(v) for k, v in raw.items() if k in NUMBERS and v is not None})
        if raw.get("ratio") is not None:
            values["ratio"] = [float(x) for x in raw["ratio"]]
        values["where"] = _where(raw.get("where") or {})
        claim = cls(**values)
        if getattr(claim, "require", "b") not in ("b", "both", "none"):
            raise ValueError(f"require {claim.require!r}; valid: b, both, none")
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return claim


def _where(raw: Mapping[str, Any]) -> Where:
    unknown = sorted(set(raw) - {"datasets", "eps"})
    if unknown:
        raise ValueError(f"unknown where key {unknown[0]!r}; valid: datasets, eps")
    datasets = raw.get("datasets")
    return Where(datasets=None if datasets is None else [str(d) for d in _as_list(datasets)],
                 eps=[str(e) for e in _as_list(raw.get("eps", []))])


def load_claims(path: Path) -> ClaimsFile:
    """Parse a claims.yaml (ConfigError on an unknown kind / key or a repeated id)."""
    raw = yaml.safe_load(path.read_text()) or {}
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; valid: {', '.join(TOP_KEYS)}")
    claims = [parse_claim(c, str(path)) for c in raw.get("claims") or []]
    ids = Counter(c.id for c in claims)
    repeated = [i for i, n in ids.items() if n > 1]
    if repeated:
        raise ConfigError(f"{path}: claim id {repeated[0]!r} appears {ids[repeated[0]]} times")
    return ClaimsFile(better=dict(raw.get("better") or {}), claims=claims)


def check(claims: Sequence[Claim], frame: pd.DataFrame, paper_dir: Path | None = None,
          better: Mapping[str, str] | None = None) -> list[Verdict]:
    """Every claim's verdict rows, claims in the given order."""
    ctx = Context(frame=frame, paper_dir=paper_dir, better=dict(better or {}))
    out: list[Verdict] = []
    for claim in claims:
        try:
            out += KINDS[claim.kind][1](claim, ctx)
        except ValueError as exc:
            raise ConfigError(f"claim {claim.id!r}: {exc}") from None
    return out


def _eps(eps: float | None) -> str:
    return "all" if eps is None else f"{eps:g}"


def _row(v: Verdict) -> str:
    claim = v.text + (f" — {v.subject}" if v.subject else "")
    return f"| {v.status} | {v.dataset} | {_eps(v.eps)} | {claim} | {v.numbers} |"


def write_verdicts(verdicts: Sequence[Verdict], out: Path, title: str) -> list[Path]:
    """claims.md (one table, rows grouped by claim; inside ``render.incomplete_cells`` the
    incomplete cells first) and claims.json (list of verdict dicts)."""
    out.mkdir(parents=True, exist_ok=True)
    counts = Counter(v.status for v in verdicts)
    md, js = out / "claims.md", out / "claims.json"
    warning, origin = incomplete_caption(), provenance_line()
    md.write_text(f"# {title}\n\n" + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
                  + (f"\n\n> {origin}" if origin else "")
                  + (f"\n\n> **{warning}**" if warning else "")
                  + "\n\n| verdict | dataset | eps | claim | numbers |\n|---|---|---|---|---|\n"
                  + "".join(_row(v) + "\n" for v in verdicts))
    js.write_text(json.dumps([v.to_dict() for v in verdicts], indent=1) + "\n")
    return [md, js]


def summary(md_path: Path) -> str:
    """'<claims.md>: 12 PASS, 1 FAIL, 0 SKIP' plus each FAIL row, from the claims.json."""
    rows = [Verdict(**d) for d in json.loads(md_path.with_suffix(".json").read_text())]
    counts = Counter(v.status for v in rows)
    head = f"{md_path}: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    return "\n".join([head, *(f"  {_row(v)}" for v in rows if v.status == "FAIL")])


def _task_direction(task: Any) -> dict[str, str]:
    """{primary metric: higher|lower} of the experiment's task (none without a task)."""
    t = TASKS.get(str(task)) if task else None
    return {} if t is None else {t.primary: "higher" if t.higher_is_better else "lower"}


def build_claims(frame: pd.DataFrame, experiment: Mapping[str, Any], out: Path) -> list[Path]:
    """Check the claims of the experiment's ``paper`` that apply to it; write claims.md and
    claims.json in ``out`` (nothing when the experiment names no paper, or its paper
    makes no claim about it)."""
    paper = experiment.get("paper")
    if not paper:
        return []
    try:
        folder = paper_dir(str(paper))
    except ValueError as exc:
        raise ConfigError(f"experiment {experiment.get('name')!r}: {exc}") from None
    path = folder / "claims.yaml"
    spec = load_claims(path) if path.exists() else ClaimsFile({}, [])
    name = str(experiment.get("name", ""))
    claims = spec.for_experiment(name)
    if not claims:  # the paper claims nothing about this experiment: no empty claims file
        return []
    better = {**_task_direction(experiment.get("task")), **spec.better}
    verdicts = check(claims, frame, folder, better)
    return write_verdicts(verdicts, out, f"Claims of the {paper} paper checked on {name}")
