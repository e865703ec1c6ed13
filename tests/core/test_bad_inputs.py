"""Every bad input of a table ends in one line, exit status 2, the store byte for byte
unchanged and no failed record, in under 10 s each (issue: nothing a user types hangs,
overflows or fails after the work has started).

The commands run in this process (``dpbench.entry.main``: what the ``dpbench`` command runs
after its start-up) against a results folder holding a finished smoke run; a SIGALRM guard
turns a hang into a failure after 10 s (a guard, not a timing: the inputs take well under a
second when refused). The README's bad-input sentence and docs/reliability.md list these
kinds; test_cli_errors.py holds the subprocess versions of a few of them.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, run_cli

E = "experiment=linreg_adult"
#: (command, overrides, text the one line must hold: the value or the valid choices)
CASES = [
    # names
    ("run", ["experiment=nope"], "'nope'"),
    ("run", ["experiment=linreg_adlt"], "did you mean"),
    ("run", [E, "profile=nope"], "'nope'"),
    ("run", [E, "methods=[nope]"], "'nope'"),
    ("run", [E, "methods=[sspp]"], "did you mean"),
    ("run", [E, "datasets=[nope]"], "'nope'"),
    ("run", [E, "method=nope"], "'nope'"),
    ("run", [E, "dataset=nope"], "'nope'"),
    ("run", [E, "runner=nope"], "'nope'"),
    ("run", [E, "epsilon=[0.1]"], "did you mean"),
    ("run", [E, "nope=1"], "nope"),
    ("run", [E, "+nope=1"], "nope"),
    ("run", ["linreg_adult"], "experiment="),
    ("run", [E, "epsilons=[0.1,", "1]"], "quote it"),
    ("run", [E, "budget_unit=nope"], "nope"),
    ("run", [E, "experiment.figures=[nope]"], "nope"),
    ("run", [E, "methods=[{ssp:{nope:1}}]"], "nope"),
    ("run", [E, "method_sweep={nope:[1]}"], "nope"),
    ("run", [E, "profile.sweep_points={nope:1}"], "nope"),
    ("run", [E, "experiment.task=nope"], "nope"),
    # budgets
    ("run", [E, "epsilons=[-1]"], "-1"),
    ("run", [E, "epsilons=[0]"], "0"),
    ("run", [E, "epsilons=[nan]"], "nan"),
    ("run", [E, "epsilons=[inf]"], "inf"),
    ("run", [E, "epsilons=[abc]"], "abc"),
    ("run", [E, "epsilons=[true]"], "True"),
    ("run", [E, "epsilons=[]"], "epsilons"),
    ("run", [E, "epsilons=[1e308]", "methods=[ssp]"], "10000"),
    ("run", [E, "epsilons=[1e6]", "methods=[adassp]"], "10000"),
    ("run", [E, "epsilons=[50]", "methods=[adassp]"], "valid: epsilon <="),
    ("run", [E, "budget_unit=mu", "epsilons=[1e9]", "methods=[ssp]"], "mu=1e+09"),
    ("run", [E, "budget_unit=rho", "epsilons=[1e12]", "methods=[ssp]"], "rho=1e+12"),
    ("run", [E, "budget_unit=mu", "epsilons=[-2]"], "-2"),
    # delta
    ("run", [E, "delta=2"], "(0, 1)"),
    ("run", [E, "delta=0"], "(0, 1)"),
    ("run", [E, "delta=1"], "(0, 1)"),
    ("run", [E, "delta=-0.1"], "(0, 1)"),
    ("run", [E, "delta=nan"], "nan"),
    ("run", [E, "delta=n**2"], "n**2"),
    ("run", [E, "delta=n**n"], "n**n"),
    ("run", [E, "delta='9**9**9**9'"], "9**9**9**9"),
    ("run", [E, "delta=nope"], "nope"),
    ("run", [E, "delta='1/(n-n)'"], "1/(n-n)"),
    ("run", [E, "delta='__import__(1)'"], "__import__"),
    ("run", [E, "delta='n.real'"], "n.real"),
    ("run", [E, "delta='" + "1+" * 120 + "1'"], "characters"),
    ("run", [E, "delta='(1,2)'"], "(1,2)"),
    ("run", [E, "delta=[0.1]"], "delta"),
    # counts and sizes
    ("run", [E, "trials=0"], ">= 1"),
    ("run", [E, "trials=-3"], ">= 1"),
    ("run", [E, "trials=1.5"], "1.5"),
    ("run", [E, "trials=abc"], "abc"),
    ("run", [E, "trials=true"], "True"),
    ("plan", [E, "trials=1000000000", "profile.trials=1000000000"], "1,000,000"),
    ("run", [E, "profile.trials=0"], ">= 1"),
    ("run", [E, "profile.max_epsilons=0"], ">= 1"),
    ("run", [E, "profile.max_epsilons=abc"], "abc"),
    ("run", [E, "runner.n_jobs=0"], "n_jobs"),
    ("run", [E, "runner.n_jobs=-2"], "n_jobs"),
    ("run", [E, "runner.n_jobs=1.5"], "n_jobs"),
    ("run", [E, "runner.n_jobs=abc"], "n_jobs"),
    # issue 59, defect 7: absurd sizes, refused by run and plan alike before any work
    ("run", [E, "runner.n_jobs=100000"], "runner.n_jobs=100000"),
    ("plan", [E, "runner.n_jobs=100000"], "runner.n_jobs=100000"),
    ("run", ["experiment=binagg_ci", "profile=smoke", "dataset_sweep={n:[1000000000000]}",
             "methods=[binagg_sim]", "trials=1"], "1,000,000,000,000"),
    ("plan", ["experiment=binagg_ci", "profile=smoke", "dataset_sweep={n:[1000000000000]}",
              "methods=[binagg_sim]", "trials=1"], "1,000,000,000,000"),
    ("run", [E, "runner=slurm", "runner.mem_gb=-1"], "mem_gb"),
    ("run", [E, "runner=slurm", "runner.timeout_min=0"], "timeout_min"),
    # sweeps and parameters
    ("run", [E, "methods=[{binagg:{theta:[abc]}}]"], "abc"),
    ("run", [E, "methods=[{adassp:{failure_prob:2}}]"], "failure_prob"),
    ("run", [E, "methods=[{adassp:{failure_prob:abc}}]"], "abc"),
    ("run", [E, "method_sweep={failure_prob:[abc]}", "methods=[adassp]"], "abc"),
    ("run", [E, "profile.sweep_points={nope:{x:1}}"], "nope"),
    # task and method parameters that disagree (query answers made for another workload)
    ("plan", ["experiment=qr_adult", "experiment.task_params={workload: all_2way}"],
     "workload='all_3way' but the task scores workload='all_2way'"),
    ("run", ["experiment=qr_adult_star", "profile=smoke",
             "experiment.method_params_by_dataset.qr_adult_star.gem.number=32"],
     "number=32 but the task scores number=64"),
    # other commands
    ("plan", ["experiment=nope"], "'nope'"),
    ("status", ["experiment=nope"], "'nope'"),
    ("figures", ["experiment=nope"], "'nope'"),
    ("leaderboard", ["experiment=linreg_adult"], "arena"),
    ("leaderboard", ["experiment=nope"], "'nope'"),
    ("site", ["experiment=nope"], "'nope'"),
    ("plan", [E, "delta=2"], "(0, 1)"),
    ("plan", [E, "epsilons=[-1]"], "-1"),
    ("status", [E, "trials=0"], ">= 1"),
    ("figures", [E, "profile=nope"], "'nope'"),
]
HANG_S = 10


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding a finished smoke run, to prove errors do not touch it."""
    results = tmp_path_factory.mktemp("seeded") / "results"
    run_cli("run", E, "methods=[public,ssp,adassp]", "profile=smoke", f"results_dir={results}",
            "runner.progress=false", check=True)
    warm_imports()
    return results


def warm_imports() -> None:
    """Import every method and dataset once, so the hang guard times the commands and not
    this process's first import of torch or JAX."""
    import dpbench.runner.slurm  # noqa: F401  (submitit's loggers take the stderr of import)
    from dpbench.runner.execute import import_object
    from dpbench.runner.schema import entries, read_yaml

    for group in ("method", "dataset"):
        for path in entries(group).values():
            target = (read_yaml(path) or {}).get("_target_")
            if target:
                import_object(target)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (lock files aside: a refused command may open one)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


@contextlib.contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def refused(argv: list[str]) -> tuple[int | str | None, list[str]]:
    """(exit status, stderr lines) of ``dpbench <argv>`` in this process."""
    from dpbench.entry import main

    err, out = io.StringIO(), io.StringIO()
    with hang_guard(HANG_S), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code: int | str | None = main(argv)
        except SystemExit as exc:              # argparse's own errors
            code = exc.code
    return code, err.getvalue().strip().splitlines()


def check_refused(seeded: Path, command: str, overrides: list[str], must: str) -> None:
    before = snapshot(seeded)
    code, lines = refused([command, f"results_dir={seeded}", "runner.progress=false",
                           *overrides])
    assert code == 2, (code, lines)
    assert len(lines) == 1, lines
    assert lines[0].startswith("dpbench: error: ") and must in lines[0], lines[0]
    assert snapshot(seeded) == before


def test_the_table_holds_the_issues_count() -> None:
    """At least 78 inputs (the count the issue tried), no two alike."""
    assert len(CASES) >= 78 - len(DATA_CASES)
    assert len({(c, tuple(o)) for c, o, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("command", "overrides", "must"), CASES,
                         ids=[f"{c} {' '.join(o)}"[:80] for c, o, _ in CASES])
def test_a_bad_input_is_one_line_and_changes_nothing(seeded: Path, command: str,
                                                     overrides: list[str], must: str) -> None:
    check_refused(seeded, command, overrides, must)


def _file_is_a_folder(data: Path) -> str:
    target = data / "ddssp_adult" / "adult.csv.gz"
    target.unlink()
    target.mkdir()
    return "adult.csv.gz"


def _manifest_not_json(data: Path) -> str:
    (data / "ddssp_adult" / "MANIFEST.json").write_text("{ not json")
    return "MANIFEST.json"


def _manifest_missing(data: Path) -> str:
    (data / "ddssp_adult" / "MANIFEST.json").unlink()
    return "MANIFEST.json"


def _file_missing(data: Path) -> str:
    (data / "ddssp_adult" / "adult.csv.gz").unlink()
    return "adult.csv.gz"


def _file_flipped(data: Path) -> str:
    target = data / "ddssp_adult" / "adult.csv.gz"
    blob = bytearray(target.read_bytes())
    blob[len(blob) // 3] ^= 0xFF
    target.write_bytes(bytes(blob))
    return "adult.csv.gz"


def _file_truncated(data: Path) -> str:
    target = data / "ddssp_adult" / "adult.csv.gz"
    target.write_bytes(target.read_bytes()[:100])
    return "adult.csv.gz"


DATA_CASES = [_file_is_a_folder, _manifest_not_json, _manifest_missing, _file_missing,
              _file_flipped, _file_truncated]


@pytest.mark.parametrize("damage", DATA_CASES, ids=lambda f: f.__name__.strip("_"))
def test_a_bad_data_folder_is_one_line_and_changes_nothing(
        seeded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO / "data" / "ddssp_adult", data / "ddssp_adult")
    must = damage(data)
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(data))
    check_refused(seeded, "run", [E, "profile=smoke", "trials=3"], must)


@pytest.mark.parametrize("command", ["run", "plan"])
@pytest.mark.parametrize("value", ["fast", "0", "-0.1", "inf"])
def test_a_malformed_machine_speed_is_one_line_and_changes_nothing(
        seeded: Path, monkeypatch: pytest.MonkeyPatch, command: str, value: str) -> None:
    """``DPBENCH_HOST_PROBE`` (the speed a plan scales seconds to, runner/hostspeed.py) that
    is not a positive number or ``off``: refused before any work, the store untouched."""
    monkeypatch.setenv("DPBENCH_HOST_PROBE", value)
    check_refused(seeded, command, [E, "profile=smoke", "trials=3"],
                  f"DPBENCH_HOST_PROBE={value!r}: valid values are a positive number")
