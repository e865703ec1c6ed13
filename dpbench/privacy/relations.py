"""One neighbouring relation for every cell of a comparison: group privacy between relations.

A method's analysis is stated for the relation it declares (``Method.neighbours``):
``add_remove`` (one record added or removed) or ``replace_one`` (one record replaced, n
public). An arena states one relation for all its cells. Where a method's native relation
differs, the guarantee it gives under the arena's relation is derived here, and the method
runs at the budget that makes that derived guarantee the cell's (epsilon, delta):

- add/remove -> replace-one: replacing a record is removing it and adding another, so two
  datasets that differ in one replaced record are at add/remove distance 2 and the
  guarantee is group privacy for groups of k = 2: rho-zCDP gives k^2 rho (Bun & Steinke
  2016, Prop. 1.9), mu-GDP gives k mu (Dong, Roth & Su 2022, Thm. 2.14), (eps, delta)-DP
  gives (k eps, delta sum_{i<k} e^{i eps}) (Dwork & Roth 2014, Sec. 2.3 for pure DP; the
  approximate form follows by induction) and pure eps-DP k eps. This is the only analysis
  applied generically: it is tight for some mechanisms and loose for others (a histogram's
  replace-one L2 sensitivity is sqrt(2), not 2), so a method with a tighter replace-one
  analysis declares it natively (``Method.relations``: the grid then runs the method's own
  analysis for the cell's relation instead); every record of a converted cell says
  ``group_k``.
- replace-one -> add/remove: no implication (a replace-one mechanism may publish n
  exactly), so such a cell cannot run under add/remove; :func:`group_size` returns None and
  the grid reports the reason.
"""

from __future__ import annotations

import math

from dpbench.privacy import conversions

RELATIONS: tuple[str, ...] = ("add_remove", "replace_one")


def check_relation(relation: str) -> str:
    """``relation`` if it is one of :data:`RELATIONS`, else a one-line ValueError."""
    if relation not in RELATIONS:
        raise ValueError(f"relation={relation!r} unknown; valid: {', '.join(RELATIONS)}")
    return relation


def group_size(native: str, relation: str) -> int | None:
    """k such that a method's native-relation guarantee for groups of k is a guarantee
    under ``relation`` (1: the same relation); None if the native guarantee implies none."""
    check_relation(native)
    check_relation(relation)
    if native == relation:
        return 1
    return 2 if native == "add_remove" else None


def histogram_sensitivity(relation: str) -> tuple[float, float]:
    """(L1, L2) sensitivity of a count table (a marginal) to one record under ``relation``.

    Each record adds 1 to one cell. Adding or removing a record moves one cell by 1 (L1 = L2
    = 1); replacing it moves one cell down by 1 and another up by 1 (L1 2, L2 sqrt(2); 0 when
    both rows fall in the same cell). An L1 distance of the table to a fixed table (AIM's and
    MST's selection scores) moves by at most the L1 sensitivity. Under replace-one the
    Gaussian measurement of a marginal thus costs 2x its add/remove zCDP, where group
    privacy charges 4x (the AIM and MST papers analyse the add/remove case only)."""
    if check_relation(relation) == "add_remove":
        return 1.0, 1.0
    return 2.0, math.sqrt(2.0)


def _geometric(eps: float, k: int) -> float:
    """sum_{i<k} e^{i eps}: the delta factor of (eps, delta)-DP's group privacy."""
    return math.fsum(math.exp(i * eps) for i in range(k))


def native_target(epsilon: float, delta: float, currency: str, k: int) -> tuple[float, float]:
    """The (epsilon, delta) target of a native-relation ledger in ``currency`` whose spend
    is, for groups of ``k``, at most (``epsilon``, ``delta``) (module docstring)."""
    if k == 1:
        return epsilon, delta
    if currency == "zcdp":
        return conversions.cdp_eps(conversions.cdp_rho(epsilon, delta) / k**2, delta), delta
    if currency == "gdp":
        return conversions.gdp_eps(conversions.gdp_mu(epsilon, delta) / k, delta), delta
    eps = epsilon / k
    return eps, delta / _geometric(eps, k)


def group_guarantee(summary: dict, k: int) -> tuple[float, float]:
    """The (epsilon, delta) guarantee for groups of ``k`` of what a ledger spent (its
    ``summary()``: the true cost, at the ledger's target delta for zcdp / gdp)."""
    currency, delta = summary["currency"], float(summary["target_delta"])
    if currency == "zcdp":
        rho = float(summary["rho_spent"])
        return (conversions.cdp_eps(k**2 * rho, delta) if rho > 0 else 0.0), delta
    if currency == "gdp":
        mu = float(summary["mu_spent"])
        return (conversions.gdp_eps(k * mu, delta) if mu > 0 else 0.0), delta
    eps, spent_delta = float(summary["spent_epsilon"]), float(summary["spent_delta"])
    return k * eps, spent_delta * _geometric(eps, k)
