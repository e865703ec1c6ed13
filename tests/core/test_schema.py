"""The one schema (dpbench/runner/schema.py): a composed config becomes typed specs or one
line naming the bad value and what is valid; the grid expander refuses through it.

Each case changes one value of a config that is valid as composed, so a check removed from
the schema lets its case through and the test fails. Every shipped experiment passes the
schema at the smoke and default profiles: tests/core/test_identity.py expands them all.
"""

from __future__ import annotations

import ast
import copy
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from dpbench.report.figure_keys import check_figure, declared_keys
from dpbench.runner.grid import expand_cells
from dpbench.runner.schema import (
    ArenaSpec,
    ConfigError,
    FigureSpec,
    RunConfig,
    figure_spec,
    run_config,
    top_level_keys,
)
from dpbench.workspace import compose_config


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    """linreg_adult's composed config as plain data."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(compose_config(["experiment=linreg_adult"]))


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``base`` with the dotted key ``path`` set to ``value`` (a copy)."""
    out = copy.deepcopy(base)
    node = out
    *parents, last = path.split(".")
    for p in parents:
        node = node[p]
    node[last] = value
    return out


def refusal(cfg: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as exc:
        run_config(cfg)
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


#: (dotted key, bad value, what the one line must hold: the value named, then what is valid)
CASES = [
    # unknown keys, the valid ones named
    ("epsilonz", [1.0], ["'epsilonz'", "valid: ", "epsilons"]),
    ("experiment.nope", 1, ["experiment: unknown key 'nope'", "valid: ", "task_params"]),
    ("experiment.task_parms", {}, ["'task_parms'", "(did you mean 'task_params'?)"]),
    ("profile.nope", 1, ["profile: unknown key 'nope'", "max_epsilons"]),
    # wrong types
    ("trials", "abc", ["trials='abc' is invalid", "whole number >= 1"]),
    ("trials", 1.5, ["trials=1.5 is invalid"]),
    ("trials", True, ["trials=True is invalid"]),
    ("profile.trials", 0, ["profile.trials=0 is invalid", ">= 1"]),
    ("profile.max_epsilons", "x", ["profile.max_epsilons='x' is invalid"]),
    ("profile.dataset_epsilons", 3, ["profile.dataset_epsilons=3 is invalid", "a mapping"]),
    ("experiment.task_params", 3, ["experiment.task_params=3 is invalid", "a mapping"]),
    ("experiment.figures", "mse_vs_eps", ["experiment.figures='mse_vs_eps' is invalid",
                                          "a list"]),
    ("experiment.figures", ["nope"], ["unknown figure 'nope'", "mse_vs_eps"]),
    ("experiment.arena", "yes", ["experiment.arena='yes' is invalid", "true or false"]),
    ("experiment.baselines", ["mean"], ["experiment.baselines=['mean'] is invalid",
                                        "arena"]),
    ("time_limit_s", -1, ["time_limit_s=-1 is invalid", "> 0"]),
    ("time_limit_s", "abc", ["time_limit_s='abc' is invalid"]),
    ("runner.n_jobs", 0, ["runner.n_jobs=0 is invalid", "or -1"]),
    ("runner.n_jobs", 100000, ["runner.n_jobs=100000 is invalid", "<= "]),
    # names
    ("experiment.task", "nope", ["unknown task 'nope'", "regression"]),
    ("experiment.relation", "swap", ["unknown experiment.relation 'swap'", "add_remove"]),
    ("budget_unit", "nope", ["unknown budget_unit 'nope'", "epsilon, mu, rho"]),
    ("datasets", ["nope"], ["unknown dataset 'nope'", "adult"]),
    ("methods", ["sspp"], ["unknown method 'sspp'", "(did you mean 'ssp'?)"]),
    ("methods", [[1, 2]], ["methods[0]=[1, 2] is invalid", "a name or"]),
    ("profile.sweep_points", {"nope": 1}, ["profile.sweep_points names 'nope'"]),
    # axes and sweeps
    ("epsilons", [], ["epsilons=[] is invalid", "at least one value"]),
    ("epsilons", None, ["epsilons is not set"]),
    ("method_sweep", 3, ["method_sweep=3 is invalid", "map parameter names"]),
    ("method_sweep", {"x": []}, ["method_sweep.x=[] is invalid"]),
    # epsilon <= 0, not finite, not a number
    ("epsilons", [0], ["epsilon=0 is invalid", "> 0"]),
    ("epsilons", [1.0, -1], ["epsilon=-1 is invalid", "> 0"]),
    ("epsilons", [math.nan], ["epsilon=nan is invalid"]),
    ("epsilons", [math.inf], ["epsilon=inf is invalid"]),
    ("epsilons", ["abc"], ["epsilon='abc' is invalid"]),
    ("epsilons", [True], ["epsilon=True is invalid"]),
    # delta outside (0, 1)
    ("delta", 0, ["delta=0 is invalid", "(0, 1)"]),
    ("delta", 1, ["delta=1 is invalid", "(0, 1)"]),
    ("delta", 2.0, ["delta=2.0 is invalid", "(0, 1)"]),
    ("delta", -0.1, ["delta=-0.1 is invalid", "(0, 1)"]),
    ("delta", "n**2", ["delta='n**2' is invalid", "(0, 1)"]),
    ("delta", "nope", ["delta='nope' is invalid", "not a valid rule in n"]),
    ("delta", "1/(n-n)", ["delta='1/(n-n)' is invalid"]),
]


@pytest.mark.parametrize(("key", "value", "must"), CASES,
                         ids=[f"{k}={v!r}"[:60] for k, v, _ in CASES])
def test_a_bad_value_is_one_line_naming_it_and_the_valid_choices(
        plain: dict[str, Any], key: str, value: Any, must: list[str]) -> None:
    msg = refusal(_with(plain, key, value))
    for text in must:
        assert text in msg, (text, msg)


def test_the_composed_config_is_typed(plain: dict[str, Any]) -> None:
    run = run_config(plain)
    assert isinstance(run, RunConfig)
    assert run.experiment.name == "linreg_adult" and run.experiment.task == "regression"
    assert run.experiment.arena is None
    assert all(isinstance(e, float | int) and e > 0 for e in run.epsilons)
    assert run.trials == plain["trials"] and run.budget_unit == "epsilon"
    assert run.profile.name == "default" and run.runner.n_jobs == plain["runner"]["n_jobs"]
    # a rule in n is a delta too; a profile's trials cap the experiment's
    assert run_config(_with(plain, "delta", "n**-1.1")).delta == "n**-1.1"
    assert run_config(_with(plain, "profile.trials", 2)).trials == 2


def test_an_arena_has_its_arena_spec() -> None:
    from omegaconf import OmegaConf

    arena = OmegaConf.to_container(compose_config(["experiment=arena_regression"]))
    run = run_config(arena)
    assert isinstance(run.experiment.arena, ArenaSpec)
    assert run_config(_with(arena, "experiment.baselines", ["mean"])).experiment.arena == \
        ArenaSpec(baselines=("mean",))


#: figure specs missing a field, of an unknown kind, with a key the kind does not read
FIGURES = [
    ({"name": "f"}, ["figure 'f': kind is not set", "a kind and a name"]),
    ({"kind": "metric_vs_eps"}, ["name is not set", "'kind': 'metric_vs_eps'"]),
    ({"kind": "metric_vs_epsilon", "name": "f"},
     ["figure 'f': unknown kind 'metric_vs_epsilon'", "(did you mean 'metric_vs_eps'?)",
      "valid: ", "bars"]),
    ({"kind": "metric_vs_eps", "name": "f", "metric": "mse", "ylabl": "MSE"},
     ["figure 'f' (metric_vs_eps): unknown key 'ylabl'", "(did you mean 'ylabel'?)"]),
]


@pytest.mark.parametrize(("fig", "must"), FIGURES, ids=[str(f)[:50] for f, _ in FIGURES])
def test_a_bad_figure_spec_is_one_line(fig: dict[str, Any], must: list[str]) -> None:
    for check in (lambda f: figure_spec(f, declared_keys()), check_figure):
        with pytest.raises(ConfigError) as exc:
            check(fig)
        msg = str(exc.value)
        assert "\n" not in msg
        for text in must:
            assert text in msg, (text, msg)


def test_a_figure_spec_is_typed() -> None:
    spec = check_figure({"kind": "metric_vs_eps", "name": "f", "metric": "mse",
                         "ylabel": "MSE", "title": "T"})
    assert isinstance(spec, FigureSpec)
    assert (spec.kind, spec.name, spec.title) == ("metric_vs_eps", "f", "T")
    assert spec.keys == {"metric": "mse", "ylabel": "MSE"}


def test_an_inline_figure_without_a_kind_is_refused_by_the_schema() -> None:
    from dpbench.workspace import figure_specs

    cfg = compose_config(["experiment=linreg_adult", "+experiment.figures=[{name: x}]"])
    with pytest.raises(ConfigError, match="figure 'x': kind is not set"):
        figure_specs(cfg)


def test_the_expander_refuses_through_the_schema(plain: dict[str, Any]) -> None:
    """expand_cells checks its config with run_config first: the same line either way."""
    from omegaconf import OmegaConf

    bad = _with(plain, "delta", 2.0)
    with pytest.raises(ConfigError) as direct:
        run_config(bad)
    with pytest.raises(ConfigError) as expanded:
        expand_cells(OmegaConf.create(bad))
    assert str(expanded.value) == str(direct.value)


@pytest.mark.parametrize(("override", "must"), [
    ("+profile.dataset_epsilons={nope: [1.0]}",
     ["profile.dataset_epsilons names 'nope', which is not among the experiment's datasets",
      "valid: adult"]),
    ("+profile.dataset_epsilons={adult: [123.0]}",
     ["profile.dataset_epsilons.adult=[123.0] is invalid", "keeps none of the grid's"]),
])
def test_what_only_the_expansion_sees_is_refused_in_the_schemas_wording(
        override: str, must: list[str]) -> None:
    cfg = compose_config(["experiment=linreg_adult", override])
    with pytest.raises(ConfigError) as exc:
        expand_cells(cfg)
    msg = str(exc.value)
    assert "\n" not in msg
    for text in must:
        assert text in msg, (text, msg)


def test_the_top_level_keys_are_the_root_configs() -> None:
    keys = top_level_keys()
    assert {"experiment", "profile", "runner", "epsilons", "delta", "trials"} <= set(keys)


def test_the_expander_imports_at_most_one_dpbench_module_in_a_function() -> None:
    """grid.py's imports of dpbench modules are at its top (issue 59: function-level imports
    only where a cycle forces one)."""
    tree = ast.parse(Path(REPO / "dpbench" / "runner" / "grid.py").read_text())
    inner = [node.module for fn in ast.walk(tree)
             if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
             for node in ast.walk(fn)
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpbench")]
    assert len(inner) <= 1, inner


def test_the_fast_yaml_loader_reads_every_shipped_yaml_as_omegaconf_does() -> None:
    """``schema.yaml_loader`` (libyaml's parser under OmegaConf's rules) gives OmegaConf's
    values for every yaml of the repository, and refuses what OmegaConf refuses."""
    import yaml
    from omegaconf._utils import get_yaml_loader

    from dpbench.runner.schema import yaml_loader

    slow, fast = get_yaml_loader(), yaml_loader()
    files = [f for d in ("conf", "data", "papers") for f in sorted((REPO / d).rglob("*.yaml"))]
    assert len(files) > 100
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=fast) == yaml.load(text, Loader=slow), f
    odd = "a: 1e-5\nb: .inf\nc: 2001-12-14\nd: 1_000\ne: 0x1f\nf: yes\n"
    assert yaml.load(odd, Loader=fast) == yaml.load(odd, Loader=slow) == {
        "a": 1e-5, "b": math.inf, "c": "2001-12-14", "d": 1000, "e": 31, "f": True}
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key"):
        yaml.load("a: 1\na: 2\n", Loader=fast)
