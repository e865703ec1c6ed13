"""Ad-hoc grids never overwrite the folder of an experiment as written: a run narrowed or
changed on the command line (methods=, datasets=, epsilons=, trials=, ...) writes its
figures and boards under ``<name>[-<profile>]-custom-<hash of the changes>``."""

from __future__ import annotations

from dpbench.workspace import compose_config, custom_grid, figure_dir


def folder(*overrides: str) -> str:
    return figure_dir(compose_config(list(overrides))).name


def test_the_experiment_as_written_keeps_its_folder() -> None:
    assert folder("experiment=linreg_adult") == "linreg_adult"
    assert folder("experiment=linreg_adult", "profile=smoke") == "linreg_adult-smoke"
    assert custom_grid(compose_config(["experiment=qr_adult", "profile=smoke"])) == {}


def test_an_ad_hoc_grid_gets_its_own_folder_named_by_its_changes() -> None:
    narrowed = folder("experiment=linreg_adult", "methods=[ssp]")
    assert narrowed.startswith("linreg_adult-custom-")
    assert folder("experiment=linreg_adult", "methods=[ssp]") == narrowed      # stable
    assert folder("experiment=linreg_adult", "methods=[adassp]") != narrowed   # per change
    for change in ("epsilons=[0.5]", "trials=2", "delta=1e-6", "datasets=[adult]"):
        assert "-custom-" in folder("experiment=linreg_fire", change), change
    # the same values as the yaml's are not a change
    assert folder("experiment=linreg_adult", "trials=5") == "linreg_adult"   # yaml: 5
