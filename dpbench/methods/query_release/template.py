"""The adaptive-measurement privacy template every query-release method runs (Liu, Vietri &
Wu, NeurIPS 2021, "Iterative methods for private synthetic data", App. B.1; the same split
in all of the authors' code).

A method given rho-zCDP and T rounds spends, in each round, one exponential-mechanism
selection (share ``alpha``) and one Gaussian measurement (share ``1 - alpha``) of a single
normalised counting query:

- ``eps0 = sqrt(2 rho / (T (alpha^2 + (1 - alpha)^2)))``;
- select q with P(q) proportional to ``exp(alpha eps0 N |q(P) - q(D_{t-1})|)``: the
  exponential mechanism with parameter ``2 alpha eps0`` on scores of sensitivity 1/N, which
  is ``(2 alpha eps0)^2 / 8 = (alpha eps0)^2 / 2``-zCDP (bounded-range analysis);
- measure ``a~ = q(P) + N(0, (1 / (N (1 - alpha) eps0))^2)``, clipped to [0, 1] as the
  authors' code does (post-processing): ``((1 - alpha) eps0)^2 / 2``-zCDP;

so T rounds spend exactly rho (Thm. 1). rho is the ledger's: the largest rho whose exact
CKS'20 conversion gives the trial's (eps, delta) (``Accountant.rho_total``; the paper's
delta is 1/N^2, an experiment's ``delta: "1/n**2"``). Each release is charged before it is
made, so the ledger refuses a round that would overspend.

Neighbouring datasets are **replace-one** with N public (the paper's setting: a query's
answer is a count divided by the known N, so one changed row moves it, and every score, by
at most 1/N). This differs from the add/remove relation of AIM and MST in this repository;
:data:`NEIGHBOURS` is recorded in every trial's info.

``selection``: ``b1`` (default) is App. B.1's exponent, the one its accounting charges and
every script uses; ``alg3`` is the exponent printed in Alg. 3 (GEM), ``exp(alpha eps0 N/2
|.|)``, half of B.1's. It is charged at B.1's rate (what the paper accounts), so it uses a
quarter of the selection budget it pays for; it exists to show that difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbench.data.queries import workload_key
from dpbench.methods.marginals.noise import measure, noise_is_off, select
from dpbench.methods.outputs import QueryAnswers
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_zcdp
from dpbench.privacy.mechanisms import exponential_mechanism_rho

#: the neighbouring relation the template's sensitivities (1/N) assume
NEIGHBOURS = "replace-one, N public (normalised counting queries: sensitivity 1/N)"
SELECTIONS = ("b1", "alg3")
#: :data:`NEIGHBOURS` as a :mod:`dpbench.privacy.draws` relation (each draw is recorded so)
RELATION = "replace_one"


def check_rounds(T: object) -> int:
    """T as a whole number >= 1, else a one-line ValueError."""
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"T={T!r} must be a whole number >= 1 (rounds)")
    return int(T)


def check_alpha(alpha: object) -> float:
    """alpha in the open interval (0, 1), else a one-line ValueError."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) \
            or not 0 < float(alpha) < 1:
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1) (the selection's share)")
    return float(alpha)


def check_selection(selection: object) -> str:
    if selection not in SELECTIONS:
        raise ValueError(f"selection={selection!r} is unknown; valid: {', '.join(SELECTIONS)}")
    return str(selection)


@dataclass(frozen=True)
class AdaptiveBudget:
    """App. B.1's split of ``rho`` over ``rounds`` rounds on data with ``n`` private rows
    (module docstring); :meth:`select` and :meth:`measure` charge a ledger and release."""

    rho: float
    rounds: int
    alpha: float
    n: int
    selection: str = "b1"

    def __post_init__(self) -> None:
        check_rounds(self.rounds)
        check_alpha(self.alpha)
        check_selection(self.selection)
        if not (math.isfinite(self.rho) and self.rho > 0):
            raise ValueError(f"rho={self.rho!r} must be a finite number > 0")
        if self.n < 1:
            raise ValueError(f"n={self.n!r}: there must be at least one private row")

    @property
    def eps0(self) -> float:
        """sqrt(2 rho / (T (alpha^2 + (1 - alpha)^2)))."""
        a = self.alpha
        return math.sqrt(2 * self.rho / (self.rounds * (a**2 + (1 - a) ** 2)))

    @property
    def sensitivity(self) -> float:
        """1/N: of every normalised counting query and of every selection score."""
        return 1.0 / self.n

    @property
    def select_epsilon(self) -> float:
        """The exponential mechanism's parameter: 2 alpha eps0 (B.1), alpha eps0 (Alg. 3)."""
        return (2 if self.selection == "b1" else 1) * self.alpha * self.eps0

    @property
    def rho_select(self) -> float:
        """zCDP charged per selection, B.1's (alpha eps0)^2 / 2 whatever the exponent."""
        return exponential_mechanism_rho(2 * self.alpha * self.eps0)

    @property
    def rho_measure(self) -> float:
        """zCDP of one measurement: ((1 - alpha) eps0)^2 / 2."""
        return ((1 - self.alpha) * self.eps0) ** 2 / 2

    @property
    def sigma(self) -> float:
        """Noise sd of a measurement: 1 / (N (1 - alpha) eps0)."""
        return sigma_zcdp(self.rho_measure, self.sensitivity)

    def select(self, scores: ArrayLike, accountant: Accountant, rng: np.random.Generator,
               label: str) -> int:
        """Charge one selection, then draw a query index with P proportional to
        exp(select_epsilon * score / (2/N)) (the argmax under ``noise_disabled``)."""
        accountant.charge_rho(self.rho_select, label)
        return select(scores, self.select_epsilon, self.sensitivity, rng, relation=RELATION,
                      label=label)

    def measure(self, answer: float, accountant: Accountant, rng: np.random.Generator,
                label: str) -> float:
        """Charge one measurement, then release ``answer`` + N(0, sigma^2) clipped to [0, 1]
        (exact under ``noise_disabled``)."""
        accountant.charge_gaussian(self.sensitivity, self.sigma, label)
        return float(np.clip(measure(answer, self.sigma, rng, sensitivity=self.sensitivity,
                                     relation=RELATION, label=label), 0.0, 1.0))

    def info(self) -> dict[str, Any]:
        """The split as stored with a trial."""
        return {"rho": self.rho, "eps0": self.eps0, "alpha": self.alpha,
                "select_epsilon": self.select_epsilon, "sigma": self.sigma,
                "rho_per_round": self.rho_select + self.rho_measure,
                "selection": self.selection, "neighbours": NEIGHBOURS,
                "noise_disabled": noise_is_off()}


def plan(accountant: Accountant, n: int, rounds: int, alpha: float,
         selection: str = "b1") -> AdaptiveBudget:
    """The template over what is left on a zCDP ledger (all of it on a fresh one)."""
    if accountant.currency != "zcdp":
        raise TypeError(f"the adaptive-measurement template composes in zCDP; this ledger is "
                        f"{accountant.currency!r}")
    return AdaptiveBudget(accountant.remaining(), rounds, alpha, n, selection)


def workload_answers(answers: NDArray, params: Mapping[str, object]) -> QueryAnswers:
    """A method's answers as its :class:`QueryAnswers` output, labelled with the workload
    its ``params`` name (``workload`` / ``number`` / ``seed`` / ``max_cells``)."""
    return QueryAnswers(np.asarray(answers),
                        workload_key(params["workload"], params["number"],  # type: ignore[arg-type]
                                     params["seed"], params["max_cells"]))  # type: ignore[arg-type]
