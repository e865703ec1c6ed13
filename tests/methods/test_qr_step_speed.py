"""The speed changes of GEM's and RAP's optimiser steps (issue 41, item 2) keep the
answers: GEM's one forward pass per step gives today's answers bit for bit (against the
update as it was, kept here as the reference)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from dpbench.methods.query_release.gem import GEM
from dpbench.methods.query_release.relaxed import answers
from dpbench.privacy.accountant import Accountant

sys.path.insert(0, str(Path(__file__).parent))
from test_query_release_methods import tiny_data  # noqa: E402

TINY_GEM = {"embedding_dim": 16, "hidden": [32], "batch_size": 100, "lr": 1e-2}


def _update_before(self, g, rows, past, target, errors, threshold, lr=None) -> int:
    """GEM._update before qr-step-speed (commit d85847b): two forward passes per step,
    one for the loss and one, without gradients, for the errors after the step."""
    p = self.params
    opt = torch.optim.Adam(g.parameters(), lr=p["lr"] if lr is None else lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, p["max_iters"], eta_min=1e-8)
    for step in range(p["max_iters"]):
        keep = torch.nonzero(errors >= threshold).flatten()
        if keep.numel() == 0:
            return step
        keep = keep[errors[keep].argsort()[-p["max_idxs"]:]]
        opt.zero_grad()
        loss = (target[keep] - answers(rows(), past[keep])).abs().mean()
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():
            errors = (target - answers(rows(), past)).abs()
    return p["max_iters"]


@pytest.mark.parametrize("kw", [{"max_iters": 100}, {"max_iters": 4, "threshold": 0.1}])
def test_gem_one_forward_per_step_gives_the_same_answers_bit_for_bit(monkeypatch, kw
                                                                     ) -> None:
    # the same steps (rounds stopping early on the threshold, and at the cap) and the same
    # answers, last iterate and EMA, to the bit
    def fit(weights: str) -> tuple[np.ndarray, list[int]]:
        m = GEM(T=6, output_weights=weights, **TINY_GEM, **kw).fit(
            tiny_data(), Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(3))
        return m.answers_, m.steps_

    now = [fit(w) for w in ("last", "ema")]
    monkeypatch.setattr(GEM, "_update", _update_before)
    before = [fit(w) for w in ("last", "ema")]
    for (a, s), (b, t) in zip(now, before, strict=True):
        assert s == t
        np.testing.assert_array_equal(a, b)
    assert any(s < kw["max_iters"] for s in now[0][1]) or kw["max_iters"] == 4
