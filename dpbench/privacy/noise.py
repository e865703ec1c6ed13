"""Privacy noise that records itself: every draw a method's guarantee rests on.

Each function here draws the noise of one randomised release from the caller's numpy
``Generator`` (or torch ``Generator``) and, in the same call, notes it in the active
:func:`dpbench.privacy.draws.recording` trace with the scale it actually drew at, the
sensitivity it was calibrated for, the neighbouring relation and, for a row sampler, the rows
it actually returned. A method never writes a trace record itself: the privacy audit
(``tests/privacy``) prices what was drawn, not a parallel statement of it, and a contract
test refuses any other random draw in ``dpbench/methods`` unless its line says
``# not privacy noise``.

The draws are made exactly as the methods made them before they moved here (same calls,
same order, same arithmetic), so every stored trial is bit-identical.

- :func:`gaussian` / :func:`laplace`: value + noise, elementwise. An array ``sd`` (one per
  coordinate, BinAgg's per-bin sums, DP-GD's chains) is recorded as the standardised
  statistic value / sd with unit noise, whose L2 ``sensitivity`` the caller states;
- :func:`gaussian_symmetric`: X^T X + a symmetric matrix of iid upper-triangle noise;
- :func:`gaussian_spread`: a per-bin Gaussian release drawn as synthetic records;
- :func:`exponential`: the exponential mechanism by the Gumbel-max trick;
- :func:`exponential_samples`: ``samples`` iid draws of an exponential mechanism from its
  softmax distribution, priced from the weight it samples with (DualQuery's query player);
- :func:`noisy_argmax`: report-noisy-max with Laplace noise, one release per row (PATE);
- :func:`poisson_rows` / :func:`fixed_rows`: the rows of one step of a sampled
  mechanism (each draw recorded with its size, so the audit can price the sampler from its
  rows), and :func:`gaussian` with ``on_batch=True`` for the noise on that batch's sum;
- :func:`torch_gaussian`: Gaussian noise from a torch generator (DP-SGD with opacus);
- :class:`PrivTree`: PrivTree's Laplace split tests with their biased counts, one record
  per tree (Zhang, Xiao & Xie 2016 analyse the tree as a whole);
- :func:`theorem_noise`: noise whose (epsilon, delta) a paper's theorem states (objective
  perturbation): drawn and recorded as an ``approx_dp`` step;
- :func:`jl_projection`: a Gaussian random projection, recorded with the smallest singular
  value and row norm its guarantee rests on (Sheffet 2017's JLT).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbench.privacy import draws
from dpbench.privacy._checks import check_nonneg, check_positive

if TYPE_CHECKING:
    import torch

#: how :func:`gaussian` draws: ``normal`` = value + rng.normal(0, sd, shape), ``standard``
#: = value + sd * rng.standard_normal(shape) (the two forms the methods were written in)
FORMS = ("normal", "standard")


def _standardised(value: NDArray, sd: NDArray) -> NDArray:
    return np.divide(value, sd, out=np.zeros(np.broadcast_shapes(value.shape, sd.shape)),
                     where=sd > 0)


def gaussian(value: ArrayLike, sd: float | ArrayLike, rng: np.random.Generator, *,
             sensitivity: float, relation: str, label: str, form: str = "normal",
             on_batch: bool = False) -> Any:
    """value + N(0, sd^2) noise, elementwise; recorded as a Gaussian of L2 ``sensitivity``.

    A scalar ``value`` with a scalar ``sd`` returns a float. ``on_batch``: the statistic is
    a sum over the rows the last :func:`poisson_rows` / :func:`fixed_rows` call returned.
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r} unknown; valid: {', '.join(FORMS)}")
    scalar = np.ndim(value) == 0 and np.ndim(sd) == 0
    v = np.asarray(value, dtype=float)
    s = np.asarray(sd, dtype=float)
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        raise ValueError(f"sd must be finite and >= 0, got {sd}")
    shape = np.broadcast_shapes(v.shape, s.shape)
    if draws.active():
        uniform = s.ndim == 0
        draws.record("gaussian", label, scale=float(s) if uniform else 1.0,
                     sensitivity=sensitivity, relation=relation, size=int(np.prod(shape)),
                     value=v if uniform else _standardised(v, s), on_batch=on_batch)
    if form == "normal":
        noise = rng.normal(0.0, float(s) if s.ndim == 0 else s,
                           size=None if scalar else shape)
        out = v + noise
    else:
        z = rng.standard_normal() if scalar else rng.standard_normal(shape)
        out = v + (float(s) if s.ndim == 0 else s) * z
    return float(out) if scalar else out


def gaussian_spread(value: NDArray, sd: float | NDArray, counts: NDArray,
                    rng: np.random.Generator, *, sensitivity: float, relation: str,
                    label: str) -> NDArray:
    """Each row k of ``value`` released with N(0, sd_k^2) noise spread over ``counts[k]``
    records (BinAgg's Alg. 3): record i of bin k is (value_k + sqrt(c_k) sd_k z_i) / c_k,
    z_i iid N(0, 1), so the records of bin k sum to value_k + N(0, sd_k^2). Recorded as
    that per-bin Gaussian (standardised by an array ``sd``, as :func:`gaussian`)."""
    v = np.asarray(value, dtype=float)
    s = np.asarray(sd, dtype=float)
    if draws.active():
        uniform = s.ndim == 0
        draws.record("gaussian", label, scale=float(s) if uniform else 1.0,
                     sensitivity=sensitivity, relation=relation, size=v.size,
                     value=v if uniform else _standardised(v, s))
    reps = np.asarray(counts).astype(np.int64)
    bin_of = np.repeat(np.arange(reps.size), reps)
    c = np.asarray(counts, dtype=float)[bin_of]
    z = rng.standard_normal((bin_of.size, *v.shape[1:]))
    root = np.sqrt(c).reshape((-1,) + (1,) * (v.ndim - 1))
    spread = root * (s if s.ndim == 0 else s[bin_of]) * z
    return (v[bin_of] + spread) / c.reshape(root.shape)


def gaussian_symmetric(value: NDArray, sd: float, rng: np.random.Generator, *,
                       sensitivity: float, relation: str, label: str) -> NDArray:
    """value (d x d, symmetric) + symmetric noise: upper triangle with diagonal iid
    N(0, sd^2), mirrored; recorded on the d (d + 1) / 2 upper-triangle entries."""
    sd = check_nonneg(sd, "sd")
    d = value.shape[0]
    if draws.active():
        draws.record("gaussian", label, scale=sd, sensitivity=sensitivity, relation=relation,
                     size=d * (d + 1) // 2, value=value[np.triu_indices(d)])
    z = rng.normal(0.0, sd, size=(d, d))
    return value + (np.triu(z) + np.triu(z, 1).T)


def laplace(value: ArrayLike, scale: float, rng: np.random.Generator, *, sensitivity: float,
            relation: str, label: str) -> Any:
    """value + Laplace(0, scale) noise, elementwise; recorded with L1 ``sensitivity``.

    A scalar ``value`` returns a float."""
    scale = check_nonneg(scale, "scale")
    scalar = np.ndim(value) == 0
    v = np.asarray(value, dtype=float)
    draws.record("laplace", label, scale=scale, sensitivity=sensitivity, relation=relation,
                 size=v.size, norm="l1", value=v)
    if scalar:
        return float(v + rng.laplace(0.0, scale))
    return v + rng.laplace(0.0, scale, size=v.shape)


def noisy_argmax(scores: ArrayLike, scale: float, rng: np.random.Generator, *,
                 sensitivity: float, relation: str, label: str) -> NDArray:
    """Per row of ``scores`` (queries x candidates), argmax of the row + Laplace(scale)
    noise: one report-noisy-max release per row, each recorded with the row's L1
    ``sensitivity`` (labelled ``<label> <i>/<rows>``)."""
    scale = check_nonneg(scale, "scale")
    s = np.asarray(scores, dtype=float)
    if draws.active():
        for i in range(s.shape[0]):
            draws.record("report_noisy_max", f"{label} {i + 1}/{s.shape[0]}", scale=scale,
                         sensitivity=sensitivity, norm="l1", relation=relation,
                         size=s.shape[1], value=s[i])
    return np.argmax(s + rng.laplace(0.0, scale, size=s.shape), axis=1)


def _check_scores(s: NDArray) -> None:
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-d array, got shape {s.shape}")
    if np.isnan(s).any() or np.isposinf(s).any() or not np.isfinite(s).any():
        raise ValueError(f"scores must be finite or -inf with at least one finite, got {s}")


def exponential(scores: ArrayLike, epsilon: float, sensitivity: float,
                rng: np.random.Generator, *, relation: str, label: str,
                monotonic: bool = False) -> int:
    """Index i with probability ~ exp(eps score_i / (2 Delta)) (``monotonic``: without the
    2, McSherry & Talwar 2007), by the Gumbel-max trick (exact, stable). A score of -inf
    excludes a candidate; nan and +inf are refused. Recorded with the score vector as its
    value (its largest change is ``sensitivity``, norm linf)."""
    epsilon = check_nonneg(epsilon, "epsilon")
    sensitivity = check_positive(sensitivity, "sensitivity")
    s = np.asarray(scores, dtype=float)
    _check_scores(s)
    draws.record("exponential", label, scale=epsilon, sensitivity=sensitivity,
                 relation=relation, size=s.size, norm="linf", monotonic=monotonic, value=s)
    factor = 1.0 if monotonic else 2.0
    if epsilon == 0:  # uniform over the candidates that are not excluded (avoids 0 * -inf)
        logits = np.where(np.isfinite(s), 0.0, -np.inf)
    else:
        logits = epsilon * (s - s.max()) / (factor * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=s.shape)))


def exponential_samples(scores: ArrayLike, weight: float, sensitivity: float, samples: int,
                        rng: np.random.Generator, *, relation: str, label: str) -> NDArray:
    """``samples`` iid indices from softmax(``weight`` x scores): each an exponential
    mechanism on scores of sensitivity ``sensitivity``, so (2 weight Delta)-DP, the
    epsilon recorded (``samples`` releases)."""
    weight = check_nonneg(weight, "weight")
    sensitivity = check_nonneg(sensitivity, "sensitivity")
    s = np.asarray(scores, dtype=float)
    _check_scores(s)
    draws.record("exponential", label, scale=2 * weight * sensitivity,
                 sensitivity=sensitivity, relation=relation, size=s.size,
                 count=int(samples), norm="linf", value=s)
    from scipy import special  # here: ~0.4 s, and `dpbench list` / `plan` import this module

    p = special.softmax(weight * s)
    return rng.choice(p.size, size=int(samples), p=p)


# -- row samplers ---------------------------------------------------------------------------

def poisson_rows(n: int, rate: float, rng: np.random.Generator, *, relation: str,
                 label: str) -> NDArray:
    """Rows of a Poisson sample of n (each independently with probability ``rate``), in
    O(rate n): the gaps between successes of n Bernoulli(q) trials are iid Geometric(q).
    Recorded with the number of rows drawn."""
    if rate >= 1.0:
        rows = np.arange(n)
    else:
        chunk = int(n * rate + 10 * math.sqrt(n * rate) + 16)
        parts, last = [], -1
        while last < n - 1:
            idx = last + np.cumsum(rng.geometric(rate, size=chunk))
            parts.append(idx)
            last = int(idx[-1])
        rows = np.concatenate(parts)
        rows = rows[rows < n]
    _record_rows("poisson", rows, n, rate, relation, label)
    return rows


def fixed_rows(n: int, batch: int, rng: np.random.Generator, *, relation: str,
               label: str) -> NDArray:
    """``batch`` distinct rows of n, uniformly (sampling without replacement); recorded
    with the rows drawn."""
    rows = rng.choice(n, size=batch, replace=False)
    _record_rows("without", rows, n, batch / n, relation, label)
    return rows


def _record_rows(sampling: str, rows: NDArray, n: int, rate: float, relation: str,
                 label: str) -> None:
    if draws.active():
        draws.record("sample", label, scale=0.0, sensitivity=0.0, relation=relation,
                     size=len(rows), sampling=sampling, rate=rate, population=n,
                     distinct=bool(np.unique(rows).size == len(rows)))


def torch_gaussian(shape: Sequence[int], sd: float, generator: torch.Generator, *,
                   sensitivity: float, relation: str, label: str, on_batch: bool = False,
                   dtype: Any = None) -> torch.Tensor:
    """N(0, sd^2) noise of ``shape`` from a torch generator (as opacus draws it: zeros for
    sd = 0); recorded as a Gaussian of L2 ``sensitivity`` with zero as its value."""
    import torch

    size = tuple(int(k) for k in shape)
    if draws.active():
        draws.record("gaussian", label, scale=float(sd), sensitivity=sensitivity,
                     relation=relation, size=int(np.prod(size)), on_batch=on_batch)
    kw = {} if dtype is None else {"dtype": dtype}
    if sd == 0:
        return torch.zeros(size, **kw)
    return torch.normal(mean=0, std=sd, size=size, generator=generator, **kw)


# -- mechanisms analysed as a whole by their paper ----------------------------------------

class PrivTree:
    """PrivTree's split tests (Zhang, Xiao & Xie 2016, Alg. 4 as BinAgg's App. C states it).

    Each test perturbs the biased count b(v) = max(c(v) - depth(v) decay, theta - decay)
    with Laplace(``scale``) and splits iff it exceeds ``theta``. Zhang et al. analyse the
    tree as a whole, so :meth:`close` records one draw of kind ``privtree`` with the
    Laplace scale, the decay, the fan-out and every tested node's biased count (one record
    moves each by at most 1, add/remove); the audit prices it by their theorem."""

    def __init__(self, scale: float, decay: float, theta: float, fanout: int, *,
                 relation: str) -> None:
        self.scale, self.decay, self.theta = check_positive(scale, "scale"), decay, theta
        self.fanout, self.relation = int(fanout), relation
        self.biased: list[float] = []

    def biased_count(self, count: int, depth: int) -> float:
        """b(v): the value the test perturbs."""
        return max(count - depth * self.decay, self.theta - self.decay)

    def split(self, count: int, depth: int, rng: np.random.Generator) -> bool:
        """One node's test: b(v) + Laplace(scale) > theta."""
        b = self.biased_count(count, depth)
        self.biased.append(b)
        return b + rng.laplace(0.0, self.scale) > self.theta

    def close(self, label: str) -> None:
        """Record the tree's tests as one draw (after the last :meth:`split`)."""
        draws.record("privtree", label, scale=self.scale, sensitivity=1.0,
                     relation=self.relation, size=len(self.biased), norm="linf",
                     value=self.biased, decay=self.decay, fanout=self.fanout)


def theorem_noise(shape: int | tuple[int, ...], sd: float, rng: np.random.Generator, *,
                  epsilon: float, delta: float, sensitivity: float, relation: str,
                  label: str) -> NDArray:
    """N(0, sd^2) noise whose (epsilon, delta) a paper's theorem states for the whole
    release it enters (not an additive release of a statistic): recorded as an
    ``approx_dp`` step at that (epsilon, delta), with the drawn sd."""
    draws.record("approx_dp", label, scale=epsilon, delta=delta, sensitivity=sensitivity,
                 relation=relation, size=int(np.prod(shape)), noise_sd=sd)
    return rng.normal(0.0, sd, size=shape)


def reads_nothing(label: str, *, relation: str) -> None:
    """Record a release that reads no private row (0-DP: a data-independent baseline, a
    zero model where the budget is infeasible), so the audit prices it as epsilon 0."""
    draws.record("pure", label, scale=0.0, sensitivity=0.0, relation=relation)


def dp_optimizer(optimizer: Any, *, relation: str, label: str, **kwargs: Any) -> Any:
    """opacus' ``DPOptimizer`` around ``optimizer`` whose Gaussian noise on each step's
    clipped-gradient sum is drawn by :func:`torch_gaussian` (as opacus draws it, so results
    are bit-identical): sd noise_multiplier x max_grad_norm, L2 sensitivity max_grad_norm
    (one row's clipped gradient: add/remove), ``on_batch``."""
    from opacus.optimizers import DPOptimizer
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    if kwargs.get("secure_mode"):
        raise ValueError("secure_mode=True draws noise another way; valid: secure_mode=False")

    class _Recorded(DPOptimizer):
        def add_noise(self) -> None:
            for p in self.params:
                _check_processed_flag(p.summed_grad)
                drawn = torch_gaussian(p.summed_grad.shape,
                                       self.noise_multiplier * self.max_grad_norm,
                                       self.generator, sensitivity=self.max_grad_norm,
                                       relation=relation, label=label, on_batch=True,
                                       dtype=p.summed_grad.dtype)
                p.grad = (p.summed_grad + drawn).view_as(p)
                _mark_as_processed(p.summed_grad)

    return _Recorded(optimizer, **kwargs)


def jl_projection(rows: int, cols: int, rng: np.random.Generator, *, threshold_sq: float,
                  row_norm_sq: float, relation: str, label: str) -> NDArray:
    """R, ``rows`` x ``cols`` iid N(0, 1): the random projection of a matrix A' whose
    smallest squared singular value is at least ``threshold_sq`` (w^2) and whose rows have
    squared norm at most ``row_norm_sq`` (B^2); Blocki et al. (2012, Thm. 3.1) price R A'
    from w^2, B^2 and the number of rows. Recorded as a ``jl_projection`` draw."""
    draws.record("jl_projection", label, scale=threshold_sq, sensitivity=row_norm_sq,
                 relation=relation, size=int(rows), noise_sd=1.0)
    return rng.standard_normal((rows, cols))
