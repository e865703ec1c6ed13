"""Plant each privacy bug of the catalogue and check that its tests fail (``make audit-mutations``).

The catalogue is tests/privacy/mutations.yaml (docs/mutations.md). For each entry (or the ids
named on the command line) a child ``python -m pytest -x -q`` runs the entry's tests with the
mutation planted in process by tests/privacy/mutation_plugin.py (an import hook: no file is
edited). The entry is

- CAUGHT when its tests fail (pytest exit status 1),
- MISSED when they pass (0): the suite would not notice this privacy bug,
- ERROR otherwise: its ``old`` text is stale, it never reached an import, a selector names
  no test, the child timed out (``--timeout``) or crashed. Never counted as caught.

First every entry is checked without running anything (``old`` occurs exactly once in its
module's source and the mutated module compiles), then the union of all entries' tests is
run once unmutated: they must pass, else a failure under a mutation would prove nothing.

The unmutated run uses ``--jobs`` xdist workers when it has :data:`XDIST_FROM` node ids or
more (fewer are quicker in one process than on workers that each import dpbench and its
libraries); a mutant's run uses none (the planted bug lives in the child's process). Each
child runs on its own temporary pytest basetemp and JAX program cache
(``DPBENCH_PROGRAM_CACHE_DIR``; a traced program is keyed by its inputs, not its code, so a
mutated one must never reach a cache that a later run reads), without bytecode writing and
without pytest's cache; the folders are deleted afterwards.

Prints one line per mutation (id, caught / missed / error, seconds) and ``caught N of M``;
exits 0 only when every mutation was caught (1: some missed or in error; 2: the catalogue
or the unmutated run is broken). ``--jobs`` children run at once (default 2).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOK_DIR = ROOT / "tests" / "privacy"
sys.path.insert(0, str(HOOK_DIR))

import mutation_hook as hook  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn  # noqa: E402

CAUGHT, MISSED, ERROR = "caught", "missed", "error"
#: seconds a child may take (one mutation's tests) before it is stopped and in error
DEFAULT_TIMEOUT = 900.0
#: lines of a child's output shown under an entry in error or missed
TAIL = 25
#: node ids from which the unmutated run is spread over xdist workers
XDIST_FROM = 16
#: variables a child must not inherit: they would point it at shared folders
DROP_ENV = ("DPBENCH_SMOKE_RESULTS", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")


@dataclass(frozen=True)
class Outcome:
    """What one child run gave."""

    id: str
    status: str
    seconds: float
    returncode: int | None
    output: str


def static_check(entry: hook.Mutation) -> str | None:
    """Why ``entry`` cannot be planted, read from its module's source without importing
    it (None: ``old`` occurs exactly once and the mutated module compiles)."""
    try:
        path = hook.source_file(entry.module)
        entry.apply(path.read_text(), str(path))
    except (hook.MutationError, OSError) as exc:
        return str(exc)
    return None


def selector_args(selectors: Iterable[str]) -> list[list[str]]:
    """Each selector as pytest arguments: a node id, or a node id with options
    (``path::test -k expr``), split as a shell would."""
    return [shlex.split(s) for s in selectors]


def child_env(tmp: Path, mutation_id: str | None, catalogue: Path | None) -> dict[str, str]:
    """The environment of one child run: the mutation, this catalogue, the plugin's folder
    on PYTHONPATH, a JAX program cache of its own under ``tmp``, no bytecode writing."""
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env.pop(hook.ENV, None)
    env.pop(hook.REPORT_ENV, None)
    if mutation_id:
        env[hook.ENV] = mutation_id
        (tmp / "report").mkdir(exist_ok=True)      # gone with tmp, even if the child is killed
        env[hook.REPORT_ENV] = str(tmp / "report")
    if catalogue:
        env[hook.CATALOGUE_ENV] = str(catalogue)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HOOK_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cache = str(tmp / "cache")
    env["DPBENCH_PROGRAM_CACHE_DIR"] = env["DPBENCH_CACHE_DIR"] = cache
    return env


def pytest_command(args: Sequence[str], basetemp: Path, *, mutated: bool = True,
                   workers: int = 1) -> list[str]:
    """The child's command: pytest, quiet, no cache, the mutation plugin. A mutant's run
    stops at its first failure and runs without xdist (the planted bug lives in that
    process); the unmutated run shows every failure, on ``workers`` xdist workers."""
    spread = (["-n", str(workers), "--dist", "loadgroup"] if workers > 1 and not mutated
              else ["-p", "no:xdist"])
    return [sys.executable, "-m", "pytest", *(["-x"] if mutated else []), "-q",
            "-p", "no:cacheprovider", *spread, "-p", "mutation_plugin",
            f"--basetemp={basetemp}", *args]


def run_child(args: Sequence[str], *, mutation_id: str | None, timeout: float,
              cwd: Path = ROOT, catalogue: Path | None = None,
              workers: int = 1) -> tuple[int | None, str, float]:
    """Run pytest on ``args`` (with ``mutation_id`` planted; unmutated on ``workers``
    xdist workers) in a temporary folder that is deleted afterwards: (exit status, None
    on timeout; output; seconds)."""
    tmp = Path(tempfile.mkdtemp(prefix="dpbench-mutant-"))
    start = time.monotonic()
    try:
        command = pytest_command(args, tmp / "basetemp", mutated=mutation_id is not None,
                                 workers=workers)
        proc = subprocess.Popen(command, cwd=cwd, env=child_env(tmp, mutation_id, catalogue),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)      # the child and what it started
            out, _ = proc.communicate()
            code, out = None, out + f"\n(stopped after {timeout:g} s)"
        return code, out, time.monotonic() - start
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def classify(code: int | None) -> str:
    """caught (tests failed: 1), missed (passed: 0), error (anything else)."""
    return {1: CAUGHT, 0: MISSED}.get(code, ERROR) if code is not None else ERROR


def run_mutation(entry: hook.Mutation, *, timeout: float, cwd: Path = ROOT,
                 catalogue: Path | None = None) -> Outcome:
    """Plant ``entry`` in a child pytest run of its tests and classify the result."""
    problem = static_check(entry)
    if problem:
        return Outcome(entry.id, ERROR, 0.0, None, problem)
    args = [a for sel in selector_args(entry.tests) for a in sel]
    if any(a.startswith("-") for a in args) and len(entry.tests) > 1:
        return Outcome(entry.id, ERROR, 0.0, None,
                       "a selector with options (-k ...) must be the entry's only one")
    code, out, seconds = run_child(args, mutation_id=entry.id, timeout=timeout, cwd=cwd,
                                   catalogue=catalogue)
    return Outcome(entry.id, classify(code), seconds, code, out)


def baseline(entries: Sequence[hook.Mutation], *, timeout: float, cwd: Path = ROOT,
             catalogue: Path | None = None, workers: int = 1
             ) -> list[tuple[str, int | None, str, float]]:
    """Run every entry's tests unmutated: plain node ids together in one run, each selector
    with options in its own; the first on ``workers`` xdist workers from :data:`XDIST_FROM`
    node ids. Returns the failing runs (label, exit status, output, seconds)."""
    plain: list[str] = []
    optioned: list[list[str]] = []
    for entry in entries:
        for args in selector_args(entry.tests):
            if len(args) == 1:
                plain.extend(a for a in args if a not in plain)
            elif args not in optioned:
                optioned.append(args)
    runs = ([plain] if plain else []) + optioned
    failed = []
    for args in runs:
        spread = workers if args is plain and len(args) >= XDIST_FROM else 1
        code, out, seconds = run_child(args, mutation_id=None, timeout=timeout, cwd=cwd,
                                       catalogue=catalogue, workers=spread)
        if code != 0:
            label = " ".join(args) if len(args) < 6 else f"{len(args)} selectors"
            failed.append((label, code, out, seconds))
    return failed


def tail(text: str, n: int = TAIL) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()[-n:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="the catalogue ids to plant (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="child runs at once (2)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds per mutation ({DEFAULT_TIMEOUT:g})")
    parser.add_argument("--catalogue", type=Path, default=None,
                        help="another catalogue than tests/privacy/mutations.yaml")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="do not check first that the tests pass unmutated")
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    parser.add_argument("--verbose", action="store_true",
                        help="show every child's output, not only an error's")
    opts = parser.parse_args(argv)
    began = time.monotonic()
    console = Console(highlight=False, soft_wrap=True)
    catalogue = opts.catalogue.resolve() if opts.catalogue else None

    try:
        entries = hook.load_catalogue(catalogue)
    except (hook.MutationError, OSError) as exc:
        console.print(f"[red]catalogue: {exc}[/red]")
        return 2
    unknown = sorted(set(opts.ids) - {e.id for e in entries})
    if unknown:
        console.print(f"[red]not in the catalogue: {', '.join(unknown)}[/red]")
        return 2
    if opts.ids:
        entries = [e for e in entries if e.id in opts.ids]
    if opts.list:
        for e in entries:
            console.print(f"{e.id}  {e.module}  {e.why}")
        return 0

    stale = [(e.id, p) for e in entries if (p := static_check(e))]
    for mid, problem in stale:
        console.print(f"[red]{mid}: {problem}[/red]")
    if stale:
        console.print(f"[red]{len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'}: "
                      "fix the catalogue (docs/mutations.md)[/red]")
        return 2

    if not opts.skip_baseline:
        start = time.monotonic()
        with console.status("unmutated run of every entry's tests"):
            failed = baseline(entries, timeout=opts.timeout, catalogue=catalogue,
                              workers=opts.jobs)
        for label, code, out, _ in failed:
            console.print(f"[red]unmutated: {label} exit {code}[/red]\n{tail(out)}")
        if failed:
            console.print("[red]the tests must pass without a mutation; fix them first[/red]")
            return 2
        console.print(f"unmutated: every entry's tests pass ({time.monotonic() - start:.1f} s)")

    outcomes: list[Outcome] = []
    style = {CAUGHT: "green", MISSED: "yellow", ERROR: "red"}
    width = max(len(e.id) for e in entries)
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("planting", total=len(entries))
        with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            futures = {pool.submit(run_mutation, e, timeout=opts.timeout,
                                   catalogue=catalogue): e for e in entries}
            for fut in as_completed(futures):
                o = fut.result()
                outcomes.append(o)
                progress.console.print(
                    f"{o.id:<{width}}  [{style[o.status]}]{o.status:<6}[/]  {o.seconds:6.1f} s")
                if o.status == ERROR or opts.verbose:
                    progress.console.print(tail(o.output, 10**6 if opts.verbose else TAIL))
                progress.advance(task)

    caught = sum(o.status == CAUGHT for o in outcomes)
    missed = [o.id for o in outcomes if o.status == MISSED]
    errors = [o.id for o in outcomes if o.status == ERROR]
    console.print(f"caught {caught} of {len(outcomes)}"
                  + (f"; missed: {', '.join(missed)}" if missed else "")
                  + (f"; error: {', '.join(errors)}" if errors else "")
                  + f" ({time.monotonic() - began:.0f} s in all, {opts.jobs} jobs)")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
