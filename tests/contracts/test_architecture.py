"""Architecture rules of dpbench, checked on its source text and import graph.

- dpbench/report/ is generic: no paper's, dataset family's or method's name anywhere in it
  (code, comments, docstrings); papers live in papers/<paper>/ and conf/, not in the report.
- No import cycle among dpbench modules, function-level imports included.
- dpbench/report/ imports no dpbench.methods module (it reads results frames, not models).
- The other generic layers (runner, tasks, cli, the empirical audit and its statistics)
  name no paper, dataset family or method; the mentions there today are listed in
  KNOWN_GENERIC_MENTIONS, a ratchet: a new one fails, and so does a listed one that is gone
  (remove it from the list).

Names match as whole words, case-insensitively, with ``_`` and ``-`` as separators
(``binagg_fig1`` and ``AIM-Synth`` match; ``claim`` or ``maim`` do not match ``aim``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PKG = REPO / "dpbench"

PAPERS = ["ddssp", "dd-ssp", "binagg", "bayesglm", "kulkarni"]
DATASETS = ["adult", "acs", "folktables", "pima", "diabetes", "liver"]
METHODS = ["objpert", "adassp", "ssp", "aim", "mst", "dpsgd", "dp-sgd", "dpgd", "jlt",
           "privtree"]
NAMES = PAPERS + DATASETS + METHODS

# generic code outside report/ that mentions a name today: (file, name) -> to be fixed
KNOWN_GENERIC_MENTIONS = {
    ("dpbench/cli.py", "adult"),            # help / docstring example experiment=linreg_adult
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


def test_report_names_no_paper_dataset_or_method() -> None:
    found = _mentions(_source_files("report"))
    assert not found, "\n".join(ln for lines in found.values() for ln in lines)


def test_generic_layers_name_no_paper_dataset_or_method() -> None:
    found = _mentions(_source_files("runner", "tasks", "cli.py", "audit",
                                    "privacy/lower_bound.py"))
    new = {k: v for k, v in found.items() if k not in KNOWN_GENERIC_MENTIONS}
    gone = KNOWN_GENERIC_MENTIONS - set(found)
    assert not new, "new mentions in generic code:\n" + "\n".join(
        ln for lines in new.values() for ln in lines)
    assert not gone, f"fixed, remove from KNOWN_GENERIC_MENTIONS: {sorted(gone)}"


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(f): f for f in PKG.rglob("*.py")}


def _imports(module: str, path: Path) -> set[str]:
    """dpbench modules imported anywhere in the file (function bodies too): ``from a.b import
    c`` is a.b.c if that is a module, else a.b; relative imports resolved."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
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
    assert "dpbench.runner.grid" in GRAPH["dpbench.cli"]
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
