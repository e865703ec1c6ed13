"""Noise-aware posterior: consistency with the non-private posterior, samplers, task, data."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

from dpbench.data.bayesglm import adult, pima_diabetes, synthetic_glm
from dpbench.methods.bayes.baseline import nonprivate_posterior
from dpbench.methods.bayes.method import NoiseAwareGLM
from dpbench.privacy import Accountant
from dpbench.tasks import TASKS
from dpbench.tasks.posterior import ks_distances

SHORT = {"num_warmup": 500, "num_samples": 800, "num_chains": 4}


@pytest.fixture(scope="module")
def large() -> object:
    """20,000 synthetic logistic records (Fig. 5's theta), seed 0."""
    return synthetic_glm(rng=np.random.default_rng(0), n=20_000)


def _fit(split: object, eps: float, **params: object) -> NoiseAwareGLM:
    m = NoiseAwareGLM("logistic", norm_bound_sq="truth", **{**SHORT, **params})
    return m.fit(split.train, Accountant(eps, 1e-5, currency="gdp"), np.random.default_rng(1))


@pytest.mark.slow
def test_small_noise_large_n_posterior_mean_approaches_the_nonprivate_one(large) -> None:
    # eps = 10^4 gives sigma = 0.015 on sums of 20,000 records. The two posterior means must
    # agree within 0.03 (posterior sds are ~0.045; what remains is the Taylor / truncated-
    # Gaussian approximation bias plus MCMC error); both near the true theta. (The literal
    # paper sign of E[y|x] mirrors theta: test_bayesglm_moments shows the flipped moments.)
    m = _fit(large, 1e4)
    assert m.release_.sigma < 0.02
    # the reference with fewer draws (2 chains, 300 + 200 steps each: its mean's Monte Carlo
    # error ~0.045 / sqrt(200) = 0.003, well inside 0.03); NUTS on 20,000 records' exact
    # likelihood is the slow part of this test (~47 s at the fit's 4 x (500 + 200) steps)
    spec = m.baseline_spec()
    spec = replace(spec, settings=replace(spec.settings, num_warmup=300, num_samples=400,
                                          num_chains=2))
    base = nonprivate_posterior(*m.bounded(large.train), spec, use_cache=False)
    ref = base.flat.mean(axis=0)
    assert np.abs(m.coef_ - ref).max() < 0.03, (m.coef_, ref)
    assert np.abs(m.coef_ - large.train.truth["theta"]).max() < 0.15
    assert m.info()["rhat_max"] < 1.1


@pytest.mark.slow
def test_fit_is_deterministic_and_charges_the_whole_budget() -> None:
    small = synthetic_glm(rng=np.random.default_rng(5), n=1000)
    ledger = Accountant(0.5, 1e-5, currency="gdp")
    a = NoiseAwareGLM("logistic", norm_bound_sq="truth", **SHORT).fit(
        small.train, ledger, np.random.default_rng(1))
    b = _fit(small, 0.5)
    # one Gaussian release calibrated to the whole (0.5, 1e-5) budget
    assert ledger.spent_epsilon_delta()[0] == pytest.approx(0.5, rel=1e-6)
    assert np.array_equal(a.samples_, b.samples_)
    assert a.samples_.shape == (800, 3)
    info = a.info()
    assert info["prior_uses_private_data"] is False
    assert info["norm_bound_sq"] == pytest.approx(3 * np.sum(np.square([-0.9, -0.5, 0.3])))
    assert len(json.loads(info["theta_quantiles"])) == 3


@pytest.mark.slow
def test_poisson_metropolis_hastings_runs_and_reports_diagnostics() -> None:
    split = synthetic_glm(rng=np.random.default_rng(6), glm="poisson", n=500,
                          theta=[0.3, -0.6, 0.8])
    m = NoiseAwareGLM("poisson", num_warmup=300, num_samples=600, num_chains=2)
    m.fit(split.train, Accountant(1.0, 1e-5, currency="gdp"), np.random.default_rng(2))
    info = m.info()
    assert m.samples_.shape == (600, 3) and np.all(np.isfinite(m.samples_))
    assert info["sensitivity"] == pytest.approx(np.sqrt(117))
    assert np.isfinite(info["rhat_max"])
    assert m.params["sampler"] == "mh"                # the paper's sampler for Poisson
    assert 0.05 < info["accept_rate"] < 1.0          # sd 0.01 steps are mostly accepted
    # 600 steps of sd 0.01 cannot travel far: each chain's range stays small
    assert np.all(np.ptp(m.draws_.theta, axis=1) < 1.0)


def test_ks_distance_matches_its_definition() -> None:
    a = np.arange(10.0)[:, None]
    assert ks_distances(a, a)[0] == 0.0
    assert ks_distances(a, a + 100)[0] == 1.0
    assert ks_distances(a, a + 5)[0] == pytest.approx(0.5)
    assert "posterior" in TASKS


def test_bad_parameters_are_one_line_value_errors() -> None:
    for kwargs, msg in [({"glm": "probit"}, "glm='probit' is invalid; valid: logistic, poisson"),
                        ({"norm_rule": "mid"}, "norm_rule='mid' is invalid; valid: min, max"),
                        ({"sampler": "gibbs"}, "sampler='gibbs' is invalid; valid: nuts, mh"),
                        ({"norm_bound_sq": "big"}, "norm_bound_sq='big' is invalid"),
                        ({"chain_method": "x"}, "chain_method='x' is invalid")]:
        with pytest.raises(ValueError, match=msg):
            NoiseAwareGLM(**kwargs)


def test_loaders_respect_the_public_bounds() -> None:
    rng = np.random.default_rng(0)
    for split, n, d in [(adult(rng=rng), 5000, 5), (pima_diabetes(rng=rng), 752, 5),
                        (synthetic_glm(rng=rng), 1000, 3),
                        (synthetic_glm(rng=rng, glm="poisson", n=500, theta=[0.3, -0.6, 0.8]),
                         500, 3)]:
        tr = split.train
        assert tr.X.shape == (n, d)
        assert np.linalg.norm(tr.X, axis=1).max() <= 1.0 + 1e-12
        assert np.all(tr.y <= tr.y_bound)
    assert set(np.unique(adult(rng=rng).train.y)) == {-1.0, 1.0}


def _toy_model(x: object, *, k: int) -> None:
    """Sites of every support the Bayesian GLM's models use (real, positive, a correlation
    Cholesky factor) and a deterministic site, observed through x."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([k]).to_event(1))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0).expand([k]).to_event(1))
    chol = numpyro.sample("L", dist.LKJCholesky(k, 2.0))
    theta = numpyro.deterministic("theta", tau * (chol @ a))
    numpyro.sample("x", dist.Normal(theta, 1.0).to_event(1), obs=x)


def test_the_samplers_layout_is_numpyros_without_running_the_model() -> None:
    # sampling._layout traces NumPyro's initialize_model abstractly instead of running it
    # (the run compiles one XLA program per operation: ~20 s for the noise-aware model);
    # it must give what the run gives: every site's shape, the fixed sites' starting values
    # to the bit, and the same potential and post-processing (checked at those values)
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import init_to_value, initialize_model

    from dpbench.methods.bayes.sampling import _layout

    fixed = {"tau": jnp.asarray([0.5, 1.5, 2.0]), "L": jnp.eye(3)}
    x = (jnp.asarray([0.3, -0.2, 1.1]),)
    fn = partial(_toy_model, k=3)
    template, potential_gen, post_gen = _layout(fn, fixed, x)
    info = initialize_model(jax.random.PRNGKey(0), fn, model_args=x, dynamic_args=True,
                            init_strategy=init_to_value(values=fixed))
    ref = info.param_info.z
    assert {k: v.shape for k, v in template.items()} == {k: v.shape for k, v in ref.items()}
    for k in fixed:
        assert np.array_equal(template[k], ref[k]), k
    assert float(potential_gen(*x)(ref)) == float(info.potential_fn(*x)(ref))
    mine, theirs = post_gen(*x)(ref), info.postprocess_fn(*x)(ref)
    assert set(mine) == set(theirs) == {"a", "tau", "L", "theta"}
    for k in mine:
        assert np.array_equal(mine[k], theirs[k]), k
