"""Paying for hyperparameter tuning by composition over a grid of k private runs.

Theorems used (k runs, run j being (eps_j, delta_j)-DP; adaptive composition):

- ``basic``: (sum eps_j, sum delta_j)-DP (Dwork et al. 2006).
- ``advanced`` (the DD-SSP paper's choice, "Theorem 22 in Steinke (2022)"):
  for any delta' in (0, 1) the composition is (eps', delta' + sum delta_j)-DP with
      eps' = 1/2 sum eps_j^2 + sqrt(2 log(1/delta') sum eps_j^2).
  This follows from Kairouz, Oh & Viswanath (2015, Thm 3.5),
  eps' = sum eps_j tanh(eps_j/2) + sqrt(2 log(1/delta') sum eps_j^2), since
  tanh(x/2) <= x/2. Basic composition also holds, so the smaller of the two
  epsilons is reported, with delta' always counted.

The grid budget is split evenly: delta' = delta/2 and delta_j = delta/(2k).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

THEOREMS = ("advanced", "basic")


def per_run_budget(epsilon: float, delta: float, k: int, theorem: str) -> tuple[float, float]:
    """Largest equal per-run (eps0, delta0) whose k-fold composition is (epsilon, delta)-DP."""
    _check(epsilon, delta, k, theorem)
    if theorem == "basic":
        return epsilon / k, delta / k
    slack = delta / 2
    b = math.sqrt(2 * k * math.log(1 / slack))
    # k eps0^2 / 2 + b eps0 = epsilon, positive root (written to avoid cancellation)
    eps_adv = 2 * epsilon / (b + math.sqrt(b * b + 2 * k * epsilon))
    return max(epsilon / k, eps_adv), delta / (2 * k)


def compose(eps: Sequence[float], deltas: Sequence[float], delta_slack: float,
            theorem: str) -> tuple[float, float]:
    """(epsilon, delta) of the composition of runs with the given guarantees."""
    if len(eps) != len(deltas) or not eps:
        raise ValueError(f"need equally many (>0) eps and deltas, got {len(eps)}, {len(deltas)}")
    if theorem not in THEOREMS:
        raise ValueError(f"tuning theorem {theorem!r} unknown; valid: {', '.join(THEOREMS)}")
    basic = math.fsum(eps)
    dsum = math.fsum(deltas)
    if theorem == "basic":
        return basic, dsum
    if not 0 < delta_slack < 1:
        raise ValueError(f"delta_slack={delta_slack!r} must lie in (0, 1)")
    sq = math.fsum(e * e for e in eps)
    adv = sq / 2 + math.sqrt(2 * math.log(1 / delta_slack) * sq)
    return min(basic, adv), dsum + delta_slack


def _check(epsilon: float, delta: float, k: int, theorem: str) -> None:
    if theorem not in THEOREMS:
        raise ValueError(f"tuning theorem {theorem!r} unknown; valid: {', '.join(THEOREMS)}")
    if not (epsilon > 0 and 0 < delta < 1 and int(k) == k and k >= 1):
        raise ValueError(f"need epsilon > 0, delta in (0,1), k >= 1; got {epsilon}, {delta}, {k}")
