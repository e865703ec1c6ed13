"""DP-GD for least squares: full-batch gradient descent with per-example clipping.

Each of T steps (one step per epoch, full batch) releases sum_i clip_C(g_i) + N(0, s^2 I)
with g_i = (x_i' theta - y_i) x_i; the sum has L2 sensitivity C (add/remove), so a step is
(C/s)-GDP and T steps compose to sqrt(T) C / s-GDP (Dong et al. 2022). We set
s = C sqrt(T) / mu. The update is theta -= lr * noisy_sum / n (n treated as public).

``DPGDGrid`` reproduces the paper's tuning protocol (App. A): it runs every
(lr, clip, epochs) of a grid, each at the full budget, and returns the fit with the
smallest *non-private* training loss. The selection is not DP (the paper says so); only
the chosen run's releases are charged. All grid fits are kept (``grid_coefs_``) so the
report can also pick the configuration with the best average over trials.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant


def dpgd_paths(X: NDArray, y: NDArray, lrs: NDArray, clips: NDArray, epochs: int, mu: float,
               rng: np.random.Generator) -> NDArray:
    """Run len(lrs) independent DP-GD chains of ``epochs`` steps at once; returns (m, d)."""
    n, d = X.shape
    m = lrs.size
    theta = np.zeros((d, m))
    sd = clips * math.sqrt(epochs) / mu                       # (m,)
    xnorm = np.linalg.norm(X, axis=1)[:, None]               # (n, 1)
    live = np.ones(m, dtype=bool)
    # every chain's step is one Gaussian release of its clipped-gradient sum (L2
    # sensitivity clip under add/remove, sd sd_j): recorded together as the standardised
    # sums (sum / sd_j), whose L2 sensitivity is sqrt(sum_j (clip_j / sd_j)^2)
    whitened = float(np.sqrt(np.sum((clips / sd) ** 2)))
    for t in range(epochs):
        # a diverged chain (|theta| > 1e100) is dead: its fit is nan, and it is left out
        # of the arithmetic (its overflow would otherwise slow every step down)
        live &= np.all(np.abs(theta) < 1e100, axis=0)
        th = theta[:, live]
        resid = X @ th - y[:, None]                           # (n, m_live)
        gnorm = np.abs(resid) * xnorm
        scale = np.minimum(1.0, clips[None, live] / np.maximum(gnorm, 1e-12))
        clipped = np.zeros((d, m))                            # dead chains: sum 0
        clipped[:, live] = X.T @ (resid * scale)
        # noise drawn for every chain, dead ones too (a draw was made)
        grad = noise.gaussian(clipped, sd[None, :], rng, sensitivity=whitened,
                              relation="add_remove", label=f"GD step {t}",
                              form="standard")
        theta[:, live] = th - lrs[None, live] * grad[:, live] / n
    theta[:, ~live] = np.nan
    return theta.T


def _charge(accountant: Accountant, clip: float, epochs: int, mu: float, note: str) -> None:
    sd = clip * math.sqrt(epochs) / mu
    for t in range(epochs):
        accountant.charge_gaussian(clip, sd, f"GD step {t}{note}")


class DPGD(LinearModel):
    """One DP-GD run with fixed (lr, clip, epochs)."""

    accounting = "gdp"

    def __init__(self, lr: float = 0.1, clip: float = 1.0, epochs: int = 10) -> None:
        _check(lr, clip, epochs)
        super().__init__(lr=lr, clip=clip, epochs=int(epochs))

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        p, mu = self.params, accountant.mu_total
        _charge(accountant, p["clip"], p["epochs"], mu, "")
        self.coef_ = dpgd_paths(data.X, data.y, np.array([p["lr"]]), np.array([p["clip"]]),
                                p["epochs"], mu, rng)[0]
        return self


class DPGDGrid(LinearModel):
    """DP-GD tuned over a grid by (non-private) training loss, as in the paper's App. A."""

    accounting = "gdp"

    def __init__(self, lrs: Sequence[float] = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
                 clips: Sequence[float] = (1, 5, 10, 20, 50, 100),
                 epochs: Sequence[int] = (1, 5, 10, 20, 50, 100)) -> None:
        for lr, c, e in itertools.product(lrs, clips, epochs):
            _check(lr, c, e)
        super().__init__(lrs=[float(v) for v in lrs], clips=[float(v) for v in clips],
                         epochs=[int(v) for v in epochs])

    def configs(self) -> list[tuple[float, float, int]]:
        """The grid in a fixed order (lr, clip, epochs)."""
        p = self.params
        return list(itertools.product(p["lrs"], p["clips"], p["epochs"]))

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        mu, cfgs = accountant.mu_total, self.configs()
        coefs = np.empty((len(cfgs), data.d))
        for e in sorted(set(self.params["epochs"])):
            idx = [i for i, c in enumerate(cfgs) if c[2] == e]
            coefs[idx] = dpgd_paths(data.X, data.y, np.array([cfgs[i][0] for i in idx]),
                                    np.array([cfgs[i][1] for i in idx]), e, mu, rng)
        with np.errstate(over="ignore", invalid="ignore"):
            loss = np.mean((data.X @ coefs.T - data.y[:, None]) ** 2, axis=0)
        best = int(np.nanargmin(np.where(np.isfinite(loss), loss, np.nan)))
        lr, clip, epochs = cfgs[best]
        _charge(accountant, clip, epochs, mu,
                f" (config picked non-privately from {len(cfgs)}, paper's protocol)")
        if len(cfgs) > 1:   # every run saw the private data; the pick paid nothing
            accountant.declare_unpaid_selection(len(cfgs))
        self.grid_coefs_, self.best_ = coefs, best
        self.coef_ = coefs[best]
        return self

    def info(self) -> dict[str, Any]:
        lr, clip, epochs = self.configs()[self.best_]
        return {"lr": lr, "clip": clip, "epochs": epochs, "n_configs": len(self.configs())}


def _check(lr: float, clip: float, epochs: int) -> None:
    if not (lr > 0 and clip > 0 and int(epochs) == epochs and epochs >= 1):
        raise ValueError(f"need lr > 0, clip > 0, integer epochs >= 1; got lr={lr!r}, "
                         f"clip={clip!r}, epochs={epochs!r}")
