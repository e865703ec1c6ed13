"""DP-SGD for logistic regression as the excess-risk paper's Algorithm 6 (Zhou et al. 2024,
App. D.2, after Iyengar et al. 2019, Alg. 2) and the authors' ``DP_SGD.py``.

One run, no tuning: weights start at 0 with an intercept (a constant-1 column, as the code's
bias term, clipped and noised with the rest); each of the T steps draws B rows, clips each
row's logistic-loss gradient x (sigmoid(w.x) - y) to L2 norm C, averages over B, adds
N(0, sigma^2) to every coordinate of that mean and steps with lr_t = lr / (1 + decay t).

Rows per step (``sampling``) and the analysis that goes with them, one setting
(``dpbench.privacy.subsampled``; checked when the method is built, so a sampler can never run
under another sampler's accountant):

- ``without`` (default, the code: ``random.sample``): B distinct rows; replace-one
  neighbours; cost by the dominating pair of sampling without replacement (PLD);
- ``poisson``: each row independently with probability q = B/n, mean over B (as opacus);
  add/remove neighbours; cost by the RDP of the Poisson-sampled Gaussian (opacus).

The paper's text samples with replacement; no analysis of that sampler is at hand, so it is
refused (the code, whose numbers the paper prints, draws without replacement).

Noise (``calibration``):

- ``paper`` (default): sigma = sqrt(16 T C^2 log(1/delta)) / (n eps), Alg. 6 with the
  paper's L = C (a clipped gradient's norm bound; the code sets L = C = 1). This is Abadi et
  al. (2016) Thm. 1 with c_2 = 4 on the mean gradient. The trial's (eps, delta) is charged as
  the paper's claim, with the sampler's true cost as ``actual`` (``Accountant``): above the
  claim the record says ``understated``. At the paper's settings the true cost is about
  0.5-0.6 of eps = 1 on all six datasets (the formula over-noises).
- ``rdp``: the smallest noise multiplier z (to 1e-4 relative) whose RDP bound for T steps
  at sampling rate q = B/n meets (eps, delta) (opacus' analysis, ``dpsgd.calibrate_sigma``),
  sigma = z C / B; the RDP epsilon (<= eps, within 1e-4 relative of it) is charged. That
  analysis is of Poisson sampling: ``rdp`` with any other sampler is refused.

Every trial records ``eps_sampler`` (the cost of the noise actually used for the sampler
actually used, at the trial's delta) and the relation (``neighbours``, also the record's
``privacy.neighbours``) next to ``eps_charged``.

Labels in {0, 1} or {-1, +1} (the larger value is the positive class, ``_labels.to_pm1``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import to_pm1
from dpbench.methods.classification.dpsgd import calibrate_sigma, rdp_epsilon
from dpbench.methods.marginals.noise import noise_is_off
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.subsampled import check_sampler, without_replacement_epsilon

# scipy (~0.4 s): imported when the method fits, not when `dpbench list` / `plan` reads it
special = lazy.module("scipy.special")

CALIBRATIONS = ("paper", "rdp")
#: calibration -> the one sampler its accountant analyses (None: any analysed sampler)
CALIBRATION_SAMPLER: dict[str, str | None] = {"paper": None, "rdp": "poisson"}


def paper_sigma(steps: int, n: int, epsilon: float, delta: float, lipschitz: float = 1.0) -> float:
    """Alg. 6's noise sd on the mean gradient: sqrt(16 T L^2 log(1/delta)) / (n eps)."""
    if not (steps >= 1 and n >= 1 and epsilon > 0 and 0 < delta < 1 and lipschitz > 0):
        raise ValueError(f"need T >= 1, n >= 1, epsilon > 0, delta in (0, 1), L > 0; got "
                         f"{steps}, {n}, {epsilon}, {delta}, {lipschitz}")
    return math.sqrt(16 * steps * lipschitz**2 * math.log(1 / delta)) / (n * epsilon)


def _without(n: int, b: int, rng: np.random.Generator, **record: str) -> NDArray:
    return noise.fixed_rows(n, b, rng, **record)


def _poisson(n: int, b: int, rng: np.random.Generator, **record: str) -> NDArray:
    return noise.poisson_rows(n, b / n, rng, **record)


#: sampling name -> rows of one step (n, B, rng, relation=, label=), drawn and recorded by
#: a privacy primitive; the mean always divides by B
SAMPLERS: dict[str, Callable[..., NDArray]] = {"without": _without, "poisson": _poisson}


def sampler_epsilon(noise_multiplier: float, batch: int, n: int, steps: int, delta: float,
                    sampling: str) -> float:
    """epsilon at ``delta`` of T steps at noise multiplier z (sd z C on the batch sum) for
    the rows' sampler: Poisson RDP (add/remove) or the without-replacement PLD (replace-one)."""
    if sampling == "poisson":
        return rdp_epsilon(noise_multiplier, batch / n, steps, delta)
    return without_replacement_epsilon(noise_multiplier, batch, n, steps, delta)


def clipped_mean_gradient(X: NDArray, y01: NDArray, w: NDArray, clip: float,
                          batch: int) -> NDArray:
    """Sum over the rows of X of the logistic-loss gradient clipped to norm ``clip``, / batch.

    As the code, a row's factor is min(1, clip / (||g|| + 1e-16)).
    """
    g = X * (special.expit(X @ w) - y01)[:, None]
    norms = np.sqrt(np.einsum("ij,ij->i", g, g))
    g *= np.minimum(1.0, clip / (norms + 1e-16))[:, None]
    return g.sum(axis=0) / batch


class DPSGDIyengar(LinearModel):
    """DP-SGD of Alg. 6 (logistic loss, intercept, one fixed configuration); see the module."""

    accounting = "approx"
    #: the default sampler's relation; each instance states its own sampler's
    neighbours = "replace_one"
    serves = frozenset({"classification"})

    def __init__(self, T: int = 500, lr: float = 5.0, decay: float = 0.1, B: int = 1000,
                 C: float = 1.0, sampling: str = "without", calibration: str = "paper") -> None:
        if not (isinstance(T, Integral) and T >= 1):
            raise ValueError(f"T={T!r} must be an integer >= 1")
        if not (isinstance(B, Integral) and B >= 1):
            raise ValueError(f"B={B!r} must be an integer >= 1")
        if not (lr > 0 and decay >= 0 and C > 0):
            raise ValueError(f"need lr > 0, decay >= 0, C > 0; got lr={lr}, decay={decay}, C={C}")
        relation = check_sampler(sampling)
        if calibration not in CALIBRATIONS:
            raise ValueError(f"calibration={calibration!r} unknown; valid: "
                             f"{', '.join(CALIBRATIONS)}")
        needs = CALIBRATION_SAMPLER[calibration]
        if needs is not None and sampling != needs:
            raise ValueError(f"calibration={calibration!r} analyses {needs} sampling, not "
                             f"sampling={sampling!r}; valid: sampling={needs} or "
                             f"calibration=paper")
        super().__init__(T=int(T), lr=lr, decay=decay, B=int(B), C=C, sampling=sampling,
                         calibration=calibration)
        #: the relation of this sampler's analysis (recorded with every trial)
        self.neighbours = relation

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        p = self.params
        n, steps, batch, clip = data.n, p["T"], p["B"], float(p["C"])
        if batch > n:
            raise ValueError(f"B={batch} exceeds the {n} training rows")
        eps, delta = accountant.epsilon, accountant.delta
        q = batch / n
        if p["calibration"] == "paper":
            sigma = paper_sigma(steps, n, eps, delta, clip)
            z = sigma * batch / clip
            eps_true = sampler_epsilon(z, batch, n, steps, delta, p["sampling"])
            eps_charged = eps
        else:
            z_cal = calibrate_sigma(eps, delta, q, steps)
            if z_cal is None:
                raise ValueError(f"no noise multiplier meets eps={eps:.3g} at delta={delta:.3g} "
                                 f"for T={steps}, q={q:.3g} with the RDP orders available")
            z = z_cal
            sigma = z * clip / batch
            eps_true = eps_charged = sampler_epsilon(z, batch, n, steps, delta, p["sampling"])
        accountant.charge_eps_delta(
            eps_charged, delta, f"dpsgd_iyengar: {steps} steps, {p['calibration']} noise, "
            f"{p['sampling']} sampling", actual=eps_true)
        # the batch mean's sensitivity: a row's clipped gradient (add/remove), or the change
        # from one clipped gradient to another (replace-one), over B
        mean_sens = clip * (2 if self.neighbours == "replace_one" else 1) / batch
        label = "dpsgd_iyengar: noisy clipped batch sums"

        X = np.column_stack([np.ones(n), np.asarray(data.X, dtype=float)])
        y01 = (to_pm1(data.y) + 1) / 2
        draw = SAMPLERS[p["sampling"]]
        noisy = not noise_is_off()
        w = np.zeros(X.shape[1])
        for t in range(steps):
            rows = draw(n, batch, rng, relation=self.neighbours, label=label)
            grad = clipped_mean_gradient(X[rows], y01[rows], w, clip, batch)
            if noisy:
                grad = noise.gaussian(grad, sigma, rng, sensitivity=mean_sens,
                                      relation=self.neighbours, label=label, on_batch=True)
            w -= p["lr"] / (1 + p["decay"] * t) * grad
        self.intercept_, self.coef_ = float(w[0]), w[1:].copy()
        self.info_ = {"calibration": p["calibration"], "sampling": p["sampling"],
                      "noise_sd": sigma, "noise_multiplier": z, "sample_rate": q,
                      "eps_charged": eps_charged, "delta_charged": delta,
                      "eps_sampler": eps_true, "neighbours": self.neighbours,
                      "noise_disabled": not noisy}
        return self

    def info(self) -> dict[str, Any]:
        return dict(self.info_)
