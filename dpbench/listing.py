"""``dpbench list``: each experiment, method and dataset with what it serves, as plain lines.

The rows are the catalogue's (:mod:`dpbench.catalog`, read from the yamls and the method
classes' contracts); this module prints them. It imports neither Hydra nor the workspace nor
the report, so the command answers at about the cost of reading the yamls and the method
classes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dpbench import catalog


def listing(args: argparse.Namespace) -> int:
    """``dpbench list``."""
    return cmd_list(args.what)


def cmd_list(groups: Sequence[str]) -> int:
    """Print each group (dpbench/catalog.py): one line per entry, its facts after its name
    (plain lines, readable at any terminal width and by grep); an unknown group is one line
    on stderr and exit status 2."""
    try:
        tables = [(g, catalog.listing(g)) for g in groups]
    except ValueError as exc:
        print(f"dpbench: error: {exc}", file=sys.stderr)
        return 2
    for group, rows in tables:
        print(f"{group} ({len(rows)}):")
        width = max(len(next(iter(r.values()))) for r in rows)
        for row in rows:
            name, *facts = row.items()
            print(f"  {name[1]:<{width}}  " + "; ".join(f"{k}: {v}" for k, v in facts))
    return 0
