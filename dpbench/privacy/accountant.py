"""One privacy ledger per trial.

A trial is given a target (epsilon, delta). The method picks the currency it
composes in (its ``accounting`` class attribute) and charges every release to
the ledger; the ledger refuses any charge that would exceed the target and
reports what was spent, both in its own currency and as (epsilon, delta).

Currencies and their composition rules:

- ``zcdp``:  rho adds up; the target rho is the largest rho whose exact
  CKS'20 conversion gives (epsilon, delta).
- ``gdp``:   mu composes as sqrt(sum mu_i^2); the target mu is the largest mu
  that is (epsilon, delta)-DP (Dong, Roth & Su 2022, Cor. 2.13).
- ``approx``: basic composition of (epsilon_i, delta_i) pairs.
- ``pure``:  epsilon adds up, delta must be 0 for every charge.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Literal

from dpbench.privacy import conversions
from dpbench.privacy._checks import check_delta, check_nonneg, check_positive

Currency = Literal["zcdp", "gdp", "approx", "pure"]
CURRENCIES: tuple[str, ...] = ("zcdp", "gdp", "approx", "pure")
# A ledger is over budget when its spend exceeds the target by more than this fraction: the
# conversions round to the safe side, but a sum of charges or a round trip through
# (eps, delta) can land a few ulps above an exactly spent target (2 + 2.6e-14).
BUDGET_REL_TOL = 1e-9


class BudgetExceeded(RuntimeError):
    """A method tried to spend more privacy than its trial was given."""


@dataclass(frozen=True)
class Charge:
    """One release recorded in the ledger."""

    label: str
    currency: str
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    mu: float = 0.0
    #: true mu of a release whose published analysis claims ``mu`` (paper reproductions)
    actual_mu: float | None = None
    #: true epsilon (at the charge's delta) of an approx release claimed at ``epsilon``
    actual_epsilon: float | None = None


@dataclass
class Accountant:
    """Privacy ledger for one trial with target (epsilon, delta)."""

    epsilon: float
    delta: float
    currency: Currency = "approx"
    charges: list[Charge] = field(default_factory=list)
    #: training rows released without protection (``declare_unprotected``): (rows, of n)
    unprotected: tuple[int, int] | None = None
    #: runs among which the released one was chosen without privacy (``declare_unpaid_selection``)
    unpaid_runs: int | None = None

    def __post_init__(self) -> None:
        validate_budget(self.epsilon, self.delta, allow_zero_delta=self.currency == "pure")
        if self.currency not in CURRENCIES:
            raise ValueError(f"unknown currency {self.currency!r}; valid: {', '.join(CURRENCIES)}")

    # -- limits -----------------------------------------------------------------
    @property
    def rho_total(self) -> float:
        """Total zCDP budget equivalent to the (epsilon, delta) target."""
        return _target("zcdp", float(self.epsilon), float(self.delta))

    @property
    def mu_total(self) -> float:
        """Total GDP budget equivalent to the (epsilon, delta) target."""
        return _target("gdp", float(self.epsilon), float(self.delta))

    # -- spent ------------------------------------------------------------------
    @property
    def rho_spent(self) -> float:
        return math.fsum(c.rho for c in self.charges)

    @property
    def mu_spent(self) -> float:
        return math.sqrt(math.fsum(c.mu**2 for c in self.charges))

    @property
    def eps_spent(self) -> float:
        return math.fsum(c.epsilon for c in self.charges)

    @property
    def delta_spent(self) -> float:
        return math.fsum(c.delta for c in self.charges)

    def remaining(self) -> float:
        """Budget left, in the ledger's currency (rho, mu or epsilon)."""
        if self.currency == "zcdp":
            return max(self.rho_total - self.rho_spent, 0.0)
        if self.currency == "gdp":
            return math.sqrt(max(self.mu_total**2 - self.mu_spent**2, 0.0))
        return max(self.epsilon - self.eps_spent, 0.0)

    def spent_epsilon_delta(self) -> tuple[float, float]:
        """What was spent, converted to (epsilon, delta) at the target delta."""
        if not self.charges:
            return 0.0, 0.0
        if self.currency == "zcdp":
            return conversions.cdp_eps(self.rho_spent, self.delta), self.delta
        if self.currency == "gdp":
            return conversions.gdp_eps(self.mu_spent, self.delta), self.delta
        return self.eps_spent, self.delta_spent

    # -- charging -----------------------------------------------------------------
    def charge_rho(self, rho: float, label: str) -> None:
        """Charge a rho-zCDP release (zcdp ledgers only)."""
        self._require("zcdp", "rho")
        self._add(Charge(label, "zcdp", rho=check_nonneg(rho, "rho")))

    def charge_mu(self, mu: float, label: str, *, actual: float | None = None) -> None:
        """Charge a mu-GDP release (gdp ledgers only).

        ``actual``: when a paper's analysis under-states a release's cost, the method
        reproducing it charges the paper's ``mu`` (so the paper's budget split runs as
        printed) and passes the true cost here. The ledger then reports the true spend
        (``spent_*``), the paper's claim (``claimed_*``) and ``understated = 1``: a
        reproduction of a flawed accounting is visible in every record, never hidden.
        """
        self._require("gdp", "mu")
        act = None if actual is None else check_nonneg(actual, "actual")
        self._add(Charge(label, "gdp", mu=check_nonneg(mu, "mu"), actual_mu=act))

    def charge_pure(self, epsilon: float, label: str) -> None:
        """Charge an epsilon-DP release; converted to the ledger's currency.

        zcdp: rho = epsilon^2 / 2 (Bun & Steinke 2016, Prop. 1.4);
        gdp:  mu = -2 Phi^{-1}(1 / (1 + e^epsilon)) (Dong, Roth & Su 2022);
        approx / pure: (epsilon, 0).
        """
        epsilon = check_nonneg(epsilon, "epsilon")
        if self.currency == "zcdp":
            self._add(Charge(label, "zcdp", epsilon=epsilon, rho=epsilon**2 / 2))
        elif self.currency == "gdp":
            self._add(Charge(label, "gdp", epsilon=epsilon, mu=conversions.pure_to_gdp(epsilon)))
        else:
            self._add(Charge(label, self.currency, epsilon=epsilon))

    def charge_eps_delta(self, epsilon: float, delta: float, label: str, *,
                         actual: float | None = None) -> None:
        """Charge an (epsilon, delta)-DP release (approx ledgers only).

        ``actual``: as ``charge_mu``'s: the true epsilon at the same delta of a release whose
        paper claims ``epsilon`` (e.g. a formula that assumes another sampler). Above the
        claim, the record reports the true spend and ``understated = 1``.
        """
        self._require("approx", "(epsilon, delta)")
        act = None if actual is None else check_nonneg(actual, "actual")
        self._add(Charge(label, "approx", epsilon=check_nonneg(epsilon, "epsilon"),
                         delta=check_nonneg(delta, "delta"), actual_epsilon=act))

    def declare_unprotected(self, rows: int, n: int) -> None:
        """Record that ``rows`` of the ``n`` private rows are released without noise (e.g.
        PATE's student features drawn from the training split, as its paper does).

        No charge covers them: for a row of the split the guarantee is only
        (epsilon, delta + rows / n) (the row is published with probability rows / n), which
        ``summary`` reports as ``delta_any_row`` next to ``unprotected_rows``.
        """
        if not (0 < rows <= n):
            raise ValueError(f"need 0 < rows <= n, got rows={rows}, n={n}")
        self.unprotected = (int(rows), int(n))

    def charge_gaussian(self, sensitivity: float, sigma: float, label: str) -> None:
        """Charge a Gaussian release with L2 sensitivity and noise sd sigma.

        zcdp: rho = Delta^2 / (2 sigma^2); gdp: mu = Delta / sigma.
        """
        sensitivity = check_nonneg(sensitivity, "sensitivity")
        sigma = check_positive(sigma, "sigma")
        if self.currency == "zcdp":
            self.charge_rho(sensitivity**2 / (2 * sigma**2), label)
        elif self.currency == "gdp":
            self.charge_mu(sensitivity / sigma, label)
        else:
            raise TypeError(
                f"charge_gaussian needs a zcdp or gdp ledger, this one is {self.currency!r}; "
                "calibrate with an (epsilon, delta) share and use charge_eps_delta"
            )

    def declare_unpaid_selection(self, runs: int) -> None:
        """Record that the release is the best of ``runs`` runs on the private data, chosen
        without privacy (a paper's "ignoring the tuning cost" protocol): the charges cover
        the released run, not the procedure, whose cost has no finite bound. ``summary``
        reports ``unpaid_selection_runs``; reports say it in red."""
        if not (isinstance(runs, int) and runs >= 2):
            raise ValueError(f"runs={runs!r} must be an integer >= 2 (a selection)")
        self.unpaid_runs = runs

    @property
    def understated(self) -> bool:
        """True if some charge's true cost exceeds what its (paper's) analysis claims."""
        return any((c.actual_mu is not None and c.actual_mu > c.mu)
                   or (c.actual_epsilon is not None and c.actual_epsilon > c.epsilon)
                   for c in self.charges)

    @property
    def mu_actual_spent(self) -> float:
        return math.sqrt(math.fsum((c.mu if c.actual_mu is None else c.actual_mu) ** 2
                                   for c in self.charges))

    def summary(self) -> dict[str, float | str]:
        """Flat record of the ledger for the trial result (``spent_*`` = the true cost)."""
        eps, delta = self.spent_epsilon_delta()
        if self.understated:
            claimed = eps
            eps = (conversions.gdp_eps(self.mu_actual_spent, self.delta)
                   if self.currency == "gdp" else
                   math.fsum(c.epsilon if c.actual_epsilon is None
                             else max(c.epsilon, c.actual_epsilon) for c in self.charges))
        out: dict[str, float | str] = {
            "currency": self.currency,
            "target_epsilon": self.epsilon,
            "target_delta": self.delta,
            "spent_epsilon": eps,
            "spent_delta": delta,
            "n_charges": float(len(self.charges)),
            "budget_rel_tol": BUDGET_REL_TOL,
        }
        if self.currency == "zcdp":
            out.update(rho_total=self.rho_total, rho_spent=self.rho_spent)
        if self.currency == "gdp":
            out.update(mu_total=self.mu_total, mu_spent=self.mu_actual_spent)
        if self.understated:
            out.update(understated=1.0, claimed_spent_epsilon=claimed)
            if self.currency == "gdp":
                out.update(claimed_mu_spent=self.mu_spent)
        if self.unprotected is not None:
            rows, n = self.unprotected
            out.update(unprotected_rows=float(rows), delta_any_row=delta + rows / n)
        if self.unpaid_runs is not None:
            out.update(unpaid_selection_runs=float(self.unpaid_runs))
        return out

    # -- internals ------------------------------------------------------------------
    def _require(self, currency: str, what: str) -> None:
        if self.currency != currency:
            raise TypeError(f"cannot charge {what} to a {self.currency!r} ledger")

    def _add(self, charge: Charge) -> None:
        trial = Accountant(self.epsilon, self.delta, self.currency, [*self.charges, charge])
        if trial._over():
            raise BudgetExceeded(
                f"charge {charge.label!r} would overspend the {self.currency} budget "
                f"(target eps={self.epsilon}, delta={self.delta}): {trial._describe()}"
            )
        self.charges.append(charge)

    def _over(self) -> bool:
        if self.currency == "zcdp":
            return self.rho_spent > self.rho_total * (1 + BUDGET_REL_TOL)
        if self.currency == "gdp":
            return self.mu_spent > self.mu_total * (1 + BUDGET_REL_TOL)
        over_eps = self.eps_spent > self.epsilon * (1 + BUDGET_REL_TOL)
        over_delta = self.delta_spent > self.delta * (1 + BUDGET_REL_TOL) + 1e-300
        return over_eps or over_delta

    def _describe(self) -> str:
        if self.currency == "zcdp":
            return f"rho {self.rho_spent:.6g} > {self.rho_total:.6g}"
        if self.currency == "gdp":
            return f"mu {self.mu_spent:.6g} > {self.mu_total:.6g}"
        return f"eps {self.eps_spent:.6g} / delta {self.delta_spent:.3g}"


@functools.lru_cache(maxsize=1024)
def _target(currency: str, epsilon: float, delta: float) -> float:
    """The target rho or mu of (epsilon, delta), memoised: every charge checks it, and each
    conversion is a root search (~3.5 ms), which made a method of a thousand rounds spend
    seconds in its ledger."""
    if currency == "zcdp":
        return conversions.cdp_rho(epsilon, delta)
    return conversions.gdp_mu(epsilon, delta)


def validate_budget(epsilon: float, delta: float, *, allow_zero_delta: bool = False) -> None:
    """Raise ValueError with a one-line message if (epsilon, delta) is not a valid target.

    Any real number type is accepted (e.g. numpy scalars from a config grid).
    """
    check_positive(epsilon, "epsilon")
    check_delta(delta, allow_zero=allow_zero_delta)
