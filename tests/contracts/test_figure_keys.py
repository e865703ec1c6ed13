"""Every figure kind declares the spec keys it reads (``KEYS`` in its module), every shipped
figure spec uses only those, and a spec with another key is refused in one line before any
trial runs (a typo in a figure spec was once silently ignored)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from dpbench.report.build import COMMON_KEYS, check_figure
from dpbench.report.kinds import KEYS, KINDS
from dpbench.runner.grid import load_entry
from dpbench.runner.schema import ConfigError, choices


def test_each_kind_declares_every_key_its_module_reads() -> None:
    for kind, fn in KINDS.items():
        source = Path(sys.modules[fn.__module__].__file__).read_text()
        read = set(re.findall(r'fig(?:\.get\(|\[)"([a-z_]+)"', source))
        assert read - COMMON_KEYS <= KEYS[kind], (kind, sorted(read - COMMON_KEYS - KEYS[kind]))


def shipped_specs() -> list[dict]:
    specs = [{"name": n, **load_entry("figure", n)} for n in choices("figure")]
    for name in choices("experiment"):
        figures = (load_entry("experiment", name).get("experiment") or {}).get("figures") or []
        specs += [f for f in figures if isinstance(f, dict)]
    return specs


def test_every_shipped_figure_spec_is_valid() -> None:
    specs = shipped_specs()
    assert len(specs) > 20
    for spec in specs:
        check_figure(spec)


def test_an_unknown_key_or_kind_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"figure 'f' \(metric_vs_eps\): unknown key 'ylabl' "
                                          r"\(did you mean 'ylabel'\?\); valid: "):
        check_figure({"kind": "metric_vs_eps", "name": "f", "metric": "mse", "ylabl": "MSE"})
    with pytest.raises(ConfigError, match="unknown kind 'metric_vs_epsilon'"):
        check_figure({"kind": "metric_vs_epsilon", "name": "f"})


def test_run_refuses_a_bad_figure_spec_before_any_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpbench.entry import main

    code = main(["run", "experiment=linreg_adult", "profile=smoke", f"results_dir={tmp_path}",
                 "methods=[public]", "+experiment.figures=[{kind: metric_vs_eps, name: x, "
                 "metric: mse, ylabl: MSE}]"])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown key 'ylabl' (did you mean 'ylabel'?)" in err and err.count("\n") == 1, err
    assert not (tmp_path / "store" / "trials").exists() or \
        not any((tmp_path / "store" / "trials").rglob("*.json"))


def test_the_keys_read_without_drawing_are_the_kinds_own() -> None:
    """report.figure_keys reads each kind's KEYS from its source (so plan imports no
    plotting): the same kinds, modules and keys as the imported report.kinds."""
    from dpbench.report.figure_keys import MODULES, declared_keys

    assert MODULES == {k: fn.__module__.rsplit(".", 1)[1] for k, fn in KINDS.items()}
    assert declared_keys() == KEYS
