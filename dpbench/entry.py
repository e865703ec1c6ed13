"""The ``dpbench`` command's entry point, kept light so that it answers at once.

It pins XLA to one thread, parses the command line and (for a command that may run a
mechanism) re-executes with a fixed ``PYTHONHASHSEED`` (both from ``compile_cache``, which
imports only the standard library) before anything heavy is imported: ``--help``,
``--version`` and a usage error cost no import of Hydra, pandas, JAX or torch, and the
re-execution no longer pays for them twice.
The commands themselves are in the modules :data:`COMMANDS` names (:mod:`dpbench.cli`,
:mod:`dpbench.listing`, the site's and the audit's), imported by name only to run one: a
command imports what it needs, and ``dpbench list`` neither Hydra nor the report.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from dpbench import compile_cache
from dpbench.roots import version_text

#: (subcommand, one-line help, what runs it: ``module:function`` taking the parsed
#: arguments), in the order ``--help`` lists them: the one registry of commands (the
#: module is imported only to run its command)
COMMANDS = [("run", "run (or resume) an experiment's grid", "dpbench.cli:run"),
            ("plan", "show the grid: trial counts, done / to do", "dpbench.cli:plan"),
            ("status", "done / failed / pending per dataset, method and epsilon",
             "dpbench.cli:status"),
            ("figures", "build every figure and table from stored results",
             "dpbench.cli:figures"),
            ("compact", "write the store as one parquet file", "dpbench.cli:compact"),
            ("leaderboard", "build the boards of the arena experiments",
             "dpbench.cli:leaderboard"),
            ("site", "build the static results site (results/site/index.html)",
             "dpbench.site.command:site"),
            ("list", "experiments, methods and datasets, with what each serves",
             "dpbench.listing:listing"),
            ("audit", "empirical lower bound on a mechanism's epsilon (conf/audit/)",
             "dpbench.audit.command:audit"),
            ("compare", "your trials against the reference results, cell by cell",
             "dpbench.cli:compare")]

#: the errors a bad input raises (``module:class``), said in one line with exit status 2:
#: looked up only once a command failed, in the modules it imported (an error class whose
#: module was never imported cannot have been raised), so naming them imports nothing
ONE_LINE_ERRORS = ("dpbench.workspace:UserError", "dpbench.data.files:DataError",
                   "dpbench.runner.schema:ConfigError")
#: the commands that run no mechanism and start no worker, so no compiled program is looked
#: up: they print what they found without re-executing for a fixed hash seed (~0.1 s)
NO_HASH_SEED = ("plan", "status", "list")
#: SIGTERM, as the local runner raises it (``module:class``)
TERMINATED = "dpbench.runner.local:Terminated"


class _Version(argparse.Action):
    """``--version``: the text is computed only when asked for (it runs git)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kw: object) -> None:
        print(version_text())            # on stdout, as argparse's own version action
        parser.exit()


def parser() -> argparse.ArgumentParser:
    """The command line: one subparser per :data:`COMMANDS` entry, each taking Hydra
    overrides (``list`` takes the groups to list)."""
    p = argparse.ArgumentParser(prog="dpbench", description="dpbench: reproduce five "
                                "differential-privacy papers and compare their methods")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and commit")
    sub = p.add_subparsers(dest="command", required=True)
    for name, text, _ in COMMANDS:
        s = sub.add_parser(name, help=text)
        if name == "list":
            s.add_argument("what", nargs="*", default=["experiments", "methods", "datasets"],
                           help="experiments, methods and/or datasets (default: all three)")
            continue
        if name == "audit":
            s.add_argument("overrides", nargs="*", help="method=<name> (or all), eps=, "
                           "samples=, delta=, alpha=, seed=, progress=true|false")
            continue
        s.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. experiment=linreg_adult")
        if name == "status":
            s.add_argument("--versions", action="store_true",
                           help="also list the library versions the stored trials ran with")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The ``dpbench`` command (``argv`` None: ``sys.argv``).

    As the command (``argv`` None) it re-executes itself with ``PYTHONHASHSEED=0`` when
    the variable is unset (compile_cache.reexec_with_hash_seed: same pid, exit status and
    streams), so trials run in this process and in its workers and SLURM tasks find the
    compiled JAX programs of other processes; a user-set ``PYTHONHASHSEED`` is kept, and
    the :data:`NO_HASH_SEED` commands answer in the first process.
    It also runs XLA on one thread unless ``NPROC`` is set (compile_cache.pin_xla_threads):
    results independent of the worker and core count, one core per worker."""
    compile_cache.pin_xla_threads()      # before any JAX computation; workers inherit it
    args = parser().parse_args(argv)
    if argv is None and args.command not in NO_HASH_SEED:
        compile_cache.reexec_with_hash_seed()
    return dispatch(args, command(args.command))


def command(name: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs command ``name`` (:data:`COMMANDS`' target), its module
    imported now."""
    module, _, function = next(t for n, _, t in COMMANDS if n == name).partition(":")
    return getattr(importlib.import_module(module), function)


def _loaded(target: str) -> type | None:
    """The class ``module:class`` if its module is imported, else None."""
    module, _, name = target.partition(":")
    return getattr(sys.modules[module], name, None) if module in sys.modules else None


def dispatch(args: argparse.Namespace, command: Callable[[argparse.Namespace], int]) -> int:
    """Run ``command`` on ``args``: a bad input (:data:`ONE_LINE_ERRORS`) is one line on
    stderr and exit status 2; an interruption says that finished trials are stored."""
    try:
        return command(args)
    except KeyboardInterrupt:
        print("dpbench: interrupted; finished trials are stored, rerun to resume", file=sys.stderr)
        return 130
    except BaseException as exc:
        terminated = _loaded(TERMINATED)
        if terminated is not None and isinstance(exc, terminated):
            print("dpbench: terminated (SIGTERM); workers stopped, finished trials are stored, "
                  "rerun to resume", file=sys.stderr)
            return 128 + 15
        if any(cls is not None and isinstance(exc, cls) for cls in map(_loaded, ONE_LINE_ERRORS)):
            print(f"dpbench: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
