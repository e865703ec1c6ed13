"""``dpbench list``: every experiment, method and dataset, with what each serves.

Read from the yamls and the method classes' declared contracts (``Method.tasks_scored``,
``requires``, ``produces``, ``neighbours``, ``accounting``) and the datasets' ``tasks`` and
``provides``: the same facts the grid checks, so the list is what ``plan`` would accept.
"""

from __future__ import annotations

from typing import Any

from dpbench.runner.execute import import_object
from dpbench.runner.grid import (
    _merged_params,
    arena_members,
    arena_role,
    dataset_provides,
    experiment_entry,
    load_entry,
)
from dpbench.runner.schema import ARENA_AXIS, choices, entries, entry_name

GROUPS = ("experiments", "methods", "datasets")


def experiments() -> list[dict[str, str]]:
    """Name, paper (or ``arena``), task and datasets / methods of each experiment, as the
    composed config has them (its ``defaults`` merged: :func:`grid.experiment_entry`)."""
    out = []
    for name in choices("experiment"):
        entry = experiment_entry(name)
        exp = entry.get("experiment") or {}
        task = str(exp.get("task") or "")
        out.append({"experiment": name,
                    "paper": "arena" if exp.get("arena") else str(exp.get("paper") or ""),
                    "task": task,
                    "datasets": _axis(entry.get("datasets"), "dataset", task),
                    "methods": _axis(entry.get("methods"), "method", task)})
    return out


def description(group: str, name: str) -> str:
    """What an entry is, from the comment lines that open its yaml (``# @package`` lines
    left out), joined into one sentence; empty without any."""
    lines = []
    for line in entries(group)[name].read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text and not text.startswith("@package"):
            lines.append(text)
    return " ".join(lines)


def _axis(value: Any, group: str, task: str) -> str:
    """A grid axis as one line: each name once, in order (``arena`` as the member yamls the
    grid expands it to), a per-entry sweep as ``name (param: k values)``; ``+`` before the
    sweep when the plain entry is listed too."""
    items = value if isinstance(value, list) else [value]
    if ARENA_AXIS in items:
        i = items.index(ARENA_AXIS)
        items = [*items[:i], *arena_members(group, task), *items[i + 1:]]
    plain: dict[str, bool] = {}
    sweeps: dict[str, list[str]] = {}
    for item in items:
        if item is None:
            continue
        name = entry_name(item)
        plain.setdefault(name, False)
        sweeps.setdefault(name, [])
        if isinstance(item, dict) and isinstance(item[name], dict):
            for k, v in item[name].items():
                n = len(v) if isinstance(v, list) else 1
                sweeps[name].append(f"{k}: {n} value{'s' if n != 1 else ''}")
        else:
            plain[name] = True
    return ", ".join(name + (f" ({'+ ' if plain[name] else ''}{'; '.join(sweeps[name])})"
                             if sweeps[name] else "") for name in plain)


def _privacy(cls: type) -> str:
    """Currency and relation; the other relations its class has its own analysis for."""
    if not cls.private:
        return "non-private"
    other = [r for r in cls.relations if r != cls.neighbours]
    return f"{cls.accounting}, {cls.neighbours}" + (f" (own analysis also: {', '.join(other)})"
                                                   if other else "")


def methods() -> list[dict[str, str]]:
    """Each method yaml: label, tasks it can be scored by, data it needs, outputs, privacy
    (currency, relation, private or not) and arena role."""
    out = []
    for name in choices("method"):
        entry = load_entry("method", name)
        cls = import_object(entry["_target_"])
        params = _merged_params(entry, "paper")
        out.append({"method": name, "label": str(entry.get("label", name)),
                    "serves": ", ".join(sorted(cls.tasks_scored(params))),
                    "needs": ", ".join(sorted(cls.data_required(params))) or "-",
                    "produces": ", ".join(k.__name__ for k in cls.produces),
                    "privacy": _privacy(cls),
                    "arena": arena_role("method", name) or "-"})
    return out


def datasets() -> list[dict[str, str]]:
    """Each dataset yaml: label, tasks, capabilities and whether it joins arenas."""
    out = []
    for name in choices("dataset"):
        entry = load_entry("dataset", name)
        tasks = entry.get("tasks") or []
        out.append({"dataset": name, "label": str(entry.get("label", name)),
                    "tasks": ", ".join(tasks),
                    "provides": ", ".join(sorted(dataset_provides(entry))) or "-",
                    "arena": "yes" if arena_role("dataset", name) else "-"})
    return out


def listing(group: str) -> list[dict[str, str]]:
    """The rows of one group (:data:`GROUPS`); a one-line ValueError for another name."""
    if group not in GROUPS:
        raise ValueError(f"unknown list {group!r}; valid: {', '.join(GROUPS)}")
    return {"experiments": experiments, "methods": methods, "datasets": datasets}[group]()
