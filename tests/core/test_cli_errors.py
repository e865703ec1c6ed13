"""Bad input: one-line error naming the value and the choices, exit != 0, store untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()} if root.exists() else {}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding a finished smoke run, to prove errors do not touch it."""
    results = tmp_path_factory.mktemp("seeded") / "results"
    run_cli("run", "experiment=linreg_adult", "methods=[public,ssp,adassp]", "profile=smoke",
            f"results_dir={results}", "runner.progress=false", check=True)
    return results


@pytest.mark.parametrize(("override", "must_name", "must_list"), [
    ("dataset=nope", "'nope'", "adult"),
    ("method=nope", "'nope'", "adassp"),
    ("experiment=nope", "'nope'", "linreg_adult"),
    ("profile=nope", "'nope'", "smoke"),
    ("epsilons=[-1]", "-1", "> 0"),
    ("epsilons=[0]", "0", "> 0"),
    ("delta=2", "2", "(0, 1)"),
    ("delta=0", "0", "(0, 1)"),
    ("delta=n**2", "n**2", "(0, 1)"),
    ("trials=0", "0", ">= 1"),
])
def test_bad_value_is_one_line_and_changes_nothing(seeded: Path, override: str,
                                                    must_name: str, must_list: str) -> None:
    before = _snapshot(seeded)
    proc = run_cli("run", "experiment=linreg_adult", "profile=smoke", override,
                   f"results_dir={seeded}")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert must_name in lines[0] and must_list in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert _snapshot(seeded) == before


def test_corrupted_data_file_fails_before_any_work(seeded: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO / "data" / "ddssp_adult", data / "ddssp_adult")
    target = data / "ddssp_adult" / "adult.csv.gz"
    blob = bytearray(target.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # flip one byte in the middle
    target.write_bytes(bytes(blob))
    before = _snapshot(seeded)
    proc = run_cli("run", "experiment=linreg_adult", "profile=smoke", "trials=3",
                   f"results_dir={seeded}", env={"DPBENCH_DATA_DIR": str(data)})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "adult.csv.gz" in lines[0], proc.stderr
    assert _snapshot(seeded) == before


def test_missing_data_file_names_the_file(seeded: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO / "data" / "ddssp_adult", data / "ddssp_adult")
    (data / "ddssp_adult" / "adult.csv.gz").unlink()
    lines = {}
    for command in ("plan", "run"):     # plan checks the data as run does (issue 59)
        proc = run_cli(command, "experiment=linreg_adult", "profile=smoke", "trials=3",
                       f"results_dir={seeded}", env={"DPBENCH_DATA_DIR": str(data)})
        assert proc.returncode == 2 and "adult.csv.gz" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        lines[command] = proc.stderr
    assert lines["plan"] == lines["run"]


def test_default_experiment_and_paper_form_compose() -> None:
    """No experiment= composes the default (a paper subfolder); <paper>/<name> works too."""
    from dpbench.workspace import compose_config

    assert compose_config([]).experiment.name == "linreg_adult"
    assert compose_config(["experiment=ddssp/logreg_adult"]).experiment.name == "logreg_adult"


@pytest.mark.parametrize(("overrides", "must_name", "must_list"), [
    # a 4-way workload that max_cells leaves empty on this dataset's domain
    (["datasets=[mpdp_compas]", "method_sweep={max_cells:[10]}"], "max_cells=10",
     "every marginal over"),
    # the tstr task's extra target that the dataset does not have
    (["datasets=[mpdp_compas]",
      "experiment.task_params_by_dataset={mpdp_compas:{targets:[nope]}}"], "nope", "valid:"),
])
def test_excess_risk_inputs_are_refused_before_any_trial(seeded: Path, overrides: list[str],
                                                          must_name: str,
                                                          must_list: str) -> None:
    before = _snapshot(seeded)
    proc = run_cli("run", "experiment=exrisk_table2", "profile=smoke", *overrides,
                   f"results_dir={seeded}")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and must_name in lines[0] and must_list in lines[0], proc.stderr
    assert _snapshot(seeded) == before


def test_a_trials_override_capped_by_the_profile_is_said() -> None:
    """exrisk_table2's default profile keeps 4 trials: ``trials=8`` alone still runs 4, and
    the command says so (and how to raise it); with ``profile.trials=8`` it runs 8."""
    from dpbench.workspace import capped_note, compose_config, grid

    base = ["experiment=exrisk_table2", "datasets=[mpdp_heart]", "epsilons=[1.0]"]
    capped = compose_config([*base, "trials=8"])
    assert len(grid(capped)) == 4
    assert capped_note(capped, [*base, "trials=8"]) == (
        "note: profile default caps trials at 4 (trials=8 given); add profile.trials=8 to "
        "run 8")
    raised = [*base, "trials=8", "profile.trials=8"]
    assert len(grid(compose_config(raised))) == 8
    assert capped_note(compose_config(raised), raised) is None
    assert capped_note(compose_config(base), base) is None     # no trials= given: no note


@pytest.mark.parametrize("argv,hint", [
    (["plan", "experiment=linreg_adlt"], "(did you mean 'linreg_adult'?)"),
    (["plan", "experiment=linreg_adult", "epsilon=[0.1]"], "(did you mean 'epsilons'?)"),
    (["plan", "experiment=linreg_adult", "method=sspp"], "(did you mean 'ssp'?)"),
])
def test_a_typo_gets_a_did_you_mean(argv: list[str], hint: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    from dpbench.entry import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and hint in err, err


def test_no_hint_when_nothing_is_close() -> None:
    from dpbench.runner.schema import did_you_mean

    assert did_you_mean("zzzz", ["ssp", "adassp"]) == ""


def test_version_names_the_release_and_the_commit(capsys: pytest.CaptureFixture[str]) -> None:
    from dpbench.entry import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("dpbench ") and "(commit " in out, out


def test_every_command_is_one_registry_entry() -> None:
    """``entry.COMMANDS`` is the one list of commands (issue 59): each entry's name, help and
    target, a function of the parsed arguments that exists."""
    import importlib

    from dpbench.entry import COMMANDS, parser

    names = [n for n, _, _ in COMMANDS]
    assert len(names) == len(set(names))
    sub = next(a for a in parser()._actions if a.dest == "command")
    assert list(sub.choices) == names
    for _, text, target in COMMANDS:
        module, _, function = target.partition(":")
        assert text and callable(getattr(importlib.import_module(module), function)), target
