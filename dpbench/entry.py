"""The ``dpbench`` command's entry point, kept light so that it answers at once.

It pins XLA to one thread, re-executes with a fixed ``PYTHONHASHSEED`` (both from
``compile_cache``, which imports only the standard library) and parses the command line
before anything heavy is imported: ``--help``, ``--version`` and a usage error cost no
import of Hydra, pandas, JAX or torch, and the re-execution no longer pays for them twice.
The commands themselves are in :mod:`dpbench.cli` (imported only to run one).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

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
             "dpbench.cli:listing"),
            ("audit", "empirical lower bound on a mechanism's epsilon (conf/audit/)",
             "dpbench.entry:_audit"),
            ("compare", "your trials against the reference results, cell by cell",
             "dpbench.cli:compare")]


class _Version(argparse.Action):
    """``--version``: the text is computed only when asked for (it runs git)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kw: object) -> None:
        from dpbench.roots import version_text

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

    As the command (``argv`` None) it first re-executes itself with ``PYTHONHASHSEED=0``
    when the variable is unset (compile_cache.reexec_with_hash_seed: same pid, exit status
    and streams), so trials run in this process and in its workers and SLURM tasks find
    the compiled JAX programs of other processes; a user-set ``PYTHONHASHSEED`` is kept.
    It also runs XLA on one thread unless ``NPROC`` is set (compile_cache.pin_xla_threads):
    results independent of the worker and core count, one core per worker."""
    from dpbench import compile_cache

    compile_cache.pin_xla_threads()      # before any JAX computation; workers inherit it
    if argv is None:
        compile_cache.reexec_with_hash_seed()
    args = parser().parse_args(argv)
    import importlib

    from dpbench.cli import dispatch

    module, _, function = next(t for n, _, t in COMMANDS if n == args.command).partition(":")
    return dispatch(args, getattr(importlib.import_module(module), function))


def _audit(args: argparse.Namespace) -> int:
    """``dpbench audit`` (its module imported only for this command)."""
    from dpbench.audit.command import cmd_audit

    return cmd_audit(args.overrides)


if __name__ == "__main__":
    import sys

    sys.exit(main())
