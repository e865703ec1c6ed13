"""A trace of every noise draw a trial makes, written by the call that draws it.

The noise primitives of :mod:`dpbench.privacy.noise` call :func:`record` in the same call
that draws, with what a privacy analysis needs: the distribution, the scale drawn at, the
released statistic's sensitivity (and the norm it is measured in), the neighbouring
relation that sensitivity is for, how many draws of this kind were made, and for a row
sampler the rows it returned. Methods never call :func:`record` (a contract test keeps it
so). Outside :func:`recording` a call costs one context-variable lookup and keeps nothing.

The privacy audit (``tests/privacy``) runs every private method yaml under
:func:`recording` and recomputes the trial's cost from these draws alone with accountants
that share no code with dpbench's ledger; it also re-runs a fit on neighbouring data and
checks that each draw's exact ``value`` moves by at most its declared ``sensitivity``.
The trace is never stored in a trial record: ``value`` holds private statistics.

Mechanisms (``mechanism``) and what ``scale`` / ``sensitivity`` mean for each:

- ``gaussian``: N(0, scale^2) on each of ``size`` coordinates; L2 sensitivity;
- ``laplace``: Laplace(0, scale) on each of ``size`` coordinates; L1 sensitivity;
- ``exponential``: one selection among ``size`` candidates with probability ~
  exp(epsilon q / (2 Delta)); ``scale`` = epsilon, ``sensitivity`` = Delta of the scores
  (``monotonic`` drops the 2);
- ``report_noisy_max``: argmax of scores + Laplace(scale) (PATE); ``sensitivity`` is the
  L1 change of the score vector;
- ``subsampled_gaussian``: ``count`` steps of a Gaussian of sd ``scale`` on a sum over a
  batch, rows drawn by ``sampling`` (poisson / without / with) at rate ``rate`` = B / n;
  ``sensitivity`` is the L2 change of the batch sum (a row's clipped contribution under
  add/remove, twice it under replace-one);
- ``sample``: the rows of one step of a sampled mechanism (``sampling`` poisson / without,
  ``rate``, ``population`` n, ``size`` the rows drawn, ``distinct``); the Gaussian draws
  ``on_batch`` that follow it are the noise on that batch's sum (DP-SGD): the audit prices
  the pair from the rows actually drawn;
- ``privtree``: PrivTree's Laplace(``scale``) split tests with ``decay`` and ``fanout``,
  the tree as a whole (Zhang, Xiao & Xie 2016); ``value`` holds the biased counts;
- ``jl_projection``: R A' with R ``size`` x rows iid N(0, 1), released when sigma_min(A')^2
  >= ``scale`` (w^2) and every row's squared norm <= ``sensitivity`` (B^2): priced by Blocki
  et al. (2012, Thm. 3.1) at the trial's delta / 2, plus delta / 2 for the threshold test's
  failure (Sheffet 2017, Alg. 1);
- ``pure``: an epsilon-DP step the method analyses itself (``scale`` = epsilon), for a
  mechanism with no noise of the kinds above (e.g. a sparse-vector test's threshold);
- ``approx_dp``: an (epsilon, delta)-DP step priced by its paper's theorem (``scale`` =
  epsilon, ``delta``), for noise that is not an additive release (objective perturbation):
  the audit composes it as stated and cannot re-derive it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MECHANISMS = ("gaussian", "laplace", "exponential", "report_noisy_max",
              "subsampled_gaussian", "sample", "privtree", "jl_projection", "pure",
              "approx_dp")
SAMPLINGS = ("poisson", "without", "with")


@dataclass(frozen=True)
class Draw:
    """One randomised release (or ``count`` identical ones) as a privacy analysis sees it."""

    mechanism: str
    label: str
    scale: float
    sensitivity: float
    relation: str
    size: int = 1
    count: int = 1
    norm: str = "l2"  # l1 | l2 | linf (exponential: the scores' largest change)
    monotonic: bool = False
    sampling: str | None = None
    rate: float | None = None
    #: the exact released statistic (audit only; never stored)
    value: Any = field(default=None, compare=False, repr=False)
    #: delta of an ``approx_dp`` step
    delta: float = 0.0
    #: a Gaussian on the sum over the rows of the last ``sample`` draw
    on_batch: bool = False
    #: a ``sample`` draw: the rows it drew from, and whether the rows drawn are distinct
    population: int | None = None
    distinct: bool | None = None
    #: a ``privtree`` draw: the biased count's decay per level, and the fan-out
    decay: float = 0.0
    fanout: int = 0
    #: an ``approx_dp`` step's noise sd, as drawn
    noise_sd: float | None = None


_TRACE: ContextVar[list[Draw] | None] = ContextVar("dpbench_draw_trace", default=None)


@contextmanager
def recording() -> Iterator[list[Draw]]:
    """Collect every :func:`record` call made in this block (this thread / context)."""
    trace: list[Draw] = []
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def active() -> bool:
    """True inside :func:`recording` (lets a method skip building a costly ``value``)."""
    return _TRACE.get() is not None


def record(mechanism: str, label: str, *, scale: float, sensitivity: float, relation: str,
           size: int = 1, count: int = 1, norm: str = "l2", monotonic: bool = False,
           sampling: str | None = None, rate: float | None = None,
           value: Any = None, delta: float = 0.0, on_batch: bool = False,
           population: int | None = None, distinct: bool | None = None,
           decay: float = 0.0, fanout: int = 0, noise_sd: float | None = None) -> None:
    """Note one draw in the active trace (no-op outside :func:`recording`); called by the
    primitives of :mod:`dpbench.privacy.noise` only."""
    trace = _TRACE.get()
    if trace is None:
        return
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism={mechanism!r} unknown; valid: {', '.join(MECHANISMS)}")
    if sampling is not None and sampling not in SAMPLINGS:
        raise ValueError(f"sampling={sampling!r} unknown; valid: {', '.join(SAMPLINGS)}")
    if relation not in ("add_remove", "replace_one"):
        raise ValueError(f"relation={relation!r} unknown; valid: add_remove, replace_one")
    kept = None if value is None else np.array(value, dtype=float, copy=True)
    trace.append(Draw(mechanism, label, float(scale), float(sensitivity), relation,
                      int(size), int(count), norm, bool(monotonic), sampling,
                      None if rate is None else float(rate), kept, float(delta),
                      bool(on_batch), population, distinct, float(decay), int(fanout),
                      noise_sd))
