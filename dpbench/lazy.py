"""Deferred imports, declared with a module's other imports.

``engine = lazy.module("dpbench.methods.x.engine")`` at the top of a module names a
dependency that is imported the first time one of its attributes is read
(``engine.fit(...)``): a dependency that costs a second or more (JAX, NumPyro, torch, mbi,
pandas, matplotlib) and that only some calls need. The planning commands import every method
class to check its contract, and ``dpbench list`` reads it, without importing what a fit
runs; a command imports the report's drawing code only when it draws.

The declarations are imports all the same: the architecture test
(tests/contracts/test_architecture.py) reads each ``lazy.module("...")`` as an edge of the
import graph (the layers and the no-cycle rule apply to it), and counts them. An import
statement inside a function body is what this replaces: the dependency is stated once, at
the top, where a reader looks for it.

Why not the standard library's ``importlib.util.LazyLoader``: it puts a placeholder module
into ``sys.modules`` at declaration, so every other importer of that module, anywhere in
the process, gets the deferred object too (a global side effect, and one the stdlib docs
advise against for general use); a :class:`Deferred` is local to the module that declares
it, and everyone else imports as usual.
"""

from __future__ import annotations

import importlib
from typing import Any


class Deferred:
    """A module imported on first attribute access (then an ordinary lookup in
    ``sys.modules`` per access: microseconds)."""

    __slots__ = ("_name",)      # no other attribute: every name is the module's

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<deferred module {self._name!r}>"


def module(name: str) -> Any:
    """The module ``name`` (absolute, e.g. ``dpbench.methods.bayes.sampling``), imported
    when one of its attributes is first read."""
    return Deferred(name)
