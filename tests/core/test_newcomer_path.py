"""The newcomer's path, as the README and the Makefile write it: ``make demo``'s commands,
then the first five commands of the README's "After the demo" block, verbatim (each with
``results_dir=`` of a temporary folder added, so the repository's ``results/`` is left
alone). Each exits 0 and none says that nothing of the demo's run is stored. Then the
README's numbers that a command prints deterministically (trial counts, trials per cell,
the demo's methods) are held to what ``plan`` prints.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, run_cli

README = (REPO / "README.md").read_text(encoding="utf-8")
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
#: what a command prints when the run it refers to is not in the store
NOTHING_STORED = re.compile(r"\bdone 0\b|no ok trial stored yet|total: ok 0\b")


def demo_commands() -> list[list[str]]:
    """The ``$(DPB) ...`` lines of the Makefile's ``demo`` recipe, as argument lists."""
    recipe = re.search(r"^demo:.*?\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE)
    assert recipe, "the Makefile has no demo recipe"
    return [shlex.split(line.split("$(DPB)", 1)[1]) for line in recipe.group(1).splitlines()
            if "$(DPB)" in line and not line.strip().startswith("#")]


def after_the_demo() -> list[list[str]]:
    """The ``dpbench`` commands of the first code block under "## After the demo"."""
    section = README.split("## After the demo", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, "no bash block under 'After the demo'"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("dpbench ")]


def test_the_readme_names_five_commands_after_the_demo() -> None:
    assert len(after_the_demo()) >= 5
    assert [c[0] for c in demo_commands()] == ["run", "figures"]


@pytest.mark.slow   # ~60 s on CI: scheduled first (tests/conftest.py)
def test_demo_then_the_readmes_next_five_commands(tmp_path: Path) -> None:
    results = f"results_dir={tmp_path / 'results'}"
    for argv in demo_commands():
        run_cli(*argv, results, check=True)
    for argv in after_the_demo()[:5]:
        proc = run_cli(*argv, *([] if argv[0] == "list" else [results]))  # list reads no store
        assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-2000:])
        said = proc.stdout + proc.stderr
        assert not NOTHING_STORED.search(said), (argv, said[-2000:])
    # status without profile= reports every profile the experiment was run at: the smoke one
    said = run_cli("status", "experiment=linreg_adult", results, check=True).stdout
    assert "linreg_adult (smoke)" in said and not NOTHING_STORED.search(said), said[-2000:]
    # what the demo ran is what the commands saw: its figure and the site's page exist
    assert (tmp_path / "results" / "figures" / "linreg_adult-smoke" / "mse_vs_eps.png").is_file()
    assert (tmp_path / "results" / "site" / "linreg_adult-smoke" / "index.html").is_file()


def plan(*overrides: str) -> str:
    proc = run_cli("plan", *overrides, "results_dir=/nonexistent/dpbench-readme-test",
                   check=True)
    return proc.stdout


def test_the_readmes_trial_counts_are_what_plan_prints() -> None:
    """Every ``dpbench run <overrides>  # ... (N trials`` of the README's code blocks: ``plan``
    of the same overrides says ``N trials``."""
    claims = re.findall(r"^dpbench run ([^#\n]*?)\s+#[^\n]*?\((\d[\d,]*) trials", README,
                        re.MULTILINE)
    assert claims, "the README states no trial count next to a command"
    for overrides, n in claims:
        assert f": {n.replace(',', '')} trials" in plan(*shlex.split(overrides)), overrides


def test_the_demo_runs_the_methods_the_readme_lists() -> None:
    """"runs every method of the figure (public, SSP, AdaSSP, DP-SGD, DD-SSP, AIM-Synth)"."""
    listed = re.search(r"runs every method of the figure \(([^)]*)\)", README.replace("\n", " "))
    assert listed, "the README no longer lists the demo's methods"
    said = plan(*demo_commands()[0][1:])
    methods = re.search(r"methods:\s+(.*)", said).group(1)
    labels = {"public": "public", "SSP": "ssp", "AdaSSP": "adassp", "DP-SGD": "dpsgd_lin",
              "DD-SSP": "ddssp", "AIM-Synth": "aim_synth"}
    names = [m.split(" (")[0] for m in methods.split(", ")]
    for label in (s.strip() for s in listed.group(1).split(",")):
        assert any(n == labels[label] or n.startswith(labels[label] + "_") for n in names), \
            (label, names)


def test_the_arena_boards_trials_per_cell_are_what_plan_prints() -> None:
    """The README's arena lines ("Trials: default profile, 3 trials per cell; ..."): each
    arena's default grid."""
    stated = re.search(r"Trials: default profile, (\d+) trials per cell", README)
    assert stated, "the README no longer states the boards' trials per cell"
    for arena in ("arena_classification", "arena_regression", "arena_synthetic"):
        assert f"trials per cell: {stated.group(1)}" in plan(f"experiment={arena}"), arena
