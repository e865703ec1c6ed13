"""AIM (McKenna, Mullins, Sheldon & Miklau 2022) as the DD-SSP paper's Appendix A states it.

Budget rho (zCDP) comes from the ledger: the exact CKS'20 conversion of the
trial's (eps, delta). With T rounds (default 16 d, ``rounds_per_attribute`` x d) and alpha = 0.9:

- sigma_0 = sqrt(T / (2 alpha rho)), eps_0 = sqrt(8 (1 - alpha) rho / T) (Alg. 2 l. 4, 9);
- initialisation (Alg. 3): every 1-way marginal of the workload's downward
  closure W+ is measured with N(0, sigma_0^2), each charged 1 / (2 sigma_0^2);
- each round: if the rest of the budget cannot pay two more rounds, this round
  spends all of it (Alg. 4 l. 8-10); the candidates are the r in W+ whose
  junction tree with the measured cliques fits in (rho_used / rho) * MAX-SIZE
  MB (Alg. 2 l. 13; a clique already inside the model is always allowed, as in
  the AIM reference implementation); r is selected by the exponential
  mechanism with quality q_r = w_r (||M_r(D) - M_r(p)||_1 - sqrt(2/pi) sigma n_r),
  sensitivity max_r w_r, charged eps^2 / 8 (bounded range); M_r(D) is measured
  with N(0, sigma^2 I), charged 1 / (2 sigma^2); the model is re-estimated
  (Private-PGM, warm start); if the estimate of M_r moved by at most
  sqrt(2/pi) sigma n_r in L1, sigma halves and eps doubles (Alg. 4 l. 1-3).
- after the last round the model is estimated once more (``final_iters``).

Every release is charged to the given zCDP ledger *before* it is made, so the
ledger refuses an overspend. The workload weights are w_r = sum_s |r & s|.
The estimator is Private-PGM (``mrf``) or, for the Fig. 6 ablation, a mixture
of products (``mixture``, mbi.extensions.MixtureOfProductsEstimator).

Under replace-one neighbours (``relation``, for a comparison stated so) the same algorithm
runs at the replace-one sensitivities (privacy/relations.py): each measurement costs
2 / (2 sigma^2), so sigma_0 = sqrt(2 T / (2 alpha rho)), and the scores' sensitivity is
2 max_r w_r (the selection's charge eps^2 / 8 is unchanged).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpbench.data.marginals import checked_codes, data_marginal
from dpbench.data.workloads import (
    Clique,
    clique_size,
    downward_closure,
    sort_cliques,
    workload_weights,
)
from dpbench.methods.marginals import _mbi, flat
from dpbench.methods.marginals.model import MarginalModel, RhoCharge
from dpbench.methods.marginals.model_size import MAX_ATTRIBUTES, model_sizes_mb
from dpbench.methods.marginals.noise import measure, noise_is_off, select
from dpbench.methods.marginals.settings import AIMSettings
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.relations import histogram_sensitivity

if TYPE_CHECKING:
    import pandas as pd

#: AIM's neighbouring relation in its paper: one record added or removed (a marginal's L2
#: sensitivity 1); ``relation="replace_one"`` runs the same algorithm at the replace-one
#: sensitivities (privacy/relations.py: L2 sqrt(2) per measurement, L1 2 per score)
RELATION = "add_remove"
log = logging.getLogger(__name__)


class _Estimator:
    """Wraps the chosen mbi estimator and turns its output into a MarginalModel."""

    def __init__(self, attrs: Sequence[str], sizes: Mapping[str, int], settings: AIMSettings,
                 seed: int) -> None:
        self.attrs = tuple(attrs)
        self.sizes = dict(sizes)
        self.settings = settings
        self.domain = _mbi.to_domain(self.attrs, self.sizes)
        self.seed = seed
        self.fit: object | None = None
        self.seconds = 0.0
        self.fallbacks = 0          # fits redone (non-finite with s.oracle: _mbi.FALLBACKS)

    def __call__(self, measurements: list, iters: int) -> MarginalModel:
        t0 = time.perf_counter()
        s = self.settings
        if s.estimator == "mrf":
            warm = None if self.fit is None else self.fit.potentials
            before = _mbi.FALLBACKS[s.oracle]
            self.fit = flat.estimate_mrf(self.domain, measurements, iters=iters,
                                         warm_start=warm, oracle=s.oracle,
                                         shared_max_cells=s.shared_max_cells)
            self.fallbacks += _mbi.FALLBACKS[s.oracle] - before
            cliques, tables, total = _mbi.mrf_tables(self.fit)
            model = MarginalModel(self.attrs, self.sizes, "mrf", total, cliques=cliques,
                                  tables=tables)
        else:
            self.fit = _mbi.estimate_mixture(self.domain, measurements, iters=iters,
                                             components=s.mixture_components,
                                             learning_rate=s.mixture_lr, seed=self.seed,
                                             warm_start=self.fit)
            model = MarginalModel(self.attrs, self.sizes, "mixture", float(self.fit.total),
                                  logits=_mbi.mixture_logits(self.fit, self.attrs))
        self.seconds += time.perf_counter() - t0
        return model


def run_aim(data: pd.DataFrame, sizes: Mapping[str, int], workload: Sequence[Clique],
            accountant: Accountant, rng: np.random.Generator,
            settings: AIMSettings | None = None, relation: str = RELATION) -> MarginalModel:
    """Run AIM on the integer-coded ``data`` (its columns, in order, are the attributes),
    private under ``relation`` (a measurement costs l2^2 / (2 sigma^2) and a score's
    sensitivity is l1 max_r w_r, with (l1, l2) the marginals' sensitivities)."""
    s = settings or AIMSettings()
    l1, l2 = histogram_sensitivity(relation)
    if accountant.currency != "zcdp":
        raise TypeError(f"AIM composes in zCDP; got a {accountant.currency!r} ledger")
    attrs = list(data.columns)
    codes = checked_codes(data, attrs, sizes)
    workload = sort_cliques(workload, attrs)
    weights = workload_weights(workload, attrs)
    candidates = list(weights)
    answers = {c: data_marginal(codes, c, sizes).ravel() for c in candidates}
    domain = _mbi.to_domain(attrs, sizes)

    rho = accountant.remaining()
    start_spent = accountant.rho_spent
    rounds = s.total_rounds(len(attrs))
    sigma = math.sqrt(rounds * l2**2 / (2 * s.alpha * rho))
    eps = math.sqrt(8 * (1 - s.alpha) * rho / rounds)
    # not privacy noise: a seed
    estimate = _Estimator(attrs, sizes, s, seed=int(rng.integers(2**31)))

    oneway = [c for c in candidates if len(c) == 1]
    if rounds <= len(oneway):
        raise ValueError(f"rounds={rounds} must exceed the {len(oneway)} initial 1-way "
                         "measurements (each costs rho/rounds)")

    def spent() -> float:
        return accountant.rho_spent - start_spent

    charges: list[RhoCharge] = []

    def charge(rho_i: float, label: str) -> None:
        accountant.charge_rho(rho_i, label)
        charges.append(RhoCharge(label, rho_i))

    pooled = _PooledMeasurements()
    measured: list[Clique] = []
    trace: list[dict[str, object]] = []
    for cl in oneway:                                              # Alg. 3
        label = f"aim:init:{'|'.join(cl)}"
        charge(l2**2 / (2 * sigma**2), label)
        pooled.add(cl, measure(answers[cl], sigma, rng, sensitivity=l2, relation=relation,
                               label=label), sigma)
        measured.append(cl)
    model = estimate(pooled.list(), s.max_iters)

    t_select = 0.0
    terminate = False
    while not terminate:
        t = len(trace) + 1
        remaining = rho - spent()
        if remaining <= 2 * (l2**2 / (2 * sigma**2) + eps**2 / 8):     # Alg. 4 l. 8-10
            sigma = math.sqrt(l2**2 / (2 * s.alpha * remaining))
            eps = math.sqrt(8 * (1 - s.alpha) * remaining)
            terminate = True
        used_after = spent() + eps**2 / 8 + l2**2 / (2 * sigma**2)
        size_limit = s.max_model_size * used_after / rho

        t0 = time.perf_counter()
        est_before = estimate.seconds
        cands = _small_candidates(domain, candidates, measured, size_limit)
        scores = candidate_scores(cands, answers, model.iter_marginals(cands), weights, sizes,
                                  sigma)
        sensitivity = l1 * max(weights[c] for c in cands)
        charge(eps**2 / 8, f"aim:select:{t}")
        cl = cands[select(scores, eps, sensitivity, rng, relation=relation,
                          label=f"aim:select:{t}")]
        t_select += time.perf_counter() - t0

        label = f"aim:measure:{t}:{'|'.join(cl)}"
        charge(l2**2 / (2 * sigma**2), label)
        pooled.add(cl, measure(answers[cl], sigma, rng, sensitivity=l2, relation=relation,
                               label=label), sigma)
        measured.append(cl)
        before = model.marginals([cl])[cl].ravel()      # as scored, to the last bit (tested)
        model = estimate(pooled.list(), s.max_iters)
        moved = float(np.abs(model.marginal(cl).ravel() - before).sum())
        annealed = moved <= math.sqrt(2 / math.pi) * sigma * clique_size(cl, sizes)
        trace.append({"clique": "|".join(cl), "sigma": sigma, "epsilon": eps,
                      "candidates": len(cands), "annealed": bool(annealed),
                      "seconds": time.perf_counter() - t0,
                      "seconds_estimation": estimate.seconds - est_before})
        log.info("AIM round %d: %s sigma=%.3g candidates=%d annealed=%s used=%.3f %.1fs "
                 "(estimation %.1fs)", t, "|".join(cl), sigma, len(cands), annealed,
                 spent() / rho, trace[-1]["seconds"], trace[-1]["seconds_estimation"])
        if annealed:                                                  # Alg. 4 l. 1-3
            sigma, eps = sigma / 2, eps * 2

    model = estimate(pooled.list(), s.final_iters or s.max_iters)
    model.charges = charges
    model.info = {
        "mechanism": "aim", "settings": s.as_dict(), "rho": rho, "rounds_budget": rounds,
        "rounds": len(trace), "measured": ["|".join(c) for c in measured],
        "annealed_rounds": sum(bool(r["annealed"]) for r in trace),
        "model_size_mb": _mbi.model_size_mb(domain, sort_cliques(measured, attrs)),
        "seconds_estimation": estimate.seconds, "seconds_selection": t_select,
        "noise_disabled": noise_is_off(), "trace": trace,
        "oracle_fallbacks": estimate.fallbacks,
    }
    return model


def candidate_scores(cands: Sequence[Clique], answers: Mapping[Clique, np.ndarray],
                     est: Mapping[Clique, np.ndarray] | Iterable[tuple[Clique, np.ndarray]],
                     weights: Mapping[Clique, float], sizes: Mapping[str, int],
                     sigma: float) -> np.ndarray:
    """AIM's qualities q_r = w_r (||M_r(D) - M_r(p)||_1 - sqrt(2/pi) sigma n_r), all at once.

    ``est``: the model's marginals, a mapping or (clique, table) pairs in ``cands``' order
    (``MarginalModel.iter_marginals``: each is read once, so they need not all be held).
    Each error is ``np.abs(a - e).sum()`` over the flattened cells, computed in one scratch
    buffer (no per-candidate allocation; |e - a| is |a - e| exactly), so every score equals
    the one-by-one expression bit for bit (tested).
    """
    cells = np.array([clique_size(c, sizes) for c in cands], dtype=np.int64)
    l1 = np.empty(len(cands))
    scratch = np.empty(int(cells.max(initial=0)))
    pairs = ((c, est[c]) for c in cands) if isinstance(est, Mapping) else iter(est)
    for i, c in enumerate(cands):
        got, e = next(pairs)
        if got != c:
            raise ValueError(f"marginal of {got} where candidate {c} was expected")
        flat = scratch[: e.size]
        np.subtract(e, answers[c].reshape(e.shape), out=flat.reshape(e.shape))
        np.abs(flat, out=flat)
        l1[i] = flat.sum()
    w = np.array([weights[c] for c in cands], dtype=float)
    return w * (l1 - math.sqrt(2 / math.pi) * sigma * cells.astype(float))


class _PooledMeasurements:
    """Gaussian measurements pooled per clique by precision weighting.

    Two measurements y_1, y_2 of the same marginal with sds s_1, s_2 enter the
    Private-PGM loss as sum_i ||M(p) - y_i||^2 / s_i^2, which equals
    ||M(p) - ybar||^2 / sbar^2 + const with ybar the precision-weighted mean and
    1/sbar^2 = sum_i 1/s_i^2; the minimum-variance total estimate is unchanged
    too. Pooling is therefore exact, and it keeps the loss's structure (its list
    of cliques) fixed when AIM re-measures a clique, so JAX does not recompile.
    """

    def __init__(self) -> None:
        self._prec: dict[Clique, float] = {}
        self._wsum: dict[Clique, np.ndarray] = {}
        self._order: list[Clique] = []

    def add(self, clique: Clique, y: np.ndarray, sigma: float) -> None:
        prec = 1.0 / sigma**2
        if clique not in self._prec:
            self._order.append(clique)
            self._prec[clique], self._wsum[clique] = 0.0, np.zeros_like(y, dtype=float)
        self._prec[clique] += prec
        self._wsum[clique] = self._wsum[clique] + prec * np.asarray(y, dtype=float)

    def list(self) -> list:
        return [_mbi.measurement(self._wsum[c] / self._prec[c], c, self._prec[c] ** -0.5)
                for c in self._order]


def _small_candidates(domain: object, candidates: Sequence[Clique], measured: Sequence[Clique],
                      size_limit: float) -> list[Clique]:
    """C_t: candidates whose junction tree with the measured cliques fits in size_limit MB,
    plus those already inside a measured clique (free). Sizes are mbi's
    ``hypothetical_model_size``, computed for all candidates at once (model_size.py)."""
    order = list(domain.attributes)
    free = set(downward_closure(measured, order))
    base = sort_cliques(measured, order)
    priced = [c for c in candidates if c not in free]
    if len(order) <= MAX_ATTRIBUTES:
        sizes = dict(zip(order, domain.shape, strict=True))
        mb = model_sizes_mb(order, sizes, base, priced)
    else:
        mb = np.array([_mbi.model_size_mb(domain, [*base, c]) for c in priced])
    fits = {c for c, m in zip(priced, mb, strict=True) if m <= size_limit}
    out = [c for c in candidates if c in free or c in fits]
    if not out:
        raise RuntimeError("AIM found no candidate within the model size limit")
    return out
