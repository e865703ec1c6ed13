"""One neighbouring relation per arena: the group-privacy conversion (privacy/relations.py),
checked against independent computations, and the grid's and runner's use of it.

The independent side shares no code with dpbench's conversions: zCDP -> (eps, delta) is the
CKS'20 bound minimised in mpmath and GDP -> (eps, delta) the exact trade-off solved in
mpmath (``independent_accountant``); (eps, delta) group privacy is written out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from independent_accountant import cks_epsilon, gdp_epsilon, zcdp_rho

from dpbench.cli import compose_config
from dpbench.privacy import draws
from dpbench.privacy.accountant import Accountant
from dpbench.privacy.relations import group_guarantee, group_size, native_target
from dpbench.runner.execute import execute
from dpbench.runner.grid import expand_cells

#: a ledger may land this far above an exactly spent target (accountant.BUDGET_REL_TOL)
TOL = 1e-9
#: the whole native budget spent must give the cell's epsilon to this precision (tight)
TIGHT = 1e-6


def test_group_sizes() -> None:
    assert group_size("add_remove", "add_remove") == 1
    assert group_size("replace_one", "replace_one") == 1
    assert group_size("add_remove", "replace_one") == 2      # replace = remove + add
    assert group_size("replace_one", "add_remove") is None   # n public: implies nothing
    with pytest.raises(ValueError, match="valid: add_remove, replace_one"):
        group_size("swap", "add_remove")


def _spend_all(ledger: Accountant) -> None:
    if ledger.currency == "zcdp":
        ledger.charge_rho(ledger.rho_total, "all")
    elif ledger.currency == "gdp":
        ledger.charge_mu(ledger.mu_total, "all")
    elif ledger.currency == "approx":
        ledger.charge_eps_delta(ledger.epsilon, ledger.delta, "all")
    else:
        ledger.charge_pure(ledger.epsilon, "all")


@pytest.mark.parametrize("currency", ["zcdp", "gdp", "approx", "pure"])
@pytest.mark.parametrize("eps,delta", [(0.1, 1e-8), (1.0, 1e-5), (4.0, 1e-6)])
def test_native_budget_spent_in_full_is_the_cell_under_replace_one(currency: str, eps: float,
                                                                   delta: float) -> None:
    ledger = Accountant(*native_target(eps, delta, currency, 2), currency=currency)
    _spend_all(ledger)
    s = ledger.summary()
    # independent: group privacy for k = 2 of what the ledger spent
    if currency == "zcdp":
        want = cks_epsilon(4 * s["rho_spent"], delta), delta
    elif currency == "gdp":
        want = gdp_epsilon(2 * s["mu_spent"], delta), delta
    else:   # (e, d)-DP for groups of 2: (2e, d (1 + e^e)); pure: d = 0
        e, d = s["spent_epsilon"], s["spent_delta"]
        want = 2 * e, d * (1 + math.exp(e))
    assert want[0] <= eps * (1 + TOL) and want[1] <= delta * (1 + TOL), want
    assert want[0] >= eps * (1 - TIGHT), (want, eps)       # the cell's budget, not less
    got = group_guarantee(s, 2)
    assert got[0] == pytest.approx(want[0], rel=TIGHT) and got[1] == pytest.approx(
        want[1], rel=TIGHT, abs=1e-300)


def test_same_relation_is_the_identity() -> None:
    for currency in ("zcdp", "gdp", "approx", "pure"):
        assert native_target(1.0, 1e-5, currency, 1) == (1.0, 1e-5)


def _arena(name: str, *overrides: str):
    return compose_config([f"experiment={name}", "profile=smoke", *overrides])


def test_arena_states_one_relation_and_keeps_shared_cells() -> None:
    specs, refused = expand_cells(_arena("arena_synthetic"))
    assert all("needs data with" in r.reason for r in refused), refused   # e.g. BinAgg's box
    by_method = {s.method: s for s in specs}
    # native replace-one generators: the paper's own trial (no relation in the key)
    assert by_method["mwem"].relation is None and "relation" not in by_method["mwem"].identity()
    # add/remove AIM has its own replace-one analysis: it runs it, and its key says so
    # through its parameters (no group conversion)
    assert by_method["aim_tstr"].relation is None
    assert by_method["aim_tstr"].method_params["relation"] == "replace_one"
    assert "relation" not in by_method["aim_tstr"].identity()
    # a method with no replace-one analysis of its own is converted by group privacy
    specs_r, _ = expand_cells(_arena("arena_regression"))
    jlt = next(s for s in specs_r if s.method == "jlt")
    assert jlt.relation == "replace_one" and jlt.identity()["relation"] == "replace_one"
    assert "relation" not in jlt.method_params
    # SSP, AdaSSP and the mean baseline have their own replace-one analysis now
    for own in ("ssp", "adassp", "mean"):
        s = next(s for s in specs_r if s.method == own)
        assert s.relation is None and s.method_params["relation"] == "replace_one", own
    # AdaSSP spends its whole budget in an arena (its yaml's arena_params)
    assert next(s for s in specs_r if s.method == "adassp").method_params[
        "calibration"] == "exact"
    assert all(s.meta["relation"] == "replace_one" for s in specs)


def test_replace_one_methods_are_refused_under_add_remove() -> None:
    specs, refused = expand_cells(_arena("arena_synthetic", "experiment.relation=add_remove"))
    why = {r.method: r.reason for r in refused}
    assert {"mwem", "pep", "dualquery", "uniform"} <= set(why)
    assert "implies none under add_remove" in why["mwem"]
    assert {s.method for s in specs} >= {"aim_tstr", "independent"}   # add/remove natively
    assert all(s.relation is None for s in specs)
    assert not any("relation" in s.method_params for s in specs)   # the papers' keys


def test_an_unknown_relation_is_one_line() -> None:
    with pytest.raises(ValueError, match="unknown experiment.relation 'swap'; valid: add_remove"):
        expand_cells(_arena("arena_synthetic", "experiment.relation=swap"))


@pytest.mark.parametrize("arena,method,dataset", [
    ("arena_regression", "binagg_sqrtd", "synthetic_linear"),  # GDP, add/remove
    ("arena_classification", "majority", "mpdp_heart"),         # pure, add/remove
    ("arena_classification", "objpert", "mpdp_heart"),          # approx, add/remove
])
def test_converted_trials_spend_at_most_the_cell_by_their_draws(arena: str, method: str,
                                                                  dataset: str) -> None:
    """End to end: a converted cell's noise draws, priced independently under the method's
    own relation and taken to replace-one by group privacy, are within the cell's budget,
    and the record states the relation and the same guarantee."""
    from independent_accountant import approx_epsilon, gdp_mu

    spec = next(s for s in expand_cells(_arena(arena))[0]
                if s.method == method and s.dataset == dataset)
    assert spec.relation == "replace_one"
    with draws.recording() as trace:
        rec = execute(spec)
    assert rec["status"] == "ok", rec.get("error")
    p = rec["privacy"]
    eps, delta = p["cell_epsilon"], p["cell_delta"]
    assert p["relation"] == "replace_one" and p["group_k"] == 2
    assert trace and all(d.relation == "add_remove" for d in trace)
    if p["currency"] == "zcdp":
        indep = cks_epsilon(4 * zcdp_rho(trace), delta), delta
    elif p["currency"] == "gdp":
        indep = gdp_epsilon(2 * gdp_mu(trace), delta), delta
    else:
        e, d = approx_epsilon(trace, p["target_delta"])
        indep = 2 * e, d * (1 + math.exp(e))
    assert indep[0] <= eps * (1 + TOL) and indep[1] <= delta * (1 + TOL), (indep, eps, delta)
    assert p["relation_epsilon"] == pytest.approx(indep[0], rel=1e-6)
    assert np.isclose(p["relation_delta"], indep[1], rtol=1e-6, atol=0)


@pytest.mark.parametrize("arena,method,dataset", [
    ("arena_classification", "aim_tstr", "mpdp_heart"),
    ("arena_classification", "mst_synth", "mpdp_heart"),
    ("arena_synthetic", "independent", "qr_adult_reduced"),
])
def test_native_replace_one_cells_spend_the_cell_at_replace_one_sensitivities(
        arena: str, method: str, dataset: str) -> None:
    """End to end: a marginal method in a replace-one arena runs its own replace-one
    analysis. Every draw declares the replace-one sensitivity of a count table (L2 sqrt(2),
    a score's L1 2 w, as tests/privacy/test_sensitivity.py checks on data), and the draws,
    priced independently (zCDP summed, CKS'20 in mpmath), spend the cell's (eps, delta),
    all of it, with no group conversion: group privacy would leave a quarter of the rho."""
    spec = next(s for s in expand_cells(_arena(arena))[0]
                if s.method == method and s.dataset == dataset)
    assert spec.relation is None and spec.method_params["relation"] == "replace_one"
    with draws.recording() as trace:
        rec = execute(spec)
    assert rec["status"] == "ok", rec.get("error")
    p = rec["privacy"]
    assert p["neighbours"] == "replace_one" and "group_k" not in p
    assert trace and all(d.relation == "replace_one" for d in trace)
    assert all(d.sensitivity == pytest.approx(math.sqrt(2), rel=1e-15)
               for d in trace if d.mechanism == "gaussian")
    eps, delta = spec.epsilon, p["target_delta"]
    rho = zcdp_rho(trace)
    assert cks_epsilon(rho, delta) <= eps * (1 + TOL)
    assert cks_epsilon(rho, delta) >= eps * (1 - TIGHT)


def test_list_names_the_relations_a_method_has_its_own_analysis_for() -> None:
    from dpbench.catalog import methods

    privacy = {m["method"]: m["privacy"] for m in methods()}
    assert privacy["aim_tstr"] == "zcdp, add_remove (own analysis also: replace_one)"
    assert privacy["independent"].endswith("(own analysis also: replace_one)")
    assert privacy["ssp"] == "gdp, add_remove (own analysis also: replace_one)"
    assert privacy["jlt"] == "approx, add_remove"         # group privacy in a replace-one arena
    assert privacy["mwem"] == "zcdp, replace_one"


def test_aim_scores_move_by_at_most_their_replace_one_sensitivity() -> None:
    """AIM's (and MST's) selection scores, w_r (||M_r(D) - M_r(p)||_1 - const) against a
    fixed model p, move by at most w_r l1 when one row is replaced, with l1 = 2 the count
    tables' replace-one L1 sensitivity (histogram_sensitivity); the bound is reached where
    the model equals the data's marginal (replacing any row then moves the L1 from 0 to 2).
    Seed 0: 120 rows over 4 attributes, 200 random replacements; tolerance 1e-12."""
    from dpbench.data.marginals import data_marginal
    from dpbench.data.workloads import build_workload, workload_weights
    from dpbench.methods.marginals.aim import candidate_scores
    from dpbench.privacy.relations import histogram_sensitivity

    rng = np.random.default_rng(0)
    sizes = {"a": 3, "b": 4, "c": 2, "d": 5}
    attrs = list(sizes)
    codes = {a: rng.integers(sizes[a], size=120) for a in attrs}
    weights = workload_weights(build_workload("all_pairs", attrs), attrs)
    cands = list(weights)
    answers = {c: data_marginal(codes, c, sizes).ravel() for c in cands}
    est = {c: rng.uniform(0, 20, size=[sizes[a] for a in c]) for c in cands}
    tight = cands[3]
    est[tight] = answers[tight].reshape(est[tight].shape)     # the model matches D there
    base = candidate_scores(cands, answers, est, weights, sizes, sigma=1.0)
    l1 = histogram_sensitivity("replace_one")[0]
    bound = np.array([l1 * weights[c] for c in cands])
    worst = np.zeros(len(cands))
    for _ in range(200):
        i = int(rng.integers(120))
        moved = {a: v.copy() for a, v in codes.items()}
        for a in attrs:
            moved[a][i] = rng.integers(sizes[a])
        other = {c: data_marginal(moved, c, sizes).ravel() for c in cands}
        delta = np.abs(candidate_scores(cands, other, est, weights, sizes, sigma=1.0) - base)
        assert np.all(delta <= bound * (1 + 1e-12)), (delta / bound).max()
        worst = np.maximum(worst, delta / bound)
    assert worst[3] == pytest.approx(1.0, abs=1e-12)
    assert histogram_sensitivity("add_remove") == (1.0, 1.0)
    assert histogram_sensitivity("replace_one") == (2.0, math.sqrt(2.0))
