"""The progress bar of every long-running command (rich), in a module of its own: a
command that may show one need not import the local runner (joblib, the trial code)."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(disable: bool = False) -> Progress:
    """The progress bar used by every long-running command."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                    TimeRemainingColumn(), disable=disable)
