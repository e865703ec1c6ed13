"""DP-SGD (Abadi et al. 2016) for linear and logistic models with opacus, tuned on
the DD-SSP paper's grid (App. G.2) and reported two ways (Fig. 3's band).

Each run: an opacus ``GradSampleModule`` computes per-example gradients, the
``DPOptimizer`` clips them to ``clip`` and adds N(0, (sigma clip)^2) noise; batches
are Poisson samples with rate q = 1/ceil(n/B) (what opacus' DPDataLoader uses),
drawn from a torch generator seeded from the trial's ``rng``. opacus'
``RDPAccountant`` records every step; sigma is the smallest noise multiplier
(to 1e-4 relative) whose RDP bound (orders ``ALPHAS``) meets the run's target,
and the accountant's own epsilon after training is checked against it.

Selection: the run with the smallest sum over training rows of the per-row loss
clipped to [0, score_clip] (log-loss for ``logistic``, squared error for
``squared``).

- ``mode="optimistic"`` (paper's "ignoring hyperparameter tuning cost"): every
  run gets the full (eps, delta); the score is exact; only the selected run is
  charged to the ledger. Not a DP release of the whole procedure.
- ``mode="realistic"``: the grid is paid by composition (``tuning.py``): each of
  the k runs gets (eps0, delta0) = ``per_run_budget``; inside a run,
  ((1 - score_fraction) eps0, delta0/2) goes to DP-SGD and
  (score_fraction eps0, delta0/2) to the score, released with the analytic
  Gaussian mechanism (sensitivity score_clip under add/remove). The selection
  is then post-processing, and the composed (eps, delta) of all k runs (their
  reported epsilons) is charged to the ledger.

If a run's target is below what the RDP orders can certify (very small eps0,
e.g. the paper grid at eps <= 0.5), realistic mode cannot run: with
``on_infeasible="zero"`` it returns theta = 0 without touching the data (spends
nothing, charged as an explicit 0; ``info.infeasible = 1``; the paper draws no point
there), with ``"fail"`` it raises.

torch and opacus (~5 s to import) are imported by the functions that train or account,
not with this module: commands that only plan import the class to read its declarations.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import TabularData
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import logistic_loss, to_pm1
from dpbench.methods.classification.tuning import THEOREMS, compose, per_run_budget
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.gaussian import sigma_analytic

if TYPE_CHECKING:
    import torch
    from opacus.optimizers import DPOptimizer

#: the paper's 108-configuration grid (App. G.2); "n" = full batch
PAPER_GRID: dict[str, list[Any]] = {
    "batch_sizes": ["n", 1024, 256],
    "clips": [0.01, 0.1, 0.2],
    "epochs": [1, 10, 20],
    "lrs": [0.001, 0.01, 0.1, 1.0],
}
#: RDP orders: opacus' defaults (``RDPAccountant.DEFAULT_ALPHAS``, written out so that this
#: module imports without opacus; tests/methods/test_dpsgd.py checks they agree) plus larger
#: ones so that small per-run targets can be met
ALPHAS: list[float] = ([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
                       + [64, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024])
LOSSES = ("logistic", "squared")
MODES = ("optimistic", "realistic")
_SIGMA_MAX = 1e4


def rdp_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """epsilon at delta of `steps` Poisson-subsampled Gaussian steps (opacus' RDP analysis)."""
    from opacus.accountants.analysis import rdp as rdp_analysis

    rdp = rdp_analysis.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=ALPHAS)
    with warnings.catch_warnings():  # "optimal order is the largest alpha": a sound bound still
        warnings.simplefilter("ignore", UserWarning)
        return float(rdp_analysis.get_privacy_spent(orders=ALPHAS, rdp=rdp, delta=delta)[0])


def epsilon_floor(delta: float) -> float:
    """The RDP-to-DP conversion's epsilon as sigma -> infinity (RDP -> 0): no noise
    level certifies a smaller epsilon with the orders ``ALPHAS``."""
    a = np.asarray(ALPHAS, dtype=float)
    return float(np.min(np.log((a - 1) / a) - (math.log(delta) + np.log(a)) / (a - 1)))


@functools.lru_cache(maxsize=512)
def calibrate_sigma(epsilon: float, delta: float, q: float, steps: int,
                    rtol: float = 1e-4) -> float | None:
    """Smallest noise multiplier (within rtol) meeting (epsilon, delta); None if none can.

    Cached: a pure function of its arguments, repeated across trials of one worker."""
    def ok(s: float) -> bool:
        return rdp_epsilon(s, q, steps, delta) <= epsilon

    if epsilon <= epsilon_floor(delta):
        return None
    hi = 1.0
    while not ok(hi):
        hi *= 2
        if hi > _SIGMA_MAX:
            return None
    lo = hi / 2
    while ok(lo) and lo > 1e-3:
        hi, lo = lo, lo / 2
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def sampling(n: int, batch: int | str) -> tuple[float, int]:
    """(Poisson rate q, batches per epoch) as opacus' DPDataLoader sets them."""
    b = n if batch == "n" else int(batch)
    per_epoch = math.ceil(n / b)
    return 1.0 / per_epoch, per_epoch


def grid_configs(grid: Mapping[str, Sequence[Any]]) -> list[tuple[Any, float, int, float]]:
    """(batch, clip, epochs, lr) tuples in a fixed order, after validating the grid."""
    keys = ("batch_sizes", "clips", "epochs", "lrs")
    unknown = sorted(set(grid) - set(keys))
    if unknown or any(not grid.get(k) for k in keys):
        raise ValueError(f"grid needs non-empty lists {', '.join(keys)}; got keys "
                         f"{sorted(grid)}")
    for b in grid["batch_sizes"]:
        if b != "n" and not (isinstance(b, int) and b >= 1):
            raise ValueError(f"batch size {b!r} invalid; valid: 'n' or an integer >= 1")
    for k in ("clips", "epochs", "lrs"):
        if any(not (isinstance(v, int | float) and v > 0) for v in grid[k]):
            raise ValueError(f"grid {k} must be positive numbers, got {list(grid[k])}")
    return [(b, float(c), int(e), float(lr)) for b, c, e, lr in
            itertools.product(grid["batch_sizes"], grid["clips"], grid["epochs"], grid["lrs"])]


class DPSGD(LinearModel):
    """DP-SGD over a hyperparameter grid; see the module docstring."""

    accounting = "approx"
    serves = frozenset({"classification", "regression"})

    @classmethod
    def tasks_served(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """Logistic loss: classification; squared loss: regression (Fig. 3a's DP-SGD)."""
        return frozenset({"regression" if params.get("loss") == "squared" else "classification"})

    def __init__(self, loss: str = "logistic", mode: str = "realistic",
                 grid: Mapping[str, Sequence[Any]] | None = None,
                 tuning_theorem: str = "advanced", score_fraction: float = 0.1,
                 score_clip: float | None = None, on_infeasible: str = "zero") -> None:
        grid = dict(PAPER_GRID if grid is None else grid)
        if loss not in LOSSES:
            raise ValueError(f"loss={loss!r} unknown; valid: {', '.join(LOSSES)}")
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} unknown; valid: {', '.join(MODES)}")
        if tuning_theorem not in THEOREMS:
            raise ValueError(f"tuning_theorem={tuning_theorem!r}; valid: {', '.join(THEOREMS)}")
        if not 0 < score_fraction < 1:
            raise ValueError(f"score_fraction={score_fraction!r} must lie in (0, 1)")
        if score_clip is not None and not score_clip > 0:
            raise ValueError(f"score_clip={score_clip!r} must be > 0")
        if on_infeasible not in ("zero", "fail"):
            raise ValueError(f"on_infeasible={on_infeasible!r}; valid: zero, fail")
        grid_configs(grid)
        super().__init__(loss=loss, mode=mode, grid=grid, tuning_theorem=tuning_theorem,
                         score_fraction=score_fraction, score_clip=score_clip,
                         on_infeasible=on_infeasible)

    # ------------------------------------------------------------------ fit
    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        p = self.params
        configs = grid_configs(p["grid"])
        k, n = len(configs), data.n
        realistic = p["mode"] == "realistic"
        y = self._targets(data.y)
        clip_loss = p["score_clip"] or (5.0 if p["loss"] == "logistic" else 4 * data.y_bound**2)
        if realistic:
            eps0, delta0 = per_run_budget(accountant.epsilon, accountant.delta, k,
                                          p["tuning_theorem"])
            eps_sgd, delta_sgd = (1 - p["score_fraction"]) * eps0, delta0 / 2
            eps_score = p["score_fraction"] * eps0
            score_sd = sigma_analytic(eps_score, delta0 / 2, clip_loss)
        else:
            eps0, delta0 = accountant.epsilon, accountant.delta
            eps_sgd, delta_sgd, eps_score, score_sd = eps0, delta0, 0.0, 0.0
        sigmas = {}
        for b, _, e, _ in configs:
            if (b, e) not in sigmas:
                q, per_epoch = sampling(n, b)
                sigmas[(b, e)] = calibrate_sigma(eps_sgd, delta_sgd, q, e * per_epoch)
        self.info_ = {"mode": p["mode"], "grid_size": k, "run_epsilon": eps0,
                      "run_delta": delta0, "infeasible": 0}
        if any(s is None for s in sigmas.values()):
            if p["on_infeasible"] == "fail":
                raise ValueError(f"DP-SGD cannot meet a per-run target eps={eps_sgd:.3g} at "
                                 f"delta={delta_sgd:.3g} with RDP orders up to {ALPHAS[-1]}")
            self.coef_ = np.zeros(data.d)
            self.info_["infeasible"] = 1
            # the zero model reads no row: 0-DP, charged explicitly (a private method's
            # ledger must say what it spent, and this release spent nothing)
            accountant.charge_eps_delta(0.0, 0.0, "infeasible budget: zero model, no row read")
            noise.reads_nothing("infeasible budget: zero model", relation=self.neighbours)
            return self

        import torch

        seed = int(rng.integers(2**31))  # not privacy noise: seeds the noise generator
        sampler = np.random.default_rng(int(rng.integers(2**31)))  # not privacy noise: seed
        runs = []
        with _single_thread():
            gen = torch.Generator().manual_seed(seed)
            X = torch.as_tensor(data.X, dtype=torch.float32)
            yt = torch.as_tensor(y, dtype=torch.float32)
            for b, c, e, lr in configs:
                q, per_epoch = sampling(n, b)
                sigma = sigmas[(b, e)]
                # Poisson batches, add/remove: a row moves the clipped-gradient sum by c
                theta, eps_rep = self._train(X, yt, q, e * per_epoch, sigma, c, lr, delta_sgd,
                                             gen, sampler, f"dpsgd run b={b} c={c:g} e={e} "
                                             f"lr={lr:g}")
                if eps_rep > eps_sgd * (1 + 1e-9):
                    raise RuntimeError(f"opacus reports eps={eps_rep} > run target {eps_sgd}")
                score = self._score(data.X, y, theta, clip_loss)
                if realistic:
                    score = noise.gaussian(score, score_sd, rng, sensitivity=clip_loss,
                                           relation=self.neighbours,
                                           label=f"dpsgd score b={b} c={c:g} e={e} lr={lr:g}")
                runs.append({"batch": b, "clip": c, "epochs": e, "lr": lr, "sigma": sigma,
                             "eps_reported": eps_rep, "score": score, "theta": theta})
        best = min(range(k), key=lambda i: runs[i]["score"])
        self.coef_ = runs[best]["theta"]
        if realistic:
            eps_tot, delta_tot = compose([r["eps_reported"] + eps_score for r in runs],
                                         [delta0] * k, accountant.delta / 2,
                                         p["tuning_theorem"])
            accountant.charge_eps_delta(
                eps_tot, delta_tot,
                f"dpsgd: {k} runs + noisy scores, {p['tuning_theorem']} composition")
        else:
            accountant.charge_eps_delta(runs[best]["eps_reported"], accountant.delta,
                                        "dpsgd: selected run only (tuning cost ignored)")
            if k > 1:   # the paper's "ignoring hyperparameter tuning cost" line
                accountant.declare_unpaid_selection(k)
        r = runs[best]
        self.info_.update(best_batch=str(r["batch"]), best_clip=r["clip"],
                          best_epochs=r["epochs"], best_lr=r["lr"], noise_multiplier=r["sigma"],
                          best_eps_reported=r["eps_reported"], score_sd=score_sd)
        return self

    def info(self) -> dict[str, Any]:
        return dict(self.info_)

    # ------------------------------------------------------------ internals
    def _targets(self, y: NDArray) -> NDArray:
        if self.params["loss"] == "logistic":
            return (to_pm1(y) + 1) / 2  # {0, 1} for the BCE loss
        return np.asarray(y, dtype=float)

    def _train(self, X: torch.Tensor, y: torch.Tensor, q: float, steps: int, sigma: float,
               clip: float, lr: float, delta: float, gen: torch.Generator,
               sampler: np.random.Generator, label: str) -> tuple[NDArray, float]:
        """One DP-SGD run with opacus; returns theta and the accountant's epsilon."""
        import torch
        from opacus import GradSampleModule
        from opacus.accountants import RDPAccountant
        from torch import nn

        n, d = X.shape
        model = nn.utils.skip_init(nn.Linear, d, 1, bias=False)  # no global-RNG draw
        nn.init.zeros_(model.weight)
        gsm = GradSampleModule(model)
        opt = noise.dp_optimizer(torch.optim.SGD(gsm.parameters(), lr=lr),
                                 noise_multiplier=sigma, max_grad_norm=clip,
                                 expected_batch_size=max(int(n * q), 1), generator=gen,
                                 relation=self.neighbours, label=label)
        acc = RDPAccountant()
        opt.attach_step_hook(acc.get_optimizer_hook_fn(sample_rate=q))
        loss_fn = nn.BCEWithLogitsLoss() if self.params["loss"] == "logistic" else nn.MSELoss()
        for _ in range(steps):
            rows = torch.from_numpy(noise.poisson_rows(n, q, sampler, relation=self.neighbours,
                                                       label=label))
            if len(rows) == 0:  # empty Poisson batch: the update is noise only
                _noise_only_step(opt, gen, self.neighbours, label)
                acc.step(noise_multiplier=sigma, sample_rate=q)
                continue
            opt.zero_grad()
            with warnings.catch_warnings():  # opacus' hooks on an input without grad
                warnings.simplefilter("ignore", UserWarning)
                loss_fn(gsm(X[rows]).squeeze(-1), y[rows]).backward()
            opt.step()
        with warnings.catch_warnings():  # "optimal order is the largest alpha": still sound
            warnings.simplefilter("ignore", UserWarning)
            eps = float(acc.get_epsilon(delta, alphas=ALPHAS))
        theta = model.weight.detach().double().numpy().ravel().copy()
        gsm.remove_hooks()
        return theta, eps

    def _score(self, X: NDArray, y: NDArray, theta: NDArray, clip: float) -> float:
        """Sum of per-row losses clipped to [0, clip] (sensitivity clip); clip n if diverged."""
        if not np.all(np.isfinite(theta)):
            return clip * len(y)
        s = X @ theta
        if self.params["loss"] == "logistic":
            per_row = logistic_loss((2 * y - 1) * s)
        else:
            per_row = (s - y) ** 2
        return float(np.sum(np.minimum(np.nan_to_num(per_row, nan=clip, posinf=clip), clip)))


def _noise_only_step(opt: DPOptimizer, gen: torch.Generator, relation: str,
                     label: str) -> None:
    """What DPOptimizer does for a batch with no rows: sum of clipped gradients = 0."""
    for p in opt.params:
        std = opt.noise_multiplier * opt.max_grad_norm
        p.grad = noise.torch_gaussian(p.shape, std, gen, sensitivity=opt.max_grad_norm,
                                      relation=relation, label=label,
                                      on_batch=True) / opt.expected_batch_size
    opt.original_optimizer.step()


class _single_thread:
    """Run torch on one thread (bit-identical results) and restore the setting after."""

    def __enter__(self) -> None:
        import torch

        self.old = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.set_num_threads(self.old)
