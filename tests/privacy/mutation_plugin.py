"""pytest plugin: run the tests with the planted privacy bug ``$DPBENCH_MUTATION`` applied.

Load it with ``-p mutation_plugin`` (``tests/privacy`` on ``PYTHONPATH``): pytest imports a
``-p`` plugin before conftest files and installed plugins, so the import hook
(mutation_hook.py) is on ``sys.meta_path`` before any dpbench module is imported, and every
importer in this process sees the mutated module. Python subprocesses the tests start get it
too: this plugin puts ``mutation_site`` (whose sitecustomize.py plants it again) on their
``PYTHONPATH``. Run it without pytest-xdist (``-p no:xdist``: the mutation lives in this
process); scripts/audit_mutations.py does all of this.

At the session's end the run is an error (exit status 3, whatever the tests did) when the
mutation was never planted (no process imported its module) or could not be planted (its
``old`` text is stale, the module was imported too early): neither may count as caught or
missed. Without ``$DPBENCH_MUTATION`` the plugin does nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import mutation_hook as hook
import pytest

SITE = Path(__file__).resolve().with_name("mutation_site")
_state: dict[str, object] = {}


def _start() -> None:
    """Install the hook (now, at plugin import) and prepare the subprocesses' environment."""
    if not os.environ.get(hook.ENV, "").strip():
        return
    mutation = hook.find(os.environ[hook.ENV].strip())      # an unknown id stops pytest here
    _state["mutation"] = mutation
    if not os.environ.get(hook.REPORT_ENV):                  # the runner gives its own
        folder = tempfile.mkdtemp(prefix="dpbench-mutation-")
        os.environ[hook.REPORT_ENV] = folder
        _state["own_report"] = folder
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    extra = [p for p in (str(SITE), str(SITE.parent)) if p not in paths]
    os.environ["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, paths)])
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    hook.install(mutation)


_start()


def pytest_report_header(config: pytest.Config) -> str | None:
    mutation = _state.get("mutation")
    if isinstance(mutation, hook.Mutation):
        return f"planted privacy bug: {mutation.id} in {mutation.module} ({mutation.why})"
    return None


def pytest_configure(config: pytest.Config) -> None:
    if "mutation" in _state and config.pluginmanager.hasplugin("xdist") \
            and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("mutation_plugin: run without pytest-xdist (-p no:xdist): "
                                "the planted bug lives in this process")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Exit status 3 when the mutation was not planted (module never imported, or an
    error planting it), with the reason on the terminal."""
    mutation = _state.get("mutation")
    if not isinstance(mutation, hook.Mutation):
        return
    folder = Path(os.environ[hook.REPORT_ENV])
    errors = [p.read_text() for p in sorted(folder.glob("error-*"))]
    planted = list(folder.glob("planted-*"))
    problem = None
    if errors:
        problem = "could not be planted:\n" + "\n".join(errors)
    elif not planted:
        problem = (f"was never planted: no process imported {mutation.module} (do its tests "
                   "run that code?)")
    if problem:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = f"MUTATION ERROR: {mutation.id} {problem}"
        if reporter is not None:
            reporter.write_line(text, red=True, bold=True)
        else:
            print(text)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    if "own_report" in _state:
        shutil.rmtree(str(_state["own_report"]), ignore_errors=True)
