"""Tasks: how a fitted method is scored. ``TASKS[name](model, split) -> metrics``."""

from __future__ import annotations

from collections.abc import Callable

from dpbench.data.base import Split
from dpbench.methods.base import Method
from dpbench.tasks import classification, inference, posterior, regression, synthetic_utility

Evaluate = Callable[[Method, Split], dict[str, float]]

TASKS: dict[str, Evaluate] = {
    "regression": regression.evaluate,
    "classification": classification.evaluate,
    "inference": inference.evaluate,
    "synthetic_utility": synthetic_utility.evaluate,
    "posterior": posterior.evaluate,
}
