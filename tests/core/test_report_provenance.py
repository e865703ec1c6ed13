"""What every report says about where its numbers come from (issue 16 items 5, 6 and 8), with
real ``dpbench`` processes on real stores.

Item 5: ``dpbench figures`` without ``profile=`` builds every profile that holds results of
a grid that was run (after ``make demo``'s smoke run: the smoke figures, not "no stored
results"), skips and names the grids that were never run but hold a few shared trials, and
every figure, table and claims file states its profile, trials per cell and the profile's
caveat (smoke: FAILs are expected). Item 6: ``dpbench status --versions`` lists the library
versions the trials ran with and flags a store that mixes them. Item 8: every trial records
its neighbouring relation and the report states it; a method whose paper's accounting
under-states its spend is named, with its true spend, in the run summary, the status, the
tables and claims.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import figure_folder, run_cli

from dpbench.methods.base import NEIGHBOUR_RELATIONS
from dpbench.privacy import conversions
from dpbench.report.privacy import (
    alerts,
    budget_note,
    group_note,
    neighbours_note,
    understated_notes,
    unprotected_notes,
)
from dpbench.runner.store import ResultStore

SMOKE = ["experiment=linreg_adult", "methods=[public,ssp]", "profile=smoke",
         "runner.progress=false"]
CAVEAT = "not a reproduction"


def _records(results: Path) -> list[dict]:
    return [json.loads(p.read_bytes()) for p in (results / "store" / "trials").glob("*/*.json")]


@pytest.fixture(scope="module")
def smoke_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one smoke run of linreg_adult (public, SSP), as after ``make demo``."""
    results = tmp_path_factory.mktemp("smoke") / "results"
    run_cli("run", *SMOKE, f"results_dir={results}", check=True)
    return results


def test_figures_without_a_profile_build_the_profiles_that_hold_results(smoke_store: Path
                                                                         ) -> None:
    out = run_cli("figures", f"results_dir={smoke_store}", check=True).stdout
    assert "no stored results" not in out, out
    built = next(line for line in out.splitlines() if line.startswith("built from"))
    assert "linreg_adult: smoke" in built and "linreg_adult: default" not in built, built
    figures = smoke_store / "figures"
    assert (figures / "linreg_adult-smoke" / "mse_vs_eps.png").exists()
    assert not (figures / "linreg_adult").exists()      # the default grid has no result
    # ablation_mst's smoke grid shares the public trials but was never run: named, not built
    skipped = next(line for line in out.splitlines() if line.startswith("not built"))
    assert "ablation_mst (smoke: " in skipped, skipped
    assert not (figures / "ablation_mst-smoke").exists()
    # naming the experiment but no profile: still not built (its smoke grid was never run)
    out = run_cli("figures", "experiment=ablation_mst", f"results_dir={smoke_store}",
                  check=True).stdout
    skipped = next(line for line in out.splitlines() if line.startswith("not built"))
    assert "ablation_mst (smoke: " in skipped, out
    assert not (figures / "ablation_mst-smoke").exists()
    # naming it builds it, every missing cell marked
    run_cli("figures", "experiment=ablation_mst", "profile=smoke",
            f"results_dir={smoke_store}", check=True)
    table = (figures / "ablation_mst-smoke" / "mse_vs_eps.md").read_text()
    assert "INCOMPLETE" in table and "0 of 2 trials" in table


def test_an_empty_store_says_which_profiles_it_looked_in(tmp_path: Path) -> None:
    out = run_cli("figures", f"results_dir={tmp_path / 'results'}", check=True).stdout
    assert "no stored results for any experiment in profile default, paper, smoke" in out, out


def test_every_output_states_profile_trials_and_caveat(smoke_store: Path) -> None:
    run_cli("figures", *SMOKE, f"results_dir={smoke_store}", check=True)
    out = figure_folder(*SMOKE, f"results_dir={smoke_store}")
    assert out.name.startswith("linreg_adult-smoke-custom-")   # methods= narrowed: ad hoc
    origin = "smoke profile, 2 trials per cell"
    for name in ("mse_vs_eps.md", "mse_vs_eps.tex", "claims.md"):
        text = (out / name).read_text()
        assert origin in text and CAVEAT in text, name
        assert "neighbouring relation: add/remove one record (every private method)" in text


def test_every_trial_records_its_neighbouring_relation(smoke_store: Path) -> None:
    recs = _records(smoke_store)
    assert recs and all(r["privacy"]["neighbours"] in NEIGHBOUR_RELATIONS for r in recs)
    assert {r["privacy"]["neighbours"] for r in recs} == {"add_remove"}


def test_the_neighbours_note_names_each_relation() -> None:
    frame = pd.DataFrame({
        "method_label": ["Release", "Release", "SSP", "Public"],
        "privacy.private": [True, True, True, False],
        "privacy.neighbours": ["replace_one", "replace_one", "add_remove", "add_remove"]})
    assert neighbours_note(frame) == ("neighbouring relations: add/remove one record (SSP); "
                                      "replace one record (Release)")
    assert neighbours_note(frame.iloc[2:]) == ("neighbouring relation: add/remove one record "
                                               "(every private method)")
    assert neighbours_note(frame.iloc[3:]) is None     # no private trial: nothing to state


def test_the_group_note_names_private_methods_only() -> None:
    """A non-private reference in a converted cell states the relation but has no guarantee
    to convert: the board's group-privacy line does not name it."""
    frame = pd.DataFrame({
        "method_label": ["SSP", "Original", "AIM"],
        "privacy.private": [True, False, True],
        "privacy.group_k": [2, 2, None],
        "privacy.neighbours": ["add_remove", "add_remove", "replace_one"]})
    assert group_note(frame) == ("by group privacy (k = 2) from their add/remove analysis: SSP "
                                 "(run at the budget whose group guarantee is the cell's)")
    assert group_note(frame.iloc[1:]) is None


def test_status_versions_lists_and_flags_mixed_versions(smoke_store: Path,
                                                        tmp_path: Path) -> None:
    out = run_cli("status", "--versions", *SMOKE, f"results_dir={smoke_store}",
                  check=True).stdout
    numpy = _records(smoke_store)[0]["versions"]["numpy"]
    assert f"  numpy: {numpy}: 8" in out, out
    assert "mixed" not in out
    # one record from another numpy: the store mixes versions, and status says so
    results = tmp_path / "results"
    shutil.copytree(smoke_store, results)
    store = ResultStore(results / "store")
    rec = next(iter(store.records()))
    rec["versions"]["numpy"] = "0.0.1"
    store.put(rec)
    out = run_cli("status", "--versions", *SMOKE, f"results_dir={results}", check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("  numpy: "))
    assert line == f"  numpy: 0.0.1: 1, {numpy}: 7  <- mixed", line


def test_an_understated_spend_is_said_wherever_its_numbers_appear(tmp_path: Path) -> None:
    """BinAgg's paper-default noise scaling spends more than its claimed budget (the ledger's
    ``actual`` cost); the run summary, status, tables and claims name it with the true
    spend, which is recomputed here from the recorded mu by the GDP conversion."""
    results = tmp_path / "results"
    grid = ["experiment=binagg_real", "profile=smoke", "datasets=[binagg_liver]",
            "methods=[public,binagg]", "trials=1", "runner.progress=false",
            f"results_dir={results}"]
    run = run_cli("run", *grid, check=True).stdout
    recs = [r for r in _records(results) if r["privacy"].get("understated")]
    assert recs, "BinAgg (noise_scaling: paper) must record an understated spend"
    worst = max(recs, key=lambda r: r["privacy"]["spent_epsilon"] / r["privacy"]["target_epsilon"])
    p = worst["privacy"]
    eps_true = conversions.gdp_eps(p["mu_spent"], p["target_delta"])
    assert eps_true == pytest.approx(p["spent_epsilon"], rel=1e-9)
    assert p["mu_spent"] > p["claimed_mu_spent"] == pytest.approx(1.0, rel=1e-9)
    # a mu budget: the alert speaks mu only (the old one mixed eps and mu)
    worst = max(recs, key=lambda r: r["privacy"]["mu_spent"])
    line = (f"up to mu {worst['privacy']['mu_spent']:.3g} at a target of mu = 1 (its "
            f"paper's accounting claims mu 1)")
    alert = next(x for x in run.splitlines() if x.startswith("PRIVACY: BinAgg"))
    assert line in alert and f"{len(recs)} trial(s)" in alert, alert
    assert "eps" not in alert, alert
    status = run_cli("status", *grid, check=True).stdout
    assert alert in status
    run_cli("figures", *grid, check=True)
    out = figure_folder(*grid)
    written = [p for p in out.iterdir() if p.suffix in (".md", ".tex")]
    assert written and all(alert.removeprefix("PRIVACY: ") in p.read_text() for p in written)


def test_understated_notes_on_a_hand_built_frame() -> None:
    frame = pd.DataFrame({
        "method_label": ["A", "A", "B"], "privacy.understated": [1.0, 1.0, None],
        "epsilon": [1.0, 1.0, 1.0], "budget_unit": ["mu"] * 3,
        "privacy.spent_epsilon": [3.0, 8.0, 1.0], "privacy.target_epsilon": [1.0, 2.0, 1.0],
        "privacy.claimed_spent_epsilon": [1.5, 2.0, None],
        "privacy.mu_spent": [2.0, 3.0, None], "privacy.claimed_mu_spent": [1.0, 1.0, None]})
    # a mu budget: the spend in mu only
    assert understated_notes(frame) == [
        "PRIVACY: A follows its paper's accounting, which under-states the cost: 2 trial(s) "
        "spend more than their target, up to mu 3 at a target of mu = 1 (its paper's "
        "accounting claims mu 1)"]
    # an epsilon budget: the spend in epsilon only
    assert understated_notes(frame.assign(budget_unit="epsilon")) == [
        "PRIVACY: A follows its paper's accounting, which under-states the cost: 2 trial(s) "
        "spend more than their target, up to eps 8 at a target of eps 2 (its paper's "
        "accounting claims eps 2)"]
    assert understated_notes(frame.iloc[2:]) == []


def test_unprotected_rows_are_an_alert_with_the_delta_a_row_really_gets() -> None:
    # PATE on Compas (100 student rows of 5,771) and Heart (20 of 242): the note gives the
    # worst trial's delta for a row of the training split; a method without them says nothing
    frame = pd.DataFrame({
        "method_label": ["PATE", "PATE", "AIM"],
        "privacy.unprotected_rows": [100.0, 20.0, None],
        "privacy.delta_any_row": [3e-8 + 100 / 5771, 1.7e-5 + 20 / 242, None],
        "privacy.target_epsilon": [1.0, 1.0, 1.0],
        "privacy.target_delta": [3e-8, 1.7e-5, 1e-9]})
    notes = unprotected_notes(frame)
    assert notes == ["PRIVACY: PATE publishes 20-100 private training rows without noise "
                     "(its paper's choice): for a row of the training split the guarantee is "
                     "only eps 1 with delta up to 0.083, not 1.7e-05"]
    assert alerts(frame) == notes and unprotected_notes(frame.iloc[2:]) == []


def test_budget_note_states_a_mu_budget() -> None:
    frame = pd.DataFrame({"epsilon": [1.0, 1.0], "budget_unit": ["mu", "mu"]})
    assert budget_note(frame) == "budget: mu = 1 (mu-GDP), every trial"
    assert budget_note(frame.assign(epsilon=[0.5, 1.0])) == "budget unit: mu (mu-GDP)"
    assert budget_note(frame.assign(budget_unit="epsilon")) is None
