"""A one-sided lower bound on epsilon from a distinguisher's scores (pure statistics).

A mechanism M is (eps, delta)-DP on neighbours D, D' only if every test S of its output obeys
P[M(D') in S] <= e^eps P[M(D) in S] + delta and P[M(D) in S^c] <= e^eps P[M(D') in S^c] + delta.
For the threshold test S = {score > t} with false-positive rate FPR = P[score(M(D)) > t] and
false-negative rate FNR = P[score(M(D')) <= t], this says

    eps >= log((1 - delta - FNR) / FPR)   and   eps >= log((1 - delta - FPR) / FNR).

Given N scores of M(D) and N of M(D'), the rates are bounded from above by one-sided
Clopper-Pearson intervals, each at level alpha / 2, so both hold together with probability at
least 1 - alpha; the larger of the two forms at these upper rates is then a lower bound on
eps at confidence 1 - alpha (Jagielski et al. 2020; Nasr et al. 2021, 2023). A threshold
picked by looking at the scores would make the bound optimistic, so it is either

- chosen on the first half of each sample (the largest bound there, each candidate scored
  at level alpha / #candidates) and the bound computed on the second half alone
  (``thresholds=None``), or
- one of a few thresholds fixed before the scores were seen (``thresholds=[...]``, e.g. 0
  for a release of +-1), every sample used and alpha divided among them (Bonferroni).

Nothing here knows a method: a bound below a claim proves nothing, one above it is a bug
(docs/privacy.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import beta


@dataclass(frozen=True)
class LowerBound:
    """A lower bound on epsilon and how it was obtained."""

    #: the bound (0 when the test shows nothing)
    epsilon: float
    #: 1 - alpha: the probability that ``epsilon`` is below the true one, over the samples
    confidence: float
    #: scores of each dataset given (selection and evaluation halves together)
    samples: int
    #: the test: a score above it says D'
    threshold: float
    #: Clopper-Pearson upper bounds on the test's false-positive and false-negative rates
    fpr_upper: float
    fnr_upper: float
    #: scores of each dataset the rates were counted on
    tested: int


def clopper_pearson_upper(k: ArrayLike, n: int, alpha: float) -> NDArray:
    """One-sided (1 - alpha) upper bounds on a rate from ``k`` successes in ``n`` trials."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        hi = beta.ppf(1 - alpha, k + 1, n - k)
    return np.where(k >= n, 1.0, hi)


def epsilon_from_rates(fpr: ArrayLike, fnr: ArrayLike, delta: float) -> NDArray:
    """max(log((1 - delta - FNR) / FPR), log((1 - delta - FPR) / FNR), 0), element-wise."""
    fpr, fnr = np.asarray(fpr, dtype=float), np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.log(np.maximum(1 - delta - fnr, 0.0) / fpr)
        two = np.log(np.maximum(1 - delta - fpr, 0.0) / fnr)
    return np.maximum(np.nan_to_num(np.maximum(one, two), nan=0.0, neginf=0.0), 0.0)


def threshold_epsilons(scores_d: NDArray, scores_d1: NDArray, thresholds: NDArray,
                       delta: float, alpha: float) -> tuple[NDArray, NDArray, NDArray]:
    """(eps bound, FPR upper, FNR upper) of the test ``score > t`` at each threshold t, each
    rate at level alpha / 2 (so the bound at one t holds with probability 1 - alpha)."""
    d, d1 = np.sort(scores_d), np.sort(scores_d1)
    fp = d.size - np.searchsorted(d, thresholds, side="right")      # scores of D above t
    fn = np.searchsorted(d1, thresholds, side="right")               # scores of D' at or below
    fpr = clopper_pearson_upper(fp, d.size, alpha / 2)
    fnr = clopper_pearson_upper(fn, d1.size, alpha / 2)
    return epsilon_from_rates(fpr, fnr, delta), fpr, fnr


def _scores(values: ArrayLike, name: str) -> NDArray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size < 2 or np.isnan(arr).any():
        raise ValueError(f"{name} must hold at least 2 scores and no NaN, got {arr.size}")
    return arr


def epsilon_lower_bound(scores_d: ArrayLike, scores_d1: ArrayLike, *, delta: float,
                        alpha: float = 0.05,
                        thresholds: Sequence[float] | None = None) -> LowerBound:
    """A lower bound on epsilon at confidence 1 - alpha from scores of M(D) and M(D') (module
    docstring): the threshold chosen on the first half of each sample, or among
    ``thresholds`` fixed in advance with Bonferroni's correction."""
    if not (0 <= delta < 1):
        raise ValueError(f"delta={delta!r} must lie in [0, 1)")
    if not (0 < alpha < 1):
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    d, d1 = _scores(scores_d, "scores_d"), _scores(scores_d1, "scores_d1")
    if d.size != d1.size:
        raise ValueError(f"need as many scores of D as of D', got {d.size} and {d1.size}")
    if thresholds is not None:
        ts = np.asarray(thresholds, dtype=float).ravel()
        if ts.size == 0:
            raise ValueError("thresholds must not be empty")
        level = alpha / ts.size
        test_d, test_d1 = d, d1
    else:
        half = d.size // 2
        sel_d, sel_d1, test_d, test_d1 = d[:half], d1[:half], d[half:], d1[half:]
        candidates = np.unique(np.concatenate([sel_d, sel_d1]))
        # scored as if corrected over every candidate: a tail threshold whose few counts
        # look good by luck is not picked (it would show nothing on the other half)
        eps, _, _ = threshold_epsilons(sel_d, sel_d1, candidates, delta,
                                       alpha / candidates.size)
        ts, level = candidates[[int(np.argmax(eps))]], alpha
    eps, fpr, fnr = threshold_epsilons(test_d, test_d1, ts, delta, level)
    best = int(np.argmax(eps))
    return LowerBound(epsilon=float(eps[best]), confidence=1 - alpha, samples=int(d.size),
                      threshold=float(ts[best]), fpr_upper=float(fpr[best]),
                      fnr_upper=float(fnr[best]), tested=int(test_d.size))

