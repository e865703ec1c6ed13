"""BinAgg estimator: WLS without noise, Corollary 3.1, privacy charges, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from dpbench.data.base import TabularData
from dpbench.methods.binagg import BinAgg, BinAggSynth, estimator, split_budget
from dpbench.methods.binagg.aggregate import bin_sums, prepare, release_sums
from dpbench.methods.binagg.privtree import privtree
from dpbench.methods.binagg.synthetic import aggregate, synthesize
from dpbench.privacy import Accountant, gdp_eps, pure_to_gdp


def _data(n: int = 1000, d: int = 3, seed: int = 0) -> TabularData:
    rng = np.random.default_rng(seed)
    beta = rng.uniform(1, 2, d)
    X = rng.uniform(0, 1, (n, d))
    y = np.clip(X @ beta + rng.normal(size=n), 0, 2 * d)
    return TabularData(X, y, math.sqrt(d), 2.0 * d, tuple(f"x{j}" for j in range(d)), "y",
                       truth={"beta": beta}, x_range=np.tile([0.0, 1.0], (d, 1)),
                       y_range=(0.0, 2.0 * d))


def _ledger(mu: float, delta: float = 1e-6) -> Accountant:
    return Accountant(gdp_eps(mu, delta), delta, currency="gdp")


def _wls_on_bin_means(S: np.ndarray, t: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Remark 3.1: WLS of bin means with weights c (independent implementation: sklearn)."""
    lr = LinearRegression(fit_intercept=False).fit(S / c[:, None], t / c, sample_weight=c)
    return lr.coef_


def test_noise_free_estimator_is_weighted_least_squares() -> None:
    data = _data()
    part, leaf_of = privtree(data.X, np.zeros(3), np.ones(3), 1.0, np.random.default_rng(1))
    c, S, t = bin_sums(data.X, data.y, leaf_of, part.n_bins)
    keep = c > 0
    S, t, c = S[keep], t[keep], c[keep]
    zero = np.zeros_like(S)
    for corr in estimator.CORRECTIONS:      # with D = 0 every correction is the same WLS
        est = estimator.bias_corrected(S, t, c, zero, correction=corr)
        assert np.allclose(est.coef, _wls_on_bin_means(S, t, c), rtol=1e-10, atol=1e-12)
    assert np.allclose(estimator.naive(S, t, c).coef, _wls_on_bin_means(S, t, c), rtol=1e-10)


def test_full_pipeline_with_negligible_noise_reproduces_wls_of_its_bins() -> None:
    # mu = 1e5: every Gaussian sd is ~1e-4 of a unit (and PrivTree noise ~1e-4), so the
    # released estimate must equal the WLS of the exact kept-bin sums to ~1e-6.
    data = _data(seed=3)
    model = BinAgg(max_depth=6).fit(data, _ledger(1e5), np.random.default_rng(2))
    s = model.sums_
    exact = _wls_on_bin_means(s.sum_x, s.sum_y, s.noisy_count)
    assert np.allclose(model.coef_, exact, rtol=1e-5)
    assert model.n_bins_ >= 20


def test_corollary_3_1_synthetic_regression_equals_alg2_for_the_same_draws() -> None:
    data = _data(n=800, d=4, seed=5)
    d = data.d
    rng = np.random.default_rng(9)
    part, leaf_of = privtree(data.X, np.zeros(d), np.ones(d), 0.5, rng)
    sums = prepare(data.X, data.y, leaf_of, part.sensitivity(), 0.5, rng)
    mu_s, mu_t, by = 0.6, 0.5, 2.0 * d
    counts = sums.noisy_count.astype(int)
    z_x = rng.standard_normal((counts.sum(), d))
    z_y = rng.standard_normal(counts.sum())
    for scaling in ("paper", "sqrt_d"):
        syn = synthesize(sums, mu_s, mu_t, by, z_x, z_y, noise_scaling=scaling)
        S1, t1, c1 = aggregate(syn, counts.size)
        assert np.array_equal(c1, sums.noisy_count)
        # Alg. 2 with the per-bin draw implied by the same normals: sum_i z_i / sqrt(c~_k)
        bins = np.repeat(np.arange(counts.size), counts)
        zx_bin = np.zeros((counts.size, d))
        np.add.at(zx_bin, bins, z_x)
        zx_bin /= np.sqrt(counts)[:, None]
        zy_bin = np.bincount(bins, weights=z_y) / np.sqrt(counts)
        S2, t2 = release_sums(sums, mu_s, mu_t, by, zx_bin, zy_bin, noise_scaling=scaling)
        assert np.allclose(S1, S2, rtol=1e-12, atol=1e-9) and np.allclose(t1, t2, atol=1e-9)
        D = np.ones_like(S1) * 0.1
        e1 = estimator.bias_corrected(S1, t1, c1, D)
        e2 = estimator.bias_corrected(S2, t2, sums.noisy_count, D)
        assert np.allclose(e1.coef, e2.coef, rtol=1e-9)
        assert np.allclose(e1.stderr, e2.stderr, rtol=1e-9)


def test_synth_method_regression_is_alg2_on_its_records() -> None:
    data = _data(seed=8)
    m = BinAggSynth().fit(data, _ledger(1.0), np.random.default_rng(4))
    Xs, ys = m.synthetic_
    assert ys.size == int(m.sums_.noisy_count.sum())
    S, t, c = aggregate(type("S", (), {"X": Xs, "y": ys, "bin_of": m.synthetic_bins_})(),
                        m.n_bins_)
    D = (m.sums_.sens / m.mu_s_) ** 2
    again = estimator.bias_corrected(S, t, c, D)
    assert np.allclose(m.coef_, again.coef, rtol=1e-12)


def test_bias_correction_options_differ_by_the_stated_shift() -> None:
    rng = np.random.default_rng(0)
    S, t = rng.uniform(1, 5, (40, 2)), rng.uniform(1, 9, 40)
    c, D = rng.integers(2, 30, 40).astype(float), rng.uniform(0.5, 2, (40, 2))
    shift = (D / c[:, None]).sum(0)
    A = S.T @ (S / c[:, None])
    b = S.T @ (t / c)
    assert np.allclose(estimator.bias_corrected(S, t, c, D, correction="sum").coef,
                       np.linalg.solve(A - np.diag(shift), b))
    assert np.allclose(estimator.bias_corrected(S, t, c, D, correction="average").coef,
                       np.linalg.solve(A - np.diag(shift / 40), b))


def test_sandwich_matches_theorem_4_2_written_out() -> None:
    rng = np.random.default_rng(1)
    K, d = 30, 2
    S, t = rng.uniform(1, 5, (K, d)), rng.uniform(1, 9, K)
    c, D = rng.integers(2, 30, K).astype(float), rng.uniform(0.5, 2, (K, d))
    est = estimator.bias_corrected(S, t, c, D)
    b = est.coef
    M = sum(np.outer(S[k], S[k]) / c[k] for k in range(K)) / K - np.diag(
        sum(D[k] / c[k] for k in range(K)) / K)
    Q = [S[k] / c[k] * (t[k] - S[k] @ b) + D[k] * b / c[k] for k in range(K)]
    H = sum(np.outer(q, q) for q in Q) / (K * (K - d))
    Sig = np.linalg.inv(M) @ H @ np.linalg.inv(M)
    assert np.allclose(est.stderr, np.sqrt(np.diag(Sig)), rtol=1e-10)
    z = 1.959963984540054
    assert np.allclose(est.ci[:, 1] - est.ci[:, 0], 2 * z * est.stderr)
    t_crit = estimator.critical_value(0.05, "t", K - d)
    assert t_crit == pytest.approx(2.048407141795244, rel=1e-9)   # t_{0.975, 28}


@pytest.mark.parametrize("scaling,factor", [("paper", math.sqrt(3)), ("sqrt_d", 1.0)])
def test_charges_compose_to_the_target_and_report_actual_cost(scaling: str,
                                                               factor: float) -> None:
    data = _data()
    ledger = _ledger(1.0)
    model = BinAgg(noise_scaling=scaling).fit(data, ledger, np.random.default_rng(0))
    mu_b, mu_c, mu_s, mu_t = split_budget(1.0, (1, 3, 3, 3))
    assert [c.label.split(" (")[0] for c in ledger.charges] == [
        "privtree", "bin counts", "feature sums", "label sums"]
    mus = [c.mu for c in ledger.charges]
    assert mus == pytest.approx([mu_b, mu_c, mu_s, mu_t], rel=1e-9)
    assert mu_b == pytest.approx(1 / math.sqrt(28)) and mu_s == pytest.approx(3 / math.sqrt(28))
    assert ledger.charges[0].epsilon == pytest.approx(
        _eps_for(mu_b), rel=1e-9)                                  # PrivTree's eps
    assert ledger.mu_spent == pytest.approx(1.0, rel=1e-9)
    expect = math.sqrt(mu_b**2 + mu_c**2 + (factor * mu_s) ** 2 + mu_t**2)
    assert model.info()["mu_actual"] == pytest.approx(expect, rel=1e-12)


def _eps_for(mu: float) -> float:
    # invert pure_to_gdp by bisection (independent of gdp_to_pure's closed form)
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pure_to_gdp(mid) < mu else (lo, mid)
    return (lo + hi) / 2


def test_bad_options_and_missing_bounds_fail_in_one_line() -> None:
    for kw, word in [({"correction": "mean"}, "correction"), ({"quantile": "f"}, "quantile"),
                     ({"noise_scaling": "d"}, "noise_scaling"), ({"ratios": (1, 2)}, "ratios"),
                     ({"alpha": 1.5}, "alpha")]:
        with pytest.raises(ValueError, match=word):
            BinAgg(**kw)
    data = _data()
    bare = TabularData(data.X, data.y, data.x_bound, data.y_bound, data.feature_names, "y")
    with pytest.raises(ValueError, match="x_range"):
        BinAgg().fit(bare, _ledger(1.0), np.random.default_rng(0))
