"""Each noise primitive draws what it records (the audit trusts the record of a primitive,
so the primitive itself is checked against its draws).

For every primitive of :mod:`dpbench.privacy.noise`: many draws at a stated seed, their
empirical spread against the scale the trace recorded. Tolerances: a sample sd within 3% of
the recorded sd at 40,000 draws (its relative s.e. is 0.35% for a Gaussian, 0.6% for a
Laplace: about 5 s.e.); selection frequencies within 5 binomial s.e. of exp(eps q / (2
Delta)) normalised; sampler sizes by their exact mean and variance within 5 s.e.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.privacy import draws, noise

N = 40_000
REL = "add_remove"


def _recorded(fn, *args, **kw):
    with draws.recording() as trace:
        out = fn(*args, **kw)
    return out, trace


@pytest.mark.parametrize("form", ["normal", "standard"])
def test_gaussian_draws_at_its_recorded_sd(form: str) -> None:
    out, trace = _recorded(noise.gaussian, np.zeros(N), 2.5, np.random.default_rng(1),
                           sensitivity=1.0, relation=REL, label="g", form=form)
    assert trace[0].scale == 2.5 and trace[0].size == N
    assert np.std(out) == pytest.approx(2.5, rel=0.03)


def test_heteroscedastic_gaussian_records_the_standardised_statistic() -> None:
    sd = np.array([1.0, 4.0])
    out, trace = _recorded(noise.gaussian, np.zeros((N, 2)), sd[None, :],
                           np.random.default_rng(2), sensitivity=1.0, relation=REL,
                           label="g", form="standard")
    assert trace[0].scale == 1.0
    assert np.std(out / sd, axis=0) == pytest.approx([1.0, 1.0], rel=0.03)


def test_laplace_and_noisy_argmax_draw_at_their_recorded_scale() -> None:
    out, trace = _recorded(noise.laplace, np.zeros(N), 0.5, np.random.default_rng(3),
                           sensitivity=1.0, relation=REL, label="l")
    assert trace[0].scale == 0.5
    assert np.std(out) == pytest.approx(0.5 * math.sqrt(2), rel=0.03)
    # argmax of (0, gap) + Laplace(b): P(first wins) = P(L1 - L2 > gap) = (2 + gap/b) e^{-gap/b} / 4
    b, gap = 1.0, 1.0
    votes = np.tile([0.0, gap], (N, 1))
    picks, trace = _recorded(noise.noisy_argmax, votes, b, np.random.default_rng(4),
                             sensitivity=2.0, relation=REL, label="q")
    assert len(trace) == N and trace[0].scale == b
    p = (2 + gap / b) * math.exp(-gap / b) / 4
    assert abs(np.mean(picks == 0) - p) < 5 * math.sqrt(p * (1 - p) / N)


def test_exponential_mechanism_selects_with_its_recorded_epsilon() -> None:
    scores, eps, sens = np.array([0.0, 1.0, 3.0]), 2.0, 1.5
    rng = np.random.default_rng(5)
    with draws.recording() as trace:
        picks = np.array([noise.exponential(scores, eps, sens, rng, relation=REL, label="e")
                          for _ in range(N // 4)])
    want = np.exp(eps * scores / (2 * sens))
    want /= want.sum()
    got = np.bincount(picks, minlength=3) / picks.size
    assert trace[0].scale == eps
    assert np.all(np.abs(got - want) < 5 * np.sqrt(want * (1 - want) / picks.size)), got
    samples, trace = _recorded(noise.exponential_samples, scores, eps / (2 * sens), sens, N,
                               np.random.default_rng(6), relation=REL, label="s")
    assert trace[0].scale == pytest.approx(eps) and trace[0].count == N
    got = np.bincount(samples, minlength=3) / N
    assert np.all(np.abs(got - want) < 5 * np.sqrt(want * (1 - want) / N)), got


def test_symmetric_and_spread_gaussians_draw_at_their_recorded_sd() -> None:
    d = 200
    out, trace = _recorded(noise.gaussian_symmetric, np.zeros((d, d)), 3.0,
                           np.random.default_rng(7), sensitivity=1.0, relation=REL, label="x")
    assert trace[0].scale == 3.0 and np.array_equal(out, out.T)
    assert np.std(out[np.triu_indices(d)]) == pytest.approx(3.0, rel=0.03)
    # N / 4 bins of 4 records each: every bin's records sum to its value + N(0, sd^2)
    counts = np.full(N // 4, 4.0)
    rows, trace = _recorded(noise.gaussian_spread, np.zeros(N // 4), 2.0, counts,
                            np.random.default_rng(8), sensitivity=1.0, relation=REL,
                            label="s")
    assert trace[0].scale == 2.0
    assert np.std(rows.reshape(-1, 4).sum(axis=1)) == pytest.approx(2.0, rel=0.05)


def test_torch_gaussian_draws_at_its_recorded_sd() -> None:
    import torch

    gen = torch.Generator().manual_seed(9)
    out, trace = _recorded(noise.torch_gaussian, (N,), 1.7, gen, sensitivity=1.0,
                           relation=REL, label="t")
    assert trace[0].scale == 1.7
    assert float(out.std()) == pytest.approx(1.7, rel=0.03)


def test_row_samplers_record_the_rows_they_draw() -> None:
    n, q, steps = 500, 0.1, 2000
    rng = np.random.default_rng(10)
    with draws.recording() as trace:
        sizes = [len(noise.poisson_rows(n, q, rng, relation=REL, label="p"))
                 for _ in range(steps)]
    assert [d.size for d in trace] == sizes and all(d.distinct for d in trace)
    var = n * q * (1 - q)
    assert abs(np.mean(sizes) - n * q) < 5 * math.sqrt(var / steps)
    assert np.var(sizes) == pytest.approx(var, rel=5 * math.sqrt(2 / steps))
    rows, trace = _recorded(noise.fixed_rows, n, 50, np.random.default_rng(11),
                            relation="replace_one", label="f")
    assert trace[0].size == 50 == np.unique(rows).size and trace[0].distinct
