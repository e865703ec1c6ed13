"""Architecture rules of dpbench, checked on its source text and import graph.

- dpbench/report/ is generic: no paper's, dataset family's or method's name anywhere in it
  (code, comments, docstrings); papers live in papers/<paper>/ and conf/, not in the report.
- No import cycle among dpbench modules, function-level imports included; a string naming a
  dpbench module (``lazy.module("dpbench.a.b")``, entry.COMMANDS' ``module:function``) is an
  import too.
- Imports of dpbench modules are at the top of a module: at most
  :data:`MAX_FUNCTION_LEVEL_IMPORTS` (0) in function bodies; a dependency that is costly to
  import and needed by some calls only is declared there with :mod:`dpbench.lazy`.
- Tasks import no method module but the outputs contract, whose ``TASK_KINDS`` they are
  built from.
- The layers (docs/architecture.md, "Layers"): report/ imports no dpbench.methods module (it
  reads results frames, not models); the workspace imports neither the CLI nor the site;
  the site imports nothing from the CLI; nothing below the commands imports the workspace.
- Every other generic package and module (runner, tasks, the workspace, the CLI, the
  site, the catalogue, the entry point, the empirical audit and its statistics, the
  caches) names no paper, dataset family or method; the mentions there today are listed in
  KNOWN_GENERIC_MENTIONS, a ratchet: a new one fails, and so does a listed one that is gone
  (remove it from the list). The method names are every method yaml's (the first word of
  its name, the generic words of :data:`COMMON_WORDS` aside), so a new paper's methods are
  known without this file changing; the paper names are papers/'s folders.

Names match as whole words, case-insensitively, with ``_`` and ``-`` as separators
(``binagg_fig1`` and ``AIM-Synth`` match; ``claim`` or ``maim`` do not match ``aim``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PKG = REPO / "dpbench"

#: first words of method yaml names that are ordinary English (or generic statistics), not
#: a method's name: a baseline called ``mean`` does not make every "mean" in the code a
#: mention of it
COMMON_WORDS = {"independent", "majority", "mean", "original", "public", "uniform", "printed",
                "minimax", "nondp"}
PAPERS = sorted({p.name for p in (REPO / "papers").iterdir() if p.is_dir()}
                | {"dd-ssp", "kulkarni"})
DATASETS = ["adult", "acs", "folktables", "pima", "diabetes", "liver", "compas"]
METHODS = sorted({p.stem.split("_")[0] for p in (REPO / "conf" / "method").rglob("*.yaml")}
                 - COMMON_WORDS | {"dp-sgd", "privtree"})
NAMES = sorted(set(PAPERS + DATASETS + METHODS))

#: the generic code checked for names: every package and top-level module of dpbench but the
#: ones that implement papers (methods, data, privacy mechanisms) and report/ (checked alone,
#: with no exception)
GENERIC = ["runner", "tasks", "audit", "site", "privacy/lower_bound.py", "workspace.py",
           "cli.py", "catalog.py", "entry.py", "roots.py", "compile_cache.py",
           "program_store.py", "checksum.py", "cache_check.py", "artifacts.py", "lazy.py",
           "listing.py", "envnumber.py"]

# generic code that mentions a name today: (file, name) -> to be fixed
KNOWN_GENERIC_MENTIONS = {
    ("dpbench/cli.py", "adult"),            # help / docstring example experiment=linreg_adult
    ("dpbench/entry.py", "adult"),          # the overrides' help: e.g. experiment=linreg_adult
    ("dpbench/compile_cache.py", "aim"),    # the caches' docstrings measure on AIM's programs
    ("dpbench/compile_cache.py", "mst"),
    ("dpbench/compile_cache.py", "dd-ssp"),
    ("dpbench/compile_cache.py", "adult"),
    ("dpbench/program_store.py", "aim"),
}

WORD = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, NAMES)) + r")(?![A-Za-z0-9])",
                  re.IGNORECASE)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _source_files(*parts: str) -> list[Path]:
    out = []
    for part in parts:
        base = PKG / part
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        out += [f for f in files if f.is_file() and "__pycache__" not in f.parts]
    return out


def _mentions(files: list[Path]) -> dict[tuple[str, str], list[str]]:
    """(file, name) -> the lines naming it."""
    found: dict[tuple[str, str], list[str]] = {}
    for f in files:
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for m in WORD.finditer(line):
                found.setdefault((_rel(f), m.group(1).lower()), []).append(
                    f"{_rel(f)}:{i}: {line.strip()}")
    return found


def test_the_names_include_every_papers_methods() -> None:
    """The lists are read from conf/ and papers/: the names the issue found missed (PATE in
    report/) and each paper's own methods are among them."""
    for name in ("pate", "mwem", "pep", "gem", "rap", "dualquery", "binagg", "bayesglm",
                 "aim", "mst", "qr", "exrisk"):
        assert name in NAMES, name
    assert not COMMON_WORDS & set(NAMES)


def test_every_module_is_checked_or_implements_a_paper() -> None:
    """Each top-level package or module of dpbench is checked for names (report/ and
    :data:`GENERIC`) or is one whose job is a paper's contents (methods, data, privacy)."""
    implements = {"methods", "data", "privacy", "estimators.py", "__init__.py"}
    checked = {g.split("/")[0] for g in GENERIC} | {"report"}
    tops = {p.name for p in PKG.iterdir() if p.name != "__pycache__"
            and (p.is_dir() or p.suffix == ".py") and not p.name.startswith(".")}
    assert tops - checked - implements == set(), tops - checked - implements


def test_report_names_no_paper_dataset_or_method() -> None:
    found = _mentions(_source_files("report"))
    assert not found, "\n".join(ln for lines in found.values() for ln in lines)


def test_generic_layers_name_no_paper_dataset_or_method() -> None:
    found = _mentions(_source_files(*GENERIC))
    new = {k: v for k, v in found.items() if k not in KNOWN_GENERIC_MENTIONS}
    gone = KNOWN_GENERIC_MENTIONS - set(found)
    assert not new, "new mentions in generic code:\n" + "\n".join(
        ln for lines in new.values() for ln in lines)
    assert not gone, f"fixed, remove from KNOWN_GENERIC_MENTIONS: {sorted(gone)}"


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(f): f for f in PKG.rglob("*.py")}


#: a string naming a dpbench module (``dpbench.a.b``) or an object in one (``dpbench.a.b:f``):
#: a deferred import (``lazy.module("dpbench.a.b")``) or a registry's target (entry.COMMANDS)
TARGET = re.compile(r"(dpbench(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?")


def _imports(module: str, path: Path) -> set[str]:
    """dpbench modules imported anywhere in the file (function bodies too): ``from a.b import
    c`` is a.b.c if that is a module, else a.b; relative imports resolved; a string that is a
    module's name (or ``module:name``) is an import too: :mod:`dpbench.lazy`'s deferred
    imports and the registries that name what to import (:data:`TARGET`)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = TARGET.fullmatch(node.value)
            names = [m.group(1)] if m else []
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = f"{pkg}.{base}" if base else pkg
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        for name in names:
            if name != "dpbench" and not name.startswith("dpbench."):
                continue
            while name not in MODULES and "." in name:
                name = name.rpartition(".")[0]
            if name != module:
                out.add(name)
    return out


GRAPH = {m: _imports(m, f) for m, f in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_import_graph_is_read() -> None:
    # the checks below are only as good as the graph: it must see known edges
    assert "dpbench.runner.schema" in GRAPH["dpbench.cli"]
    assert "dpbench.privacy.accountant" in GRAPH["dpbench.methods.base"]
    assert any("dpbench.report" in t for t in GRAPH["dpbench.cli"])  # function-level import


def test_no_import_cycle() -> None:
    cycles = _cycles()
    assert not cycles, "\n".join(
        " <-> ".join(c) + "\n  " + "\n  ".join(f"{m} -> {sorted(GRAPH[m] & set(c))}" for m in c)
        for c in cycles)


def test_report_imports_no_method_module() -> None:
    bad = {m: sorted(t for t in ts if t == "dpbench.methods" or t.startswith("dpbench.methods."))
           for m, ts in GRAPH.items() if m.startswith("dpbench.report")}
    assert not any(bad.values()), {m: ts for m, ts in bad.items() if ts}


#: the layers, lowest first: a module may import its own layer's modules and those below,
#: never above (docs/architecture.md, "Layers"); a prefix names a package or a module
LAYERS = [
    ["dpbench", "dpbench.roots", "dpbench.checksum", "dpbench.cache_check",
     "dpbench.compile_cache", "dpbench.program_store", "dpbench.artifacts", "dpbench.lazy"],
    ["dpbench.privacy", "dpbench.data", "dpbench.estimators"],
    ["dpbench.methods"],
    ["dpbench.tasks"],
    ["dpbench.runner"],
    ["dpbench.report"],
    ["dpbench.workspace", "dpbench.catalog"],
    ["dpbench.site", "dpbench.cli", "dpbench.listing", "dpbench.audit"],
    ["dpbench.entry"],
]
#: imports against the layers today (importer, imported), a ratchet as
#: KNOWN_GENERIC_MENTIONS: a new one fails, and so does a listed one that is gone
KNOWN_BACK_ARROWS: set[tuple[str, str]] = set()
#: pairs of one layer that must not import each other (the site is not built on the CLI)
FORBIDDEN = [("dpbench.site", "dpbench.cli"), ("dpbench.site", "dpbench.entry")]


def _layer(module: str) -> int:
    found = [i for i, prefixes in enumerate(LAYERS) for p in prefixes
             if module == p or module.startswith(p + ".")]
    assert found, f"{module} is in no layer: add it to LAYERS (and docs/architecture.md)"
    return max(found)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_every_import_goes_down_the_layers() -> None:
    up = {(m, t) for m, ts in GRAPH.items() for t in ts if _layer(t) > _layer(m)}
    new, gone = up - KNOWN_BACK_ARROWS, KNOWN_BACK_ARROWS - up
    assert not new, f"imports against the layers: {sorted(new)}"
    assert not gone, f"fixed, remove from KNOWN_BACK_ARROWS: {sorted(gone)}"
    bad = sorted((m, t) for m, ts in GRAPH.items() for t in ts for a, b in FORBIDDEN
                 if _under(m, a) and _under(t, b))
    assert not bad, bad


def test_the_site_and_the_workspace_are_not_built_on_the_cli() -> None:
    """The issue's rule in its own words: site/ imports nothing from cli, and the
    workspace neither the CLI nor the site (function-level imports included)."""
    for m, ts in GRAPH.items():
        if _under(m, "dpbench.site") or m == "dpbench.workspace":
            assert not {t for t in ts if t in ("dpbench.cli", "dpbench.entry")
                        or _under(t, "dpbench.site") and not _under(m, "dpbench.site")}, m


#: the task modules' imports of method modules other than the outputs contract, a ratchet
#: (a task depends on what methods output, not on a method)
KNOWN_TASK_METHOD_IMPORTS: set[tuple[str, str]] = set()


def test_the_tasks_are_built_from_the_outputs_contract() -> None:
    """Each task scores the kinds ``outputs.TASK_KINDS`` names for it (the registry the
    methods read, so a generator knows the tasks it serves without importing the tasks),
    and the two name the same tasks."""
    from dpbench.methods.outputs import TASK_KINDS, kinds_of
    from dpbench.tasks import TASKS

    assert list(TASKS) == list(TASK_KINDS)
    assert all(TASKS[name].kinds == kinds_of(name) for name in TASKS)


def test_tasks_depend_on_the_outputs_contract() -> None:
    found = {(m, t) for m, ts in GRAPH.items() if _under(m, "dpbench.tasks") for t in ts
             if _under(t, "dpbench.methods") and t != "dpbench.methods.outputs"}
    assert found - KNOWN_TASK_METHOD_IMPORTS == set(), found - KNOWN_TASK_METHOD_IMPORTS
    assert KNOWN_TASK_METHOD_IMPORTS - found == set(), KNOWN_TASK_METHOD_IMPORTS - found


def _function_level_imports() -> list[str]:
    """``file:line`` of each import of a dpbench module (relative ones included) in a
    function body: an edge of the graph that the module's imports do not show."""
    out = []
    for f in sorted(PKG.rglob("*.py")):
        funcs = [n for n in ast.walk(ast.parse(f.read_text()))
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)]
        seen: set[int] = set()
        for fn in funcs:
            for node in ast.walk(fn):
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, ast.ImportFrom) and (
                        node.level or (node.module or "").split(".")[0] == "dpbench") or \
                        isinstance(node, ast.Import) and any(
                            a.name.split(".")[0] == "dpbench" for a in node.names):
                    out.append(f"{_rel(f)}:{node.lineno}")
    return out


#: the most function-level imports of dpbench modules allowed (issue 59's goal: 20), a
#: ratchet: lower it as they go. A dependency that is costly to import and needed by some
#: calls only is declared at the top with :func:`dpbench.lazy.module` instead (an edge the
#: graph above sees); one that breaks a cycle is a layering problem to fix.
MAX_FUNCTION_LEVEL_IMPORTS = 0


def test_function_level_imports_are_few() -> None:
    found = _function_level_imports()
    assert len(found) <= MAX_FUNCTION_LEVEL_IMPORTS, (
        f"{len(found)} function-level imports of dpbench modules (at most "
        f"{MAX_FUNCTION_LEVEL_IMPORTS}):\n" + "\n".join(found))


def test_every_registry_target_is_there() -> None:
    """Each ``module:name`` a registry names (entry.COMMANDS' commands, entry's one-line
    errors) is an attribute of an importable module: entry imports them by name only."""
    import importlib

    targets = {node.value for f in MODULES.values() for node in ast.walk(ast.parse(
        f.read_text())) if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and ":" in node.value and TARGET.fullmatch(node.value)}
    assert "dpbench.cli:run" in targets and "dpbench.runner.schema:ConfigError" in targets
    missing = [t for t in sorted(targets) if not hasattr(
        importlib.import_module(t.partition(":")[0]), t.partition(":")[2])]
    assert not missing, missing


def test_every_named_target_is_a_module() -> None:
    """Each deferred import names a module that exists, dpbench's or an installed
    library's (a typo would otherwise fail only when a fit, or a command, first reads it)."""
    import importlib.util

    bad = []
    for m, f in MODULES.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "module" and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "lazy":
                arg = node.args[0]
                name = arg.value if isinstance(arg, ast.Constant) else None
                if not isinstance(name, str) or not (
                        name in MODULES if name.startswith("dpbench")
                        else importlib.util.find_spec(name) is not None):
                    bad.append(f"{m}: {ast.unparse(node)}")
    assert not bad, bad
