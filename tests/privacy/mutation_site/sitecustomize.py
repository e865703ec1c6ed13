"""Plant ``$DPBENCH_MUTATION`` in every Python process started under a mutation run.

mutation_plugin.py puts this folder (and ``tests/privacy``) on the ``PYTHONPATH`` of the
processes the tests start (CLI runs, loky workers), so Python imports this module at start-up,
before any dpbench module, and the planted bug is in those processes too. A no-op without
``$DPBENCH_MUTATION``. Any other ``sitecustomize`` further on ``sys.path`` (e.g. Debian's)
still runs after it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows, if there is one."""
    rest = [p for p in sys.path if p and Path(p).resolve() != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def _plant() -> None:
    if str(_HERE.parent) not in sys.path:
        sys.path.append(str(_HERE.parent))
    import mutation_hook

    mutation_hook.install_from_env()


_plant()
_chain()
