"""What T steps of a Gaussian on a sampled batch cost, for each batch sampler DP-SGD runs.

The privacy of DP-SGD rests on how its batches are drawn, and the analyses are not
interchangeable: an accountant for Poisson sampling applied to fixed-size batches
under-states the cost about twofold (the excess-risk paper's code draws fixed-size batches).
So a sampler and its accountant come as one setting here (:data:`SAMPLERS`):

- ``poisson``: every row enters a step's batch independently with probability q = B / n;
  add/remove neighbours, a row moves the batch sum by at most C. RDP of the sampled
  Gaussian (Mironov, Talwar & Zhang 2019, via opacus), converted at delta.
- ``without``: B distinct rows, uniformly (the code's ``random.sample``); replace-one
  neighbours, a replaced row moves the batch sum by up to 2C. The subsampled mechanism is
  dominated by the pair ((1 - q) N(0, s^2) + q N(2C, s^2), N(0, s^2)) and its reverse
  (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via characteristic
  function", AISTATS, dominating pairs for sampling without replacement under the
  replace-one relation), i.e. the Poisson pair at sensitivity 2C; its T-fold composition
  is computed with dp-accounting's privacy loss distribution (pessimistic discretisation:
  an upper bound).

Sampling rows with replacement has no analysis here and is refused.
"""

from __future__ import annotations

import functools
import math

#: sampler -> the neighbouring relation its analysis is stated for
SAMPLERS: dict[str, str] = {"poisson": "add_remove", "without": "replace_one"}
#: the privacy-loss grid of the PLD accountant: a pessimistic 1e-3 grid gives an upper
#: bound within ~1e-3 relative of the 1e-4 grid's at the excess-risk settings
PLD_GRID = 1e-3


def check_sampler(sampling: str) -> str:
    """The relation of ``sampling``'s analysis; a one-line ValueError for an unknown one."""
    if sampling not in SAMPLERS:
        raise ValueError(f"sampling={sampling!r} has no privacy analysis here; valid: "
                         f"{', '.join(SAMPLERS)}")
    return SAMPLERS[sampling]


@functools.lru_cache(maxsize=256)
def without_replacement_epsilon(noise_multiplier: float, batch: int, n: int, steps: int,
                                delta: float) -> float:
    """epsilon at ``delta`` of ``steps`` Gaussian steps (noise sd = noise_multiplier x C on
    the sum of B clipped rows) on batches of B distinct rows of n, replace-one neighbours."""
    from dp_accounting.pld import privacy_loss_distribution as pld  # heavy: on first use

    if not (noise_multiplier > 0 and 1 <= batch <= n and steps >= 1 and 0 < delta < 1):
        raise ValueError(f"need noise multiplier > 0, 1 <= B <= n, T >= 1, delta in (0, 1); "
                         f"got {noise_multiplier}, {batch}, {n}, {steps}, {delta}")
    one = pld.from_gaussian_mechanism(noise_multiplier, sensitivity=2.0,
                                      sampling_prob=batch / n,
                                      value_discretization_interval=PLD_GRID)
    eps = float(one.self_compose(steps).get_epsilon_for_delta(delta))
    return eps if math.isfinite(eps) else math.inf
