"""The catalogue of planted privacy bugs (mutations.yaml) is current, and its machinery works.

Fast: no mutant of dpbench is run here (``make audit-mutations`` does that). Checked: the
catalogue parses with unique ids; every ``old`` occurs exactly once in its module's current
source and the mutated module compiles (else the entry is stale: a refactor moved the line,
and the entry must follow it); every selector names a test file and function that exist;
and the import hook really plants a mutation, in process and in a child pytest run, on a
throwaway module, without writing bytecode, and refuses a stale one loudly.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mutation_hook as hook
import pytest

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = hook.load_catalogue(hook.CATALOGUE)


def _runner():
    """scripts/audit_mutations.py as a module."""
    if "audit_mutations" in sys.modules:
        return sys.modules["audit_mutations"]
    spec = importlib.util.spec_from_file_location("audit_mutations",
                                                  REPO / "scripts" / "audit_mutations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit_mutations"] = module          # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def test_catalogue_parses_with_unique_ids() -> None:
    assert CATALOGUE, "the catalogue is empty"
    ids = [m.id for m in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert all(m.why.strip() and "\n" not in m.why.strip() for m in CATALOGUE)


@pytest.mark.parametrize("mutation", CATALOGUE, ids=lambda m: m.id)
def test_old_text_occurs_exactly_once(mutation: hook.Mutation) -> None:
    path = hook.source_file(mutation.module)
    assert path.is_relative_to(REPO / "dpbench"), path
    mutation.apply(path.read_text(), str(path))      # MutationError says what is stale


def _defined(path: Path) -> set[str]:
    """``name`` and ``Class::method`` of every test function and class in ``path``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            names |= {f"{node.name}::{f.name}" for f in node.body
                      if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    return names


def _selectors() -> Iterator[tuple[str, str]]:
    for m in CATALOGUE:
        for sel in m.tests:
            yield m.id, sel


@pytest.mark.parametrize(("mutation_id", "selector"), list(_selectors()),
                         ids=[f"{m}:{s}" for m, s in _selectors()])
def test_selector_names_an_existing_test(mutation_id: str, selector: str) -> None:
    args = shlex.split(selector)
    node, options = args[0], args[1:]
    assert not options or options[0] in ("-k", "-m"), (selector, "options: -k or -m only")
    entry = next(m for m in CATALOGUE if m.id == mutation_id)
    assert not options or len(entry.tests) == 1, "a -k selector must be the entry's only one"
    file, _, name = node.partition("::")
    path = REPO / file
    assert path.is_file() and path.name.startswith("test_"), f"{file}: no such test file"
    if name:
        assert name.split("[")[0] in _defined(path), f"{file} defines no test {name}"


def test_parametrised_selectors_collect() -> None:
    """A parameter id (``test_x[mst_synth]``) is checked by pytest itself: one collection of
    every such node id, which exits 4 (``not found``) when an id no longer exists (a
    renamed yaml or parameter), so ``make audit-mutations`` never runs an empty selector."""
    nodes = sorted({sel for _, sel in _selectors() if "[" in sel and " " not in sel})
    assert nodes, "no parametrised selector: this test checks nothing"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist", *nodes],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    collected = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    assert len(collected) == len(nodes), (sorted(set(nodes) - set(collected)), collected)


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package ``dpbench_mutation_probe`` in ``tmp_path`` (on sys.path) with one module."""
    pkg = tmp_path / "dpbench_mutation_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("SCALE = 1.0\n\n\ndef noise_sd(sigma):\n"
                                "    return SCALE * sigma\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)    # install() turns it on
    yield pkg
    for name in [n for n in sys.modules if n.startswith("dpbench_mutation_probe")]:
        del sys.modules[name]


def _probe(old: str, new: str, mid: str = "probe") -> hook.Mutation:
    return hook.Mutation(mid, "dpbench_mutation_probe.mod", old, new, "test", ("x",))


def test_hook_plants_the_mutation_in_process_without_bytecode(throwaway: Path) -> None:
    finder = hook.install(_probe("return SCALE * sigma", "return 0.7 * SCALE * sigma"))
    sys.dont_write_bytecode = False         # the loader itself must not write it either
    try:
        mod = importlib.import_module("dpbench_mutation_probe.mod")
    finally:
        hook.uninstall(finder)
    assert mod.noise_sd(1.0) == pytest.approx(0.7)
    assert getattr(mod, hook.MARKER) == "probe"
    assert "0.7 * SCALE" in mod.__loader__.get_source(mod.__name__)
    assert (throwaway / "mod.py").read_text().count("0.7") == 0       # the file is untouched
    assert not list(throwaway.rglob("mod*.pyc")), "a mutated module's bytecode was written"


def test_hook_refuses_stale_text_and_a_module_imported_before_it(throwaway: Path) -> None:
    finder = hook.install(_probe("return SIGMA", "return 0"))
    try:
        with pytest.raises(hook.MutationError, match="occurs 0 times.*stale"):
            importlib.import_module("dpbench_mutation_probe.mod")
    finally:
        hook.uninstall(finder)
    importlib.import_module("dpbench_mutation_probe.mod")
    with pytest.raises(hook.MutationError, match="imported before the hook"):
        hook.install(_probe("return SCALE * sigma", "return 0"))
    assert hook.installed() is None


def test_catalogue_rejects_malformed_entries(tmp_path: Path) -> None:
    entry = ("- {id: a, module: m, old: x, new: y, why: w, tests: [t]}\n")
    path = tmp_path / "c.yaml"
    path.write_text(entry * 2)
    with pytest.raises(hook.MutationError, match="used twice"):
        hook.load_catalogue(path)
    path.write_text("- {id: a, module: m, old: x, new: x, why: w, tests: [t]}\n")
    with pytest.raises(hook.MutationError, match="same as old"):
        hook.load_catalogue(path)
    path.write_text("- {id: a, module: m, old: x, new: y, tests: [t]}\n")
    with pytest.raises(hook.MutationError, match="missing"):
        hook.load_catalogue(path)


def test_runner_classifies_caught_missed_and_stale(tmp_path: Path) -> None:
    """End to end on a throwaway project: the runner's child pytest plants each mutation
    through the plugin; a failing test is caught, a passing one missed, stale text and a
    module no test imports are errors (not caught)."""
    (tmp_path / "probe_mod.py").write_text("def sd(sigma):\n    return sigma\n")
    (tmp_path / "test_probe.py").write_text(textwrap.dedent("""
        import subprocess, sys

        def test_sd():
            from probe_mod import sd
            assert sd(2.0) == 2.0

        def test_sd_in_a_subprocess():
            code = "import probe_mod; print(probe_mod.sd(2.0))"
            out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                 text=True, check=True).stdout
            assert out.strip() == "2.0"

        def test_nothing():
            pass
        """))
    entries = [
        ("caught", "return sigma", "return 0.7 * sigma", "test_probe.py::test_sd"),
        ("caught_in_subprocess", "return sigma", "return 0.7 * sigma",
         "test_probe.py::test_sd_in_a_subprocess"),
        ("missed", "return sigma", "return 1.0 * sigma", "test_probe.py::test_sd"),
        ("stale", "return SIGMA", "return 0", "test_probe.py::test_sd"),
        ("never_planted", "return sigma", "return 0", "test_probe.py::test_nothing"),
    ]
    catalogue = tmp_path / "catalogue.yaml"
    catalogue.write_text("".join(
        f"- {{id: {i}, module: probe_mod, old: '{o}', new: '{n}', why: w, tests: ['{t}']}}\n"
        for i, o, n, t in entries))
    runner = _runner()

    def run(m: hook.Mutation) -> tuple[str, str]:
        code, out, _ = runner.run_child(list(m.tests), mutation_id=m.id, timeout=60,
                                        cwd=tmp_path, catalogue=catalogue)
        return runner.classify(code), out

    with ThreadPoolExecutor(max_workers=2) as pool:      # ~1.5 s of pytest start-up each
        got = dict(zip([i for i, *_ in entries],
                       pool.map(run, hook.load_catalogue(catalogue)), strict=True))
    assert {k: v[0] for k, v in got.items()} == {
        "caught": "caught", "caught_in_subprocess": "caught", "missed": "missed",
        "stale": "error", "never_planted": "error"}, got
    assert "stale" in got["stale"][1] and "never planted" in got["never_planted"][1]
    assert not list(tmp_path.rglob("*.pyc")), "a child wrote bytecode"
