"""GEM, RAP and RAP-softmax (Liu, Vietri & Wu 2021): the relaxed-row answers against the
exact engine, the ledger summing to rho and never above it, the fit to the measured queries
with noise off (tolerances stated), past picks excluded, the same seed giving the same
answers in two processes, one-line refusals."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from dpbench.data.queries import QuerySet
from dpbench.methods.marginals.noise import noise_disabled
from dpbench.methods.query_release.gem import GEM
from dpbench.methods.query_release.rap import RAP
from dpbench.methods.query_release.relaxed import (
    AnswerPlan,
    all_answers,
    block_softmax,
    column_index,
)
from dpbench.privacy.accountant import Accountant

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_query_release_methods import DOMAIN, max_error, tiny_data  # noqa: E402

TINY_GEM = {"embedding_dim": 16, "hidden": [32], "batch_size": 100, "lr": 1e-2}


def small(cls: type, **kw):
    return cls(**({**TINY_GEM, "T": 6} if cls is GEM else {"T": 3, "K": 2, "n_rows": 100}),
               **kw)


# ------------------------------------------------------------------ answers of relaxed rows

@pytest.mark.parametrize("cliques", [
    [("a", "b", "c"), ("b", "c", "d"), ("a", "c", "d")],
    [("a",), ("c", "b"), ("d", "a", "b"), ("b", "c", "d")],         # mixed k, clique order
    [("a",), ("c",)],                                                # 1-way: no prefixes
    [("a", "b", "c", "d")],                                          # 4-way: 3-column prefixes
])
def test_relaxed_answers_equal_the_exact_engine_on_one_hot_rows(cliques) -> None:
    qs = QuerySet.build(DOMAIN, cliques)
    r = np.random.default_rng(3)
    codes = np.stack([r.integers(0, m, 50) for m in DOMAIN.values()], axis=1)
    off = np.concatenate([[0], np.cumsum(list(DOMAIN.values()))])
    X = np.zeros((50, off[-1]))
    for j in range(len(DOMAIN)):
        X[np.arange(50), off[j] + codes[:, j]] = 1
    Xt = torch.as_tensor(X)
    exact = qs.rows_answers(codes)
    np.testing.assert_allclose(all_answers(Xt, torch.as_tensor(column_index(qs))), exact,
                               rtol=0, atol=1e-15)
    plan = AnswerPlan(qs, column_index(qs), torch.device("cpu"), chunk=3)
    np.testing.assert_allclose(plan(Xt), exact, rtol=0, atol=1e-15)
    # the chunk (prefixes per product, a reused buffer) changes no answer
    whole = AnswerPlan(qs, column_index(qs), torch.device("cpu"))
    np.testing.assert_array_equal(whole(Xt), plan(Xt))
    # soft rows: the plan equals the reference gather, and the expected answers of the
    # product distributions (the mean over rows of the per-row product probabilities)
    P = block_softmax(torch.as_tensor(r.normal(size=X.shape)), qs.sizes)
    ref = all_answers(P, torch.as_tensor(column_index(qs)))
    np.testing.assert_allclose(plan(P), ref, rtol=1e-12, atol=1e-15)
    m = qs.marginal_index(cliques[-1])
    blocks = torch.split(P, list(qs.sizes), dim=1)
    axes = qs.axes[m]
    letters = "ijkl"[:len(axes)]
    table = torch.einsum(",".join(f"n{c}" for c in letters) + "->" + letters,
                         *(blocks[a] for a in axes)) / 50
    np.testing.assert_allclose(ref[qs.span(m)], table.numpy().ravel(), rtol=1e-12)


# ------------------------------------------------------------------------------ the ledger

@pytest.mark.parametrize("cls", [GEM, RAP])
def test_ledger_sums_to_rho_and_never_exceeds_it(cls) -> None:
    acc = Accountant(0.5, 1e-6, "zcdp")
    rho = acc.rho_total
    model = small(cls).fit(tiny_data(), acc, np.random.default_rng(0))
    releases = 2 * (6 if cls is GEM else 3 * 2)
    assert len(acc.charges) == releases
    spent = np.cumsum([c.rho for c in acc.charges])
    assert np.all(spent <= rho * (1 + 1e-12))
    assert math.fsum(c.rho for c in acc.charges) == pytest.approx(rho, rel=1e-12)
    assert model.info()["measured"] == releases // 2
    if cls is RAP:   # each of the 2 T K releases costs rho / (2 T K), the code's split
        assert {round(c.rho / (rho / releases), 12) for c in acc.charges} == {1.0}
    else:            # GEM's alpha 0.67: selection / measurement = 0.67^2 / 0.33^2
        assert acc.charges[0].rho / acc.charges[1].rho == pytest.approx(0.67**2 / 0.33**2)


@pytest.mark.parametrize("cls", [GEM, RAP])
def test_past_picks_are_never_selected_again(cls) -> None:
    model = small(cls).fit(tiny_data(), Accountant(5.0, 1e-6, "zcdp"),
                           np.random.default_rng(1))
    assert len(set(model.selected_)) == len(model.selected_)


# --------------------------------------------------------------------- fit with noise off

def test_gem_fits_the_measured_queries_with_noise_off() -> None:
    # 40 rounds of the paper's update (loss over errors >= half the EMA max error) on the
    # last iterate: every measured query within 0.005 (0.0012 measured), the workload
    # within 0.01 (0.0018); 4 attributes, 2,000 rows
    data = tiny_data()
    with noise_disabled():
        model = GEM(T=40, output_weights="last", **TINY_GEM).fit(
            data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(1))
    gaps = np.abs(model.answers_[model.selected_] - np.array(model.measured_))
    assert gaps.max() < 0.005
    assert max_error(model, data) < 0.01
    assert model.info()["noise_disabled"] is True


def test_rap_softmax_fits_the_measured_queries_with_noise_off() -> None:
    # each round's projection runs to a plateau: the 20 measured queries within 1e-3
    # (7e-5 measured), the workload within 0.03 (0.017)
    data = tiny_data()
    with noise_disabled():
        model = RAP(T=5, K=4, n_rows=100).fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                              np.random.default_rng(1))
    gaps = np.abs(model.answers_[model.selected_] - np.array(model.measured_))
    assert gaps.max() < 1e-3
    assert max_error(model, data) < 0.03
    assert all(np.isfinite(model.rows_.ravel()))


def test_rap_clips_its_rows_and_softmax_rows_are_distributions() -> None:
    data = tiny_data()
    raw = RAP(T=2, K=3, softmax=False, lr=0.05, n_rows=50).fit(
        data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(2))
    assert raw.rows_.min() >= -1 and raw.rows_.max() <= 1
    soft = RAP(T=2, K=3, n_rows=50).fit(data, Accountant(1.0, 1e-6, "zcdp"),
                                        np.random.default_rng(2))
    sums = np.add.reduceat(soft.rows_, np.concatenate([[0], np.cumsum(list(DOMAIN.values()))[:-1]]),
                           axis=1)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)
    for m in (raw, soft):
        assert 0 <= m.answers_.min() and m.answers_.max() <= 1


# ------------------------------------------------------------------------- determinism

_CHILD = textwrap.dedent("""
    import hashlib, json, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_query_release_methods import tiny_data
    from dpbench.methods.query_release.gem import GEM
    from dpbench.methods.query_release.rap import RAP
    from dpbench.privacy.accountant import Accountant
    out = {{}}
    for name, m in (("gem", GEM(T=4, embedding_dim=16, hidden=[32], batch_size=64)),
                    ("rap", RAP(T=2, K=3, n_rows=64))):
        m.fit(tiny_data(), Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(7))
        out[name] = hashlib.sha256(m.answers_.tobytes()).hexdigest()
    print(json.dumps(out))
""")


def test_same_seed_same_answers_in_two_processes() -> None:
    code = _CHILD.format(tests=str(__import__("pathlib").Path(__file__).parent))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**__import__("os").environ,
                                            "OMP_NUM_THREADS": str(n)})
            for n in (1, 2)]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first == second


def test_same_seed_same_answers_in_process_and_other_seed_differs() -> None:
    def answers(seed: int) -> np.ndarray:
        return small(GEM).fit(tiny_data(), Accountant(1.0, 1e-6, "zcdp"),
                              np.random.default_rng(seed)).answers_
    np.testing.assert_array_equal(answers(4), answers(4))
    assert not np.array_equal(answers(4), answers(5))


# ------------------------------------------------------------------------------ refusals

@pytest.mark.parametrize(("cls", "kw", "msg"), [
    (GEM, {"T": 0}, "T=0"),
    (GEM, {"T": 5, "alpha": 1.0}, "alpha=1.0"),
    (GEM, {"T": 5, "hidden": "512"}, "hidden="),
    (GEM, {"T": 5, "output_weights": "best"}, "output_weights='best'"),
    (GEM, {"T": 5, "ema_beta": 1.0}, "ema_beta=1.0"),
    (GEM, {"T": 5, "batch_size": 1}, "batch_size=1"),
    (RAP, {"T": 5, "K": 0}, "K=0"),
    (RAP, {"T": 5, "K": 2, "softmax": "yes"}, "softmax='yes'"),
    (RAP, {"T": 5, "K": 2, "lr": -1.0}, "lr=-1.0"),
])
def test_one_line_refusals(cls, kw, msg) -> None:
    with pytest.raises(ValueError, match=msg) as err:
        cls(**kw)
    assert "\n" not in str(err.value)


def test_unknown_device_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="device='tpu'"):
        small(RAP, device="tpu").fit(tiny_data(), Accountant(1.0, 1e-6, "zcdp"),
                                     np.random.default_rng(0))


# ------------------------------------------------------------------- GEM-Pub (public data)

class _Private:
    """Stands for the private rows: reading anything but the row count fails the test."""

    def __init__(self, n: int) -> None:
        self.shape = (n, 4)

    def __getattr__(self, name: str):
        raise AssertionError(f"a private row was read (.{name})")

    def __getitem__(self, key):
        raise AssertionError("a private row was read ([])")

    def __len__(self) -> int:
        raise AssertionError("a private row was read (len)")


def with_public(n_private: int = 3000, n_public: int = 1000):
    import dataclasses
    d = tiny_data(n_private + n_public)
    rows = d.discrete
    return dataclasses.replace(d, X=d.X[:n_private], y=d.y[:n_private],
                               discrete=rows.iloc[:n_private].reset_index(drop=True),
                               public=rows.iloc[n_private:].reset_index(drop=True))


PUB = {**TINY_GEM, "pretrain_epochs": 30, "pretrain_early_stop": 10}


def test_public_pretraining_reads_only_public_rows_and_charges_nothing() -> None:
    import dataclasses

    from dpbench.methods.query_release.gem_pub import GEMPub
    data = with_public()
    blind = dataclasses.replace(data, X=_Private(data.n), y=_Private(data.n),
                                discrete=_Private(data.n))
    acc = Accountant(1.0, 1e-6, "zcdp")
    state = GEMPub(T=3, **PUB).init_state(blind, acc)
    assert acc.charges == [] and acc.remaining() == acc.rho_total
    # the same state as with the private rows present: they play no part
    again = GEMPub(T=3, **PUB).init_state(data, Accountant(1.0, 1e-6, "zcdp"))
    assert state.keys() == again.keys()
    for k in state:
        np.testing.assert_array_equal(state[k], again[k])
    with pytest.raises(AssertionError, match="private row"):   # the guard itself works
        GEM(T=3, **TINY_GEM).fit(blind, Accountant(1.0, 1e-6, "zcdp"),
                                 np.random.default_rng(0))


def test_gem_pub_beats_gem_from_scratch_and_spends_exactly_rho() -> None:
    # a few private rounds at a small budget: the pre-trained start is far ahead
    from dpbench.methods.query_release.gem_pub import GEMPub
    data = with_public()
    errs = {}
    for name, model in (("gem", GEM(T=5, **TINY_GEM)), ("pub", GEMPub(T=5, **PUB))):
        acc = Accountant(0.2, 1e-6, "zcdp")
        model.fit(data, acc, np.random.default_rng(0))
        assert len(acc.charges) == 10
        assert math.fsum(c.rho for c in acc.charges) == pytest.approx(acc.rho_total,
                                                                       rel=1e-12)
        errs[name] = max_error(model, data)
    assert errs["pub"] < errs["gem"]
    assert model.info()["pretrain_best_max_error"] < 0.01


def test_reduced_pretraining_uses_only_marginals_inside_the_public_attributes() -> None:
    from dpbench.methods.query_release.gem_pub import GEMPub, public_queries
    model = GEMPub(T=2, public_attributes=["a", "b", "c"], **PUB)
    qs = public_queries(DOMAIN, 100, model.params)
    assert qs.cliques == (("a", "b", "c"),)
    model.fit(with_public(), Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(0))
    assert model.info()["pretrain_queries"] == 2 * 3 * 4
    with pytest.raises(ValueError, match="public_attributes"):
        GEMPub(T=2, public_attributes="a")
    with pytest.raises(ValueError, match=r"\['z'\] are not in the data"):
        public_queries(DOMAIN, 100, {**model.params, "public_attributes": ["a", "z"]})


def test_pretraining_is_one_cached_artifact_for_every_trial_and_eps(tmp_path) -> None:
    from dpbench.artifacts import artifact_context
    from dpbench.methods.query_release.gem_pub import GEMPub
    data = with_public()
    infos = []
    for cell, eps, seed in (("trial0", 0.5, 0), ("trial1", 1.0, 1)):
        with artifact_context(cell, tmp_path):
            m = GEMPub(T=2, **PUB).fit(data, Accountant(eps, 1e-6, "zcdp"),
                                       np.random.default_rng(seed))
        infos.append(m.info())
    assert [i["pretrain_cached"] for i in infos] == [False, True]
    assert infos[0]["pretrain_artifact"] == infos[1]["pretrain_artifact"]
    assert len(list(tmp_path.rglob("*.npz"))) == 1
    with pytest.raises(ValueError, match="needs public rows"):
        GEMPub(T=2, **PUB).fit(tiny_data(), Accountant(1.0, 1e-6, "zcdp"),
                               np.random.default_rng(0))


def _pretrained_answers(state: dict, qs: QuerySet, embedding_dim: int,
                        hidden: list[int]) -> np.ndarray:
    """Every answer over ``qs`` of the generator ``state`` holds, on the latents it holds,
    built here from the network class (not through GEM's code), on one torch thread as a
    fit runs."""
    from dpbench.methods.query_release._gem_network import Generator
    from dpbench.methods.query_release.gem import LATENTS
    from dpbench.methods.query_release.relaxed import torch_session

    with torch_session(np.random.default_rng(0)) as (_, dev):
        g = Generator(embedding_dim, hidden, int(sum(qs.sizes)))
        g.load_state_dict({k: torch.as_tensor(v) for k, v in state.items() if k != LATENTS})
        rows = block_softmax(g(torch.as_tensor(state[LATENTS])), qs.sizes)
        return AnswerPlan(qs, column_index(qs), dev)(rows)


def test_gem_pub_fine_tunes_from_the_pretrained_latents_and_fresh_ones_differ() -> None:
    # issue 62: the paper's method (the authors' gem.fakez = gem_pub.fakez) starts the
    # private fine-tuning from the pre-trained generator as it was trained, latents included
    from dpbench.methods.query_release.gem_pub import GEMPub, pretrain, public_queries
    data = with_public()
    model = GEMPub(T=2, **PUB)
    state, info = pretrain(data.public, DOMAIN, data.n, model.params)
    # the stored latents are the pre-training's: on them the stored weights answer the
    # public workload with exactly the best error the pre-training recorded
    pub = public_queries(DOMAIN, data.n, model.params)
    on_public = _pretrained_answers(state, pub, 16, [32])
    true_public = pub.answers(data.public[list(pub.attributes)])
    assert float(np.max(np.abs(true_public - on_public))) == info["pretrain_best_max_error"]
    # the fine-tuning's first answers, before any private step, are the pre-trained
    # generator's on those latents, bit for bit (trial seed 1: the pre-training's seed is 0,
    # and a trial generator seeded 0 would draw the very same fresh latents)
    model.fit(data, Accountant(0.2, 1e-6, "zcdp"), np.random.default_rng(1))
    want = _pretrained_answers(state, model.queries(data), 16, [32])
    np.testing.assert_array_equal(model.initial_answers_, want)
    # latents: fresh (the option) starts from the same weights on new latents
    fresh = GEMPub(T=2, latents="fresh", **PUB)
    fresh.fit(data, Accountant(0.2, 1e-6, "zcdp"), np.random.default_rng(1))
    assert fresh.initial_answers_.shape == want.shape
    assert float(np.max(np.abs(fresh.initial_answers_ - want))) > 1e-3
    with pytest.raises(ValueError, match="latents='old' is unknown; valid: pretrained, "
                                         "fresh") as err:
        GEMPub(T=2, latents="old")
    assert "\n" not in str(err.value)


def test_rap_bun_steinke_option_spends_the_authors_smaller_rho() -> None:
    from dpbench.methods.query_release.rap import bun_steinke_rho
    n = 43_944
    delta = 1 / n**2
    rho = bun_steinke_rho(0.1, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(0.1, rel=1e-12)
    assert rho == pytest.approx(1.17e-4, rel=5e-3)                   # the scope's check
    assert Accountant(0.1, delta, "zcdp").rho_total == pytest.approx(1.70e-4, rel=5e-3)
    acc = Accountant(0.5, 1e-6, "zcdp")
    small(RAP, rho_conversion="bun_steinke").fit(tiny_data(), acc, np.random.default_rng(0))
    spent = math.fsum(c.rho for c in acc.charges)
    assert spent == pytest.approx(bun_steinke_rho(0.5, 1e-6), rel=1e-12)
    assert spent < acc.rho_total
    with pytest.raises(ValueError, match="rho_conversion='exact'"):
        small(RAP, rho_conversion="exact")


def test_gem_skips_the_blocks_no_query_reads_with_the_same_answers() -> None:
    """A workload that leaves attributes unread (two 2-way marginals of four attributes):
    GEM computes only the read attributes' logits (``gem._live_rows``). Against the whole
    output layer (forced by reporting every attribute as read), seed 3: the same selected
    queries and steps, answers within 1e-6 (6e-8 measured: a narrower matrix product
    rounds differently), and the records' rows, every block, within 1e-6."""
    from dpbench.methods.query_release import gem as gem_module

    data = tiny_data()

    def fit() -> GEM:
        return GEM(T=6, workload="all_2way", number=2, seed=0, **TINY_GEM).fit(
            data, Accountant(1.0, 1e-6, "zcdp"), np.random.default_rng(3))

    qs = GEM(T=6, workload="all_2way", number=2, seed=0, **TINY_GEM).queries(data)
    assert 0 < len(gem_module.read_attributes(qs)) < len(qs.sizes)
    live = fit()
    real = gem_module.read_attributes
    try:
        gem_module.read_attributes = lambda qs: list(range(len(qs.sizes)))
        whole = fit()
    finally:
        gem_module.read_attributes = real
    assert live.selected_ == whole.selected_ and live.steps_ == whole.steps_
    assert np.abs(live.answers_ - whole.answers_).max() < 1e-6
    assert live.rows_.shape == whole.rows_.shape == (TINY_GEM["batch_size"], sum(qs.sizes))
    assert np.abs(live.rows_ - whole.rows_).max() < 1e-6
