"""Planted privacy bugs applied in process: the catalogue and the import hook that plants one.

The catalogue (``mutations.yaml`` next to this file; docs/mutations.md) lists one-line
mutations of dpbench's privacy-critical source, each with the tests that must fail when it
is applied. A mutation is planted by an import hook, as mutmut and cosmic-ray do it: a
:class:`MutationFinder` first on ``sys.meta_path`` hands the named module to a
:class:`MutatingLoader`, which reads the module's real source, replaces the entry's ``old``
text (which must occur exactly once) by ``new`` and compiles that. Every importer of the
module in that process then runs the mutated code; no file on disk changes and no ``.pyc``
of the mutated module is written, so a later normal run can never load it.

:func:`install_from_env` plants the mutation named by ``$DPBENCH_MUTATION`` (catalogue:
``$DPBENCH_MUTATION_CATALOGUE``, default ``mutations.yaml``): the pytest plugin
(mutation_plugin.py) calls it in the test process, and ``mutation_site/sitecustomize.py``
(on ``PYTHONPATH``) in every Python subprocess the tests start. Each process that plants it,
or fails to, writes a note into ``$DPBENCH_MUTATION_REPORT`` (a folder), so the plugin can
tell "planted and the tests passed" (missed) from "never planted" (an error).

This module imports nothing of dpbench (and neither pytest), so it can run before them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import yaml

#: the id of the mutation to plant in this process and its subprocesses
ENV = "DPBENCH_MUTATION"
#: another catalogue than :data:`CATALOGUE` (tests of the machinery use a throwaway one)
CATALOGUE_ENV = "DPBENCH_MUTATION_CATALOGUE"
#: a folder where every process notes that it planted the mutation, or why it could not
REPORT_ENV = "DPBENCH_MUTATION_REPORT"
CATALOGUE = Path(__file__).resolve().with_name("mutations.yaml")
#: the attribute a planted module carries: the mutation's id
MARKER = "__dpbench_mutation__"
FIELDS = ("id", "module", "old", "new", "why", "tests")


class MutationError(RuntimeError):
    """The catalogue is malformed or stale, or a mutation cannot be planted. Not an
    ImportError on purpose: code that tolerates a missing optional import must not
    swallow it."""


@dataclass(frozen=True)
class Mutation:
    """One planted bug: replace ``old`` (exactly once) by ``new`` in ``module``'s source."""

    id: str
    module: str
    old: str
    new: str
    why: str
    tests: tuple[str, ...]

    def apply(self, source: str, where: str = "") -> str:
        """``source`` with ``old`` replaced by ``new``; MutationError unless ``old`` occurs
        exactly once (the catalogue is stale) or the result does not compile."""
        count = source.count(self.old)
        if count != 1:
            raise MutationError(
                f"mutation {self.id!r}: its old text occurs {count} times in {self.module} "
                f"({where or 'source'}), not exactly once: the catalogue is stale. old:\n"
                f"{self.old}")
        mutated = source.replace(self.old, self.new)
        try:
            compile(mutated, where or self.module, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise MutationError(f"mutation {self.id!r}: {self.module} does not compile "
                                f"with it: {exc}") from exc
        return mutated


def _mutation(raw: object, index: int) -> Mutation:
    if not isinstance(raw, dict):
        raise MutationError(f"catalogue entry {index}: a mapping with {', '.join(FIELDS)}, "
                            f"not {type(raw).__name__}")
    name = raw.get("id", f"#{index}")
    missing = [f for f in FIELDS if f not in raw]
    extra = sorted(set(raw) - set(FIELDS))
    if missing or extra:
        raise MutationError(f"catalogue entry {name!r}: missing {missing}, unknown {extra}")
    for f in FIELDS[:-1]:
        if not isinstance(raw[f], str) or (f != "new" and not raw[f].strip()):
            raise MutationError(f"catalogue entry {name!r}: {f} must be a non-empty string")
    tests = raw["tests"]
    if (not isinstance(tests, list) or not tests
            or not all(isinstance(t, str) and t.strip() for t in tests)):
        raise MutationError(f"catalogue entry {name!r}: tests must be a non-empty list of "
                            "pytest selectors")
    if raw["old"] == raw["new"]:
        raise MutationError(f"catalogue entry {name!r}: new is the same as old")
    return Mutation(raw["id"], raw["module"], raw["old"], raw["new"], raw["why"],
                    tuple(tests))


def load_catalogue(path: str | Path | None = None) -> list[Mutation]:
    """The catalogue's entries in order (``path``: default ``$DPBENCH_MUTATION_CATALOGUE``
    or :data:`CATALOGUE`); MutationError on a malformed entry or a repeated id."""
    path = Path(path or os.environ.get(CATALOGUE_ENV) or CATALOGUE)
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, list):
        raise MutationError(f"{path}: the catalogue is a list of entries")
    entries = [_mutation(r, i) for i, r in enumerate(raw)]
    seen: set[str] = set()
    for m in entries:
        if m.id in seen:
            raise MutationError(f"{path}: id {m.id!r} is used twice")
        seen.add(m.id)
    return entries


def find(mutation_id: str, path: str | Path | None = None) -> Mutation:
    """The catalogue entry ``mutation_id`` (MutationError naming the valid ids)."""
    entries = load_catalogue(path)
    for m in entries:
        if m.id == mutation_id:
            return m
    raise MutationError(f"no mutation {mutation_id!r} in the catalogue; valid: "
                        f"{', '.join(m.id for m in entries)}")


def source_file(module: str) -> Path:
    """The ``.py`` file of ``module`` (dotted), found the way Python would find it but
    without importing it or its packages; MutationError if it has no source file."""
    parts = module.split(".")
    spec = None
    search: list[str] | None = None
    for i in range(len(parts)):
        name = ".".join(parts[:i + 1])
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise MutationError(f"module {module!r}: {name} not found")
        search = list(spec.submodule_search_locations or [])
    assert spec is not None
    if not (spec.origin and spec.origin.endswith(".py")):
        raise MutationError(f"module {module!r} has no Python source ({spec.origin})")
    return Path(spec.origin)


def _note(kind: str, text: str) -> None:
    """Write ``<kind>-<pid>`` with ``text`` into ``$DPBENCH_MUTATION_REPORT`` if set."""
    folder = os.environ.get(REPORT_ENV)
    if folder and Path(folder).is_dir():
        (Path(folder) / f"{kind}-{os.getpid()}").write_text(text)


class MutatingLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from its source file with one mutation applied; never reads or writes
    bytecode, so the mutated code exists in this process only."""

    def __init__(self, fullname: str, path: str, mutation: Mutation) -> None:
        super().__init__(fullname, path)
        self.mutation = mutation

    def get_source(self, fullname: str) -> str:
        """The mutated source (tracebacks and ``inspect`` in-process see what runs)."""
        try:
            return self.mutation.apply(super().get_source(fullname), self.path)
        except MutationError as exc:
            _note("error", str(exc))
            raise

    def get_code(self, fullname: str) -> object:
        """Compile the mutated source; no cached ``.pyc`` is read or written."""
        return compile(self.get_source(fullname), self.path, "exec", dont_inherit=True)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        """Write nothing (SourceLoader would cache bytecode here)."""

    def exec_module(self, module: ModuleType) -> None:
        setattr(module, MARKER, self.mutation.id)
        super().exec_module(module)
        _note("planted", f"{self.mutation.id} {self.mutation.module} {self.path}")


class MutationFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: finds the mutated module with the finders after it and
    gives it a :class:`MutatingLoader`; every other module is left to them."""

    def __init__(self, mutation: Mutation) -> None:
        self.mutation = mutation

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.mutation.module:
            return None
        spec = None
        for finder in sys.meta_path:
            if isinstance(finder, MutationFinder) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or not (spec.origin and spec.origin.endswith(".py")):
            msg = (f"mutation {self.mutation.id!r}: {fullname} has no Python source to "
                   f"mutate ({spec.origin if spec else 'not found'})")
            _note("error", msg)
            raise MutationError(msg)
        return importlib.util.spec_from_file_location(
            fullname, spec.origin, loader=MutatingLoader(fullname, spec.origin, self.mutation),
            submodule_search_locations=spec.submodule_search_locations)


def installed() -> MutationFinder | None:
    """The finder planting a mutation in this process, if any."""
    return next((f for f in sys.meta_path if isinstance(f, MutationFinder)), None)


def install(mutation: Mutation) -> MutationFinder:
    """Plant ``mutation`` for every later import in this process: MutationError if its
    module is imported already (it would keep the real code) or another mutation is
    planted. Turns off bytecode writing for this process, as a second guard."""
    current = installed()
    if current is not None:
        if current.mutation == mutation:
            return current
        raise MutationError(f"mutation {current.mutation.id!r} is planted already; one per "
                            "process")
    if mutation.module in sys.modules:
        msg = (f"mutation {mutation.id!r}: {mutation.module} was imported before the hook "
               "was installed, so it would run unmutated")
        _note("error", msg)
        raise MutationError(msg)
    sys.dont_write_bytecode = True
    finder = MutationFinder(mutation)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: MutationFinder) -> None:
    """Remove ``finder`` (a module it mutated stays mutated in ``sys.modules``)."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def install_from_env() -> MutationFinder | None:
    """Plant the mutation ``$DPBENCH_MUTATION`` names (None when unset)."""
    mutation_id = os.environ.get(ENV, "").strip()
    if not mutation_id:
        return None
    try:
        return install(find(mutation_id))
    except MutationError as exc:
        _note("error", str(exc))
        raise
