"""The statistics of an arena board: which methods may be the best in a cell, how methods
rank across datasets, and how likely a board is to find a real leader.

Per cell (one epsilon, one dataset), among the ranked methods (:func:`best_set`):

- every pair of methods and every method against the bar (the best baseline) is compared by
  a two-sided paired t-test over the trials sharing a trial index, and the whole family is
  corrected by Holm's step-down procedure (Holm 1979), so that when every method is equal
  the chance that a board marks any of them worse, or any of them better than the bar, is at
  most alpha (strong control of the family-wise error);
- a method is *worse* when a method with a better mean is significantly better than it; the
  methods that are not worse form a confidence set for the best, closed in rank order (every
  method ranked above a member is a member: tie marks never skip a rank);
- the best is the *winner* only when it is the set's only member and significantly better
  than the bar; *beats the baseline* is that same test (``vs_bar``).

Across the datasets of one epsilon (:func:`friedman`), after Demšar (2006, "Statistical
comparisons of classifiers over multiple data sets", JMLR 7): each dataset ranks every
method by its mean (ties share the average rank; a method without a result, refused or
failed, is last, sharing the last ranks), the Friedman test asks whether the mean ranks
differ, and the Nemenyi critical difference CD = q_alpha sqrt(k (k + 1) / (6 N)) says which
pairs of mean ranks differ (q_alpha the studentised range quantile over sqrt 2).

:func:`detection_power` simulates the board's own procedure (normal noise, a stated seed)
to tell how often a method leading the others by ``lead`` standard deviations is found the
winner at a given number of methods and trials, and how often a board of equal methods marks
one of them worse.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dpbench import lazy

# scipy.stats (~1 s to import): read only when a board's statistics are computed, not by
# a command that copies a current board
stats = lazy.module("scipy.stats")

#: the lead (in noise standard deviations) whose detection power a board states
LEAD_SD = 2.0
#: simulated boards behind a stated power (s.e. of a proportion near 0.5: 1.1%)
POWER_SIMS = 2000
POWER_SEED = 20261128


def paired_p(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[float | None,
                                                                      float | None, int]:
    """Mean difference a - b over the trial indices both hold (finite values), the
    two-sided paired t-test's p-value (None with fewer than 2 pairs) and the pair count.
    Equal pairs give p = 1; a constant non-zero difference p = 0."""
    shared = sorted(t for t in a.keys() & b.keys()
                    if math.isfinite(a[t]) and math.isfinite(b[t]))
    d = np.array([a[t] - b[t] for t in shared], dtype=float)
    if d.size == 0:
        return None, None, 0
    diff = float(d.mean())
    if d.size < 2:
        return diff, None, int(d.size)
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return diff, (1.0 if diff == 0.0 else 0.0), int(d.size)
    t = diff / (sd / math.sqrt(d.size))
    return diff, float(2 * stats.t.sf(abs(t), d.size - 1)), int(d.size)


def holm(pvalues: Mapping[object, float | None]) -> dict[object, float | None]:
    """Holm-adjusted p-values (None stays None: no test): reject a hypothesis at level
    alpha iff its adjusted p is below alpha."""
    tested = sorted((p, k) for k, p in pvalues.items() if p is not None)
    m = len(tested)
    out: dict[object, float | None] = {k: None for k, p in pvalues.items() if p is None}
    running = 0.0
    for i, (p, k) in enumerate(tested):
        running = max(running, min(1.0, (m - i) * p))
        out[k] = running
    return out


@dataclass(frozen=True)
class CellTests:
    """The tests of one cell: Holm-adjusted p and mean difference of every compared pair
    (``(a, b)`` with a ranked above b; ``(a, BAR)`` for a method against the bar), the
    confidence set for the best (in rank order) and each method's verdict against the bar."""

    adjusted: dict[tuple[str, str], float | None]
    diffs: dict[tuple[str, str], float | None]
    best_set: list[str]
    beats_bar: dict[str, bool | None]   # None: no test
    #: each worse method -> the better-ranked method that is most significantly better
    worse_than: dict[str, str] = field(default_factory=dict)


BAR = "\0bar"


def best_set(order: Sequence[str], trials: Mapping[str, Mapping[int, float]],
             bar: str | None, higher_is_better: bool, alpha: float) -> CellTests:
    """The module's per-cell procedure on the ranked methods ``order`` (best mean first)
    and the bar's method id (None: no bar)."""
    raw: dict[tuple[str, str], float | None] = {}
    diffs: dict[tuple[str, str], float | None] = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            diffs[a, b], raw[a, b], _ = paired_p(trials.get(a, {}), trials.get(b, {}))
        if bar is not None:
            diffs[a, BAR], raw[a, BAR], _ = paired_p(trials.get(a, {}), trials.get(bar, {}))
    adjusted = holm(raw)

    def significant(pair: tuple[str, str]) -> bool:
        p, d = adjusted.get(pair), diffs.get(pair)
        if p is None or d is None or p >= alpha:
            return False
        return d > 0 if higher_is_better else d < 0   # the first of the pair is better

    worse = {b for i, a in enumerate(order) for b in order[i + 1:] if significant((a, b))}
    worse_than = {b: min((a for a in order[:order.index(b)] if significant((a, b))),
                         key=lambda a: adjusted[a, b]) for b in worse}
    last = max((i for i, m in enumerate(order) if m not in worse), default=-1)
    members = list(order[:last + 1])
    beats = {m: (None if adjusted.get((m, BAR)) is None else significant((m, BAR)))
             for m in order} if bar is not None else {m: None for m in order}
    return CellTests(adjusted, diffs, members, beats, worse_than)


# --- across datasets -----------------------------------------------------------------------

def dataset_ranks(means: Mapping[str, float | None], higher_is_better: bool
                  ) -> dict[str, float]:
    """Ranks of every method on one dataset by its mean (1 = best; ties averaged); the
    methods without a mean share the last ranks."""
    have = {m: v for m, v in means.items() if v is not None and math.isfinite(v)}
    scores = [(-v if higher_is_better else v) for v in have.values()]
    ranks = dict(zip(have, stats.rankdata(scores), strict=True)) if have else {}
    missing = [m for m in means if m not in have]
    if missing:
        shared = len(have) + (len(missing) + 1) / 2
        ranks.update({m: shared for m in missing})
    return {m: float(r) for m, r in ranks.items()}


@dataclass(frozen=True)
class Friedman:
    """Mean ranks over N datasets, the Friedman test and Nemenyi's critical difference."""

    methods: list[str]
    mean_ranks: list[float]
    datasets: int
    statistic: float | None
    p: float | None
    cd: float | None


def friedman(rank_rows: Sequence[Mapping[str, float]], alpha: float) -> Friedman:
    """Demšar's procedure over the per-dataset ranks of the same methods (module docstring);
    the test needs at least 3 methods and 2 datasets (else statistic, p and CD are None)."""
    methods = sorted({m for r in rank_rows for m in r})
    matrix = np.array([[r[m] for m in methods] for r in rank_rows], dtype=float)
    n, k = matrix.shape if matrix.size else (len(rank_rows), len(methods))
    means = matrix.mean(axis=0).tolist() if matrix.size else [math.nan] * k
    if k < 3 or n < 2:
        return Friedman(methods, means, n, None, None, None)
    chi2 = 12 * n / (k * (k + 1)) * (float(np.sum(np.square(means)))
                                     - k * (k + 1) ** 2 / 4)
    p = float(stats.chi2.sf(chi2, k - 1))
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return Friedman(methods, means, n, float(chi2), p, q * math.sqrt(k * (k + 1) / (6 * n)))


# --- how good a board is at finding a leader -------------------------------------------------

def simulated_sets(x: np.ndarray, alpha: float) -> np.ndarray:
    """For boards ``x`` (sims x methods x trials, higher is better, paired by trial index),
    a boolean (sims x methods) mask of each board's best set by :func:`best_set`'s
    procedure without a bar, computed for all boards at once."""
    sims, k, n = x.shape
    order = np.argsort(-x.mean(axis=2), axis=1, kind="stable")
    xs = np.take_along_axis(x, order[:, :, None], axis=1)      # best mean first
    iu, ju = np.triu_indices(k, 1)                               # pairs (above, below)
    d = xs[:, iu, :] - xs[:, ju, :]                              # sims x pairs x trials
    mean, sd = d.mean(axis=2), d.std(axis=2, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    p = np.where(sd > 0, 2 * stats.t.sf(np.abs(t), n - 1), np.where(mean == 0, 1.0, 0.0))
    m = p.shape[1]
    rank = np.argsort(p, axis=1, kind="stable")
    sorted_p = np.take_along_axis(p, rank, axis=1) * (m - np.arange(m))[None, :]
    adj_sorted = np.minimum(np.maximum.accumulate(sorted_p, axis=1), 1.0)
    adjusted = np.empty_like(p)
    np.put_along_axis(adjusted, rank, adj_sorted, axis=1)
    worse = np.zeros((sims, k), dtype=bool)
    significant = (adjusted < alpha) & (mean > 0)
    for pair in range(m):
        worse[:, ju[pair]] |= significant[:, pair]
    positions = np.arange(k)[None, :]
    last = np.max(np.where(~worse, positions, -1), axis=1)
    in_set_sorted = positions <= last[:, None]
    mask = np.zeros((sims, k), dtype=bool)
    np.put_along_axis(mask, order, in_set_sorted, axis=1)
    return mask


@functools.lru_cache(maxsize=64)
def detection_power(methods: int, trials: int, alpha: float, lead: float = LEAD_SD,
                    sims: int = POWER_SIMS, seed: int = POWER_SEED) -> tuple[float, float]:
    """(power, false-worse rate) of :func:`best_set` at ``methods`` ranked methods and
    ``trials`` paired trials, by simulation (seeded): the share of boards on which a method
    leading the others by ``lead`` noise sds is the only member of the best set, and the
    share of boards of equal methods that mark any method worse. Noise: iid N(0, 1) per
    method and trial (no bar)."""
    if methods < 2 or trials < 2:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    led = rng.standard_normal((sims, methods, trials))
    led[:, 0] += lead
    found = simulated_sets(led, alpha)
    alone = found[:, 0] & (found.sum(axis=1) == 1)
    equal = simulated_sets(rng.standard_normal((sims, methods, trials)), alpha)
    return float(alone.mean()), float((equal.sum(axis=1) < methods).mean())
