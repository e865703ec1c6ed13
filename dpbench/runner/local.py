"""Local backend: joblib worker processes, a progress bar, results written by the workers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from joblib import Parallel, delayed
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dpbench.runner.execute import run_trial
from dpbench.runner.spec import TrialSpec


def progress_bar(disable: bool = False) -> Progress:
    """The progress bar used by every long-running command."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                    TimeRemainingColumn(), disable=disable)


def run_local(specs: Sequence[TrialSpec], store_root: str, *, n_jobs: int = 1,
              progress: bool = True, trace_memory: bool = False,
              description: str = "trials") -> Counter[str]:
    """Run ``specs`` (already filtered to pending ones) and return counts by status.

    With ``n_jobs == 1`` trials run in this process; otherwise in joblib's loky
    worker processes. Each worker writes its own result file, so killing this
    process at any point loses at most the trials in flight.
    """
    counts: Counter[str] = Counter()
    with progress_bar(disable=not progress) as bar:
        task = bar.add_task(description, total=len(specs), status="")
        if n_jobs == 1:
            results = (run_trial(s, store_root, trace_memory=trace_memory) for s in specs)
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered", batch_size=1)(
                delayed(run_trial)(s.to_dict(), store_root, trace_memory=trace_memory)
                for s in specs)
        for status in results:
            counts[status] += 1
            bar.update(task, advance=1,
                       status=" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return counts
