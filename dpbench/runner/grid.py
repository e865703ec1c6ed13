"""The one grid expander: a checked config -> its list of TrialSpecs.

``runner/schema.py`` checks the composed config into a typed ``RunConfig`` (names, budgets,
counts, axes, sweeps, the experiment's and profile's keys), with a one-line error naming
the bad value and the valid choices; this module expands it. What only the expansion can
see is refused here in the schema's wording (its ``unknown`` / ``invalid`` / ``not_among``
helpers): a cell the task, data or method contract rules out (in an arena, a refused cell
instead), a per-dataset setting for a dataset or method the grid does not hold, a method
parameter its class does not take, a swept value of another type than the method's default,
a grid too large to expand.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from omegaconf import DictConfig

from dpbench.data.own import own_dataset
from dpbench.privacy.relations import group_size
from dpbench.runner.execute import import_object
from dpbench.runner.schema import (
    ARENA_AXIS,
    ConfigError,
    ExperimentSpec,
    RunConfig,
    axis_items,
    choices,
    conf_dir,
    entries,
    entry_name,
    invalid,
    not_among,
    not_set,
    read_yaml,
    run_config,
    sweep_map,
    unknown,
    unknown_key,
)
from dpbench.runner.spec import TrialSpec
from dpbench.tasks import TASKS
from dpbench.tasks.base import Task

#: the most trials one grid may expand to (the largest shipped grid has under 100,000): a
#: typo such as trials=1000000000 is refused at once instead of expanding for hours
MAX_GRID_TRIALS = 1_000_000


def _merged(base: Any, over: Any) -> Any:
    """``over`` merged into ``base`` as OmegaConf merges configs: mappings key by key,
    anything else (a list, a value) replaced."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merged(base[k], v) if k in base else v
        return out
    return over


def load_entry(group: str, name: str) -> dict[str, Any]:
    """A dataset/method/figure yaml as a plain dict; ``base: other`` inherits from a sibling."""
    found = entries(group)
    if name not in found:
        raise unknown(group, name, sorted(found))
    node = read_yaml(found[name])
    if not isinstance(node, dict):
        return {} if node is None else node
    base = node.pop("base", None)
    if not base:
        return node
    # a child's ``tasks`` replaces its base's (a list and a map of views do not merge)
    tasks = node.pop("tasks", None)
    merged = _merged(load_entry(group, base), node)
    if tasks is not None:
        merged["tasks"] = tasks
    return merged


def experiment_entry(name: str) -> dict[str, Any]:
    """Experiment ``name``'s yaml as Hydra composes it, without composing: conf/config.yaml's
    experiment keys and grid axes, then each experiment its ``defaults`` list names (in
    order, ``_self_`` last unless placed), then its own keys, merged as OmegaConf merges.
    What ``dpbench list`` and the site read for an experiment they do not run (cheap: no
    Hydra, parsed yamls cached), so a child yaml shows its parent's paper, task and axes."""
    root = read_yaml(conf_dir() / "config.yaml") or {}
    base = {k: v for k, v in root.items() if k != "defaults"}
    return _merged(base, _experiment_chain(name, ()))


def _experiment_chain(name: str, seen: tuple[str, ...]) -> dict[str, Any]:
    if name in seen:
        raise ConfigError(f"experiment {name!r} extends itself: {' -> '.join([*seen, name])}")
    node = load_entry("experiment", name)
    own = {k: v for k, v in node.items() if k != "defaults"}
    order = [d for d in node.get("defaults") or [] if isinstance(d, str)]
    if "_self_" not in order:
        order.append("_self_")
    out: dict[str, Any] = {}
    for item in order:
        if item == "_self_":
            out = _merged(out, own)
        else:
            out = _merged(out, _experiment_chain(item.rpartition("/")[2], (*seen, name)))
    return out


VIEW_KEYS = ("params", "profiles", "provides", "key_as", "label")


def task_view(name: str, entry: Mapping[str, Any], task: str) -> dict[str, Any]:
    """A dataset yaml as one task sees it.

    ``tasks`` is a list of task names, or a map ``task -> view`` for a source that serves
    several tasks (e.g. one file, two targets): a view may refine ``params`` and
    ``profiles`` (merged over the source's), add to ``provides``, and set ``label`` and
    ``key_as`` (so a view keeps the keys of the yaml it replaced). The result lists the
    source's tasks; a task it does not serve is left for ``cell_problem`` to refuse.
    """
    tasks = entry.get("tasks")
    if not isinstance(tasks, Mapping):
        return dict(entry)
    out = {k: v for k, v in entry.items() if k != "tasks"}
    out["tasks"] = list(tasks)
    view = tasks.get(task)
    if view is None:
        return out
    stray = sorted(set(view) - set(VIEW_KEYS))
    if stray:
        raise unknown_key(f"dataset {name!r} tasks.{task}", stray[0], VIEW_KEYS)
    out["params"] = {**(entry.get("params") or {}), **(view.get("params") or {})}
    profiles = {**(entry.get("profiles") or {})}
    for prof, over in (view.get("profiles") or {}).items():
        profiles[prof] = {**(profiles.get(prof) or {}), **(over or {})}
    out["profiles"] = profiles
    out["provides"] = sorted({*(entry.get("provides") or ()), *(view.get("provides") or ())})
    for key in ("key_as", "label"):
        if key in view:
            out[key] = view[key]
    return out


def _merged_params(entry: Mapping[str, Any], profile: str) -> dict[str, Any]:
    params = dict(entry.get("params") or {})
    params.update((entry.get("profiles") or {}).get(profile) or {})
    return params


def key_as(entry: Mapping[str, Any], axis: str, name: str) -> dict[str, str]:
    """A yaml's pinned identity (``key_as: {name, target}``) as TrialSpec.key_as fields.

    The key hashes these in place of the yaml's file name and ``_target_``, so a renamed
    yaml or a moved module keeps its stored trials (tests/core/test_identity.py)."""
    pinned = entry.get("key_as") or {}
    stray = sorted(set(pinned) - {"name", "target"})
    if stray:
        raise unknown_key(f"{axis} {name!r} key_as", stray[0], ("name", "target"))
    out = {}
    if "name" in pinned:
        out[axis] = str(pinned["name"])
    if "target" in pinned:
        out[f"{axis}_target"] = str(pinned["target"])
    return out


def sweep_points(sweep: Mapping[str, Any] | None, key: str) -> list[dict[str, Any]]:
    """Cartesian product of a ``{param: [values]}`` map (``schema.sweep_map``: a single
    value is a list of one), in the order written ([{}] if none)."""
    points: list[dict[str, Any]] = [{}]
    for name, values in (sweep_map(sweep, key) or {}).items():
        points = [{**p, name: v} for p in points for v in values]
    return points


def dataset_provides(dentry: Mapping[str, Any],
                     dparams: Mapping[str, Any] | None = None) -> frozenset[str]:
    """A dataset's capabilities: its yaml's ``provides``, plus each capability of its
    ``provides_when: {capability: param}`` whose loader parameter is set (truthy) in
    ``dparams`` (e.g. ``public_rows`` when ``n_public`` sets rows aside)."""
    given = {**(dentry.get("params") or {}), **(dparams or {})}
    when = dentry.get("provides_when") or {}
    return frozenset([*(dentry.get("provides") or ()),
                      *(cap for cap, param in when.items() if given.get(param))])


def cell_problem(task: Task, dataset: str, dentry: Mapping[str, Any], method: str,
                 mentry: Mapping[str, Any], mparams: Mapping[str, Any],
                 dparams: Mapping[str, Any] | None = None) -> str | None:
    """Why (task, dataset, method) cannot run, or None: the dataset yaml's ``tasks`` and
    capabilities (:func:`dataset_provides` at ``dparams``), the task's ``requires`` and the
    method's ``supports`` (its class's declared contract, dpbench/methods/base.py)."""
    tasks = dentry.get("tasks")
    if tasks is not None and task.name not in tasks:
        return f"dataset {dataset!r} serves {', '.join(tasks)}, not {task.name}"
    provides = dataset_provides(dentry, dparams)
    missing = sorted(task.requires - provides)
    if missing:
        return f"task {task.name!r} needs data with {', '.join(missing)}; dataset {dataset!r} " \
               f"provides {', '.join(sorted(provides)) or 'none of the capabilities'}"
    try:
        cls = import_object(mentry["_target_"])
    except ValueError as exc:
        return f"method {method!r}: {exc}"
    reason = cls.supports(task.name, provides, mparams)
    return None if reason is None else f"method {method!r} {reason}"


def params_mismatch(task: Task, m: AxisPoint, profile: str | None,
                    task_params: Mapping[str, Any]) -> str | None:
    """Why the method point ``m`` cannot be scored with ``task_params`` (its output is made
    for other values of parameters the task also takes, :attr:`Task.matched`), or None:
    checked on the method's complete parameters (its class defaults under its yaml's)."""
    cls = import_object(m.entry["_target_"])
    params = m.params(profile)
    kind = next((k for k in cls.scored_kinds(task, params) if k in cls.produces), None)
    if kind is None or kind not in task.matched:
        return None
    defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    reason = task.mismatch(kind, {**defaults, **params}, task_params)
    return None if reason is None else f"method {m.id!r}: {reason}"


def thin(values: Sequence[Any], k: int | None) -> list[Any]:
    """At most k values, evenly spread and keeping both ends."""
    values = list(values)
    if k is None or k >= len(values):
        return values
    if k <= 1:
        return values[-1:]
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, k)).astype(int))
    return [values[i] for i in idx]


@dataclass(frozen=True)
class AxisPoint:
    """One dataset or method of the grid: a yaml, at one point of its sweep (if any).

    ``id`` is what trials carry and reports show: the yaml name, or ``name[k=v,...]`` for a
    point of a per-entry sweep (``methods: [m, {m: {theta: [-10, 10]}}]``), so
    every point is its own dataset / method with a generated label."""

    id: str
    name: str
    entry: dict[str, Any]
    point: dict[str, Any]
    label: str
    pin: dict[str, str]

    def params(self, profile: str) -> dict[str, Any]:
        return {**_merged_params(self.entry, profile), **self.point}


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def thin_sweep(sweep: Any, k: int | None) -> Any:
    """A per-entry sweep ``{param: [values]}`` with each list cut to at most ``k`` values
    (a profile's ``sweep_points``): evenly spread keeping both ends (:func:`thin`), or for
    k = 1 the middle value (the lower middle of an even list). None = unchanged."""
    if k is None or not isinstance(sweep, Mapping):
        return sweep
    out = {}
    for name, values in sweep.items():
        vals = list(values) if isinstance(values, list | tuple) else [values]
        out[name] = vals[(len(vals) - 1) // 2:][:1] if k == 1 and vals else thin(vals, k)
    return out


def axis_points(items: Sequence[Any], axis: str, entry_of: Any,
                shared_sweep: Sequence[Mapping[str, Any]],
                max_points: Mapping[str, int] | int | None = None) -> list[AxisPoint]:
    """The grid's datasets or methods: names, or ``{name: {param: [values]}}`` per-entry
    sweeps (each list cut by :func:`thin_sweep` to ``max_points`` values, or to
    ``max_points[name]`` for the entries it names), each times the experiment-wide
    ``<axis>_sweep`` (which keeps the id)."""
    out = []
    for item in items:
        if isinstance(item, str):
            name, own = item, [{}]
        else:                           # {name: {param: [values]}} (schema.run_config)
            name, sweep = next(iter(item.items()))
            cap = max_points.get(name) if isinstance(max_points, Mapping) else max_points
            own = sweep_points(thin_sweep(sweep, cap), f"{axis}s.{name}")
        entry = entry_of(name)
        for point in own:
            check_point_types(axis, name, entry, {**point, **{
                k: v for shared in shared_sweep for k, v in shared.items()}})
            ident = name if not point else \
                f"{name}[{','.join(f'{k}={_fmt(v)}' for k, v in point.items())}]"
            pin = key_as(entry, axis, name)
            if point:
                pin.pop(axis, None)  # a sweep point is keyed by its own id
            for shared in shared_sweep:
                full = {**point, **shared}
                suffix = "" if not full else \
                    " (" + ", ".join(f"{k}={_fmt(v)}" for k, v in full.items()) + ")"
                out.append(AxisPoint(ident, name, entry, full,
                                     str(entry.get("label", name)) + suffix, pin))
    return out


def check_point_types(axis: str, name: str, entry: Mapping[str, Any],
                      point: Mapping[str, Any]) -> None:
    """Refuse a swept value whose type cannot be the parameter's: a non-number where the
    yaml's default is a number, a non-boolean where it is a boolean (once accepted, then
    failed in every trial)."""
    defaults = _merged_params(entry, "default")
    for key, value in point.items():
        default = defaults.get(key)
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int | float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            continue
        if not ok:
            raise invalid(f"{axis}s.{name}.{key}", value,
                          f"{name}'s {key} is a {type(default).__name__} (default "
                          f"{default!r}), not a {type(value).__name__}")


def expand(cfg: DictConfig) -> list[TrialSpec]:
    """All trials of the composed experiment, in a fixed order (dataset, method, eps, trial)."""
    return expand_cells(cfg)[0]


def refused_cells(cfg: DictConfig) -> list[RefusedCell]:
    """The cells of an arena experiment that cannot run (dataset id, method id, reason):
    not among :func:`expand`'s specs, listed on the board instead."""
    return expand_cells(cfg)[1]


def expand_cells(cfg: DictConfig) -> tuple[list[TrialSpec], list[RefusedCell]]:
    """The trials of the composed experiment (:func:`expand`) and the cells refused.

    The config is checked first (:func:`schema.run_config`: a bad value is a one-line
    ConfigError). A cell the task, data or method contract rules out, or whose method's
    guarantee implies none under the experiment's ``relation``, is a one-line ConfigError,
    except in an arena (``experiment.arena``), where it is a :class:`RefusedCell` (failures
    are data).
    """
    run = run_config(cfg)
    exp, profile, task = run.experiment, run.profile.name, run.experiment.task
    epsilons = thin(list(run.epsilons), run.profile.max_epsilons)
    trials, unit = run.trials, run.budget_unit
    # data= / schema=: the user's own table replaces the datasets (dpbench/data/own.py)
    own = own_dataset(run.data, run.data_schema, task, choices("dataset"))
    listed = [own[0]] if own else axis_list(run, "datasets")
    kept = listed if own else profile_subset(run, "datasets", listed)
    task_params = dataset_task_params(exp, listed, kept)
    try:
        for given in task_params.values():
            TASKS[task].resolve_params(given)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    def dataset(name: str) -> dict[str, Any]:
        entry = own[1] if own and name == own[0] else load_entry("dataset", name)
        return _with_target("dataset", name, task_view(name, entry, task))

    def method(name: str) -> dict[str, Any]:
        return _with_target("method", name, load_entry("method", name))

    datasets = axis_points(kept, "dataset", dataset,
                           sweep_points(run.dataset_sweep, "dataset_sweep"))
    methods = axis_points(profile_subset(run, "methods", axis_list(run, "methods")), "method",
                          method, sweep_points(run.method_sweep, "method_sweep"),
                          run.profile.sweep_points)
    by_dataset = dataset_method_params(exp, listed, kept, methods)
    methods_of = {d.name: with_dataset_params(methods, by_dataset[d.name]) for d in datasets}
    relation, arena, limit = exp.relation, exp.arena is not None, run.time_limit_s
    eps_of = dataset_epsilons(run, kept, epsilons)
    cells, refused = [], []
    for d in datasets:
        for m in methods_of[d.name]:
            problem = cell_problem(TASKS[task], d.name, d.entry, m.name, m.entry,
                                   m.params(profile), d.params(profile))
            if problem is None:
                problem = params_mismatch(TASKS[task], m, profile, task_params[d.name])
            cell_relation, mparams = None, m.params(profile)
            if arena:       # a method's arena settings (its yaml's ``arena_params``)
                mparams = {**mparams, **(m.entry.get("arena_params") or {})}
            if problem is None and relation is not None:
                problem, cell_relation, mparams = relation_problem(m.entry, mparams, relation)
            if problem and not arena:
                raise ConfigError(f"cannot run {m.id} on {d.id} for task {task}: {problem}")
            if problem:
                refused.append(RefusedCell(d.id, m.id, problem))
            else:
                cells.append((d, m, cell_relation, mparams))

    size = sum(len(eps_of[d.name]) for d, *_ in cells) * trials
    if size > MAX_GRID_TRIALS:
        raise ConfigError(f"the grid has {size:,} trials ({len(cells)} cells x "
                          f"{len(epsilons)} epsilons x {trials} trials), more than the "
                          f"{MAX_GRID_TRIALS:,} one command expands; lower trials=, epsilons= "
                          "or the sweeps, or split the grid")
    specs = []
    for d, m, cell_relation, mparams in cells:
        dparams = d.params(profile)
        for eps in eps_of[d.name]:
            for t in range(trials):
                specs.append(TrialSpec(
                    dataset=d.id, dataset_target=d.entry["_target_"],
                    dataset_params=dparams, method=m.id,
                    method_target=m.entry["_target_"], method_params=mparams,
                    task=task, epsilon=float(eps), delta=run.delta,
                    budget_unit=unit, trial=t, task_params=task_params[d.name],
                    key_as={**d.pin, **m.pin}, relation=cell_relation,
                    meta={"dataset_label": d.label, "method_label": m.label,
                          "dataset_sweep": d.point, "method_sweep": m.point,
                          **({"relation": relation} if relation else {}),
                          **({"time_limit_s": limit} if limit else {})},
                ))
    if arena and not specs:
        raise ConfigError(f"no cell of arena {exp.name!r} can run: "
                          f"{refused[0].method} on {refused[0].dataset}: {refused[0].reason}")
    return specs, refused


class RefusedCell(NamedTuple):
    """An arena cell that cannot run, and why (shown on the board, never a crash)."""

    dataset: str
    method: str
    reason: str


def native_relation(entry: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The neighbouring relation a configured method's guarantee is stated for (an
    instance may refine its class's, e.g. by the sampler it is given)."""
    cls = import_object(entry["_target_"])
    try:
        return str(cls(**params).neighbours)
    except Exception:       # a bad parameter is reported by the preflight, in one line
        return str(cls.neighbours)


def relation_problem(entry: Mapping[str, Any], params: Mapping[str, Any], relation: str
                     ) -> tuple[str | None, str | None, dict[str, Any]]:
    """(why the method cannot be stated under ``relation``, or None; the spec's
    ``relation``: None when it is the method's own, so the trial is the one a paper's
    experiment runs; the method's parameters). A method whose class has its own analysis
    for ``relation`` (``Method.relations``) runs it, its parameters gaining ``relation``;
    otherwise a guarantee under its native relation is converted (group privacy)."""
    native = native_relation(entry, params)
    if native != relation and relation in import_object(entry["_target_"]).relations:
        return None, None, {**params, "relation": relation}
    k = group_size(native, relation)
    if k is None:
        return (f"its guarantee is for {native} neighbours (n public), which implies none "
                f"under {relation}"), None, dict(params)
    return None, (relation if k > 1 else None), dict(params)


#: what a method yaml's ``arena:`` key may say: the role it plays on every arena board
ARENA_ROLES = ("method", "baseline", "reference")
def axis_list(run: RunConfig, axis: str) -> list[Any]:
    """The experiment's ``datasets`` or ``methods`` list; ``arena`` (alone or as an item)
    stands for every yaml of the group that joins arenas and serves the experiment's task
    (:func:`arena_members`), so a new method or dataset joins every arena it can serve
    without an arena changed."""
    listed = list(getattr(run, axis))
    if ARENA_AXIS not in listed:
        return listed
    i = listed.index(ARENA_AXIS)    # `[arena, {original: {fraction: [...]}}]`: members + extras
    return [*listed[:i], *arena_members(axis[:-1], run.experiment.task), *listed[i + 1:]]


def arena_role(group: str, name: str, role: object = None) -> str | None:
    """A method yaml's arena role (``arena: method | baseline | reference``), a dataset
    yaml's ``arena: true`` (or ``arena: [<task>, ...]``: the arenas of those tasks only) as
    ``method``; None: not an arena member. The key is the yaml's
    own, never inherited through ``base:`` (a variant of an arena method is not one);
    ``role``: that value, when the caller has read it (:func:`arena_key`)."""
    role = arena_key(group, name) if role is None else role
    if role is None or role is False:
        return None
    if role is True or (group == "dataset" and isinstance(role, list)):
        return "method"
    if role not in ARENA_ROLES:
        raise unknown("arena role", role, [*ARENA_ROLES, "true (a dataset)"],
                      where=f"{group} {name!r}")
    return str(role)


def arena_key(group: str, name: str) -> object:
    """A yaml's own ``arena:`` value (None if unset). A dataset's list of tasks is checked
    here: a task no arena knows would leave the dataset out of every board in silence."""
    role = (read_yaml(entries(group)[name]) or {}).get("arena")
    if group == "dataset" and isinstance(role, list):
        for task in role:
            if task not in TASKS:
                raise unknown("arena task", task, sorted(TASKS), where=f"dataset {name!r}")
    return role


def arena_members(group: str, task: str) -> list[str]:
    """Every ``dataset`` / ``method`` yaml with an ``arena:`` role that serves ``task`` (a
    dataset listing it among its tasks, and among its ``arena:`` tasks where it names some;
    a method whose class scores it,
    ``Method.tasks_scored``), in name order."""
    out = []
    for name in choices(group):
        only = arena_key(group, name)
        if only is None or arena_role(group, name, only) is None:
            continue
        entry = load_entry(group, name)
        if group == "dataset":
            if task in (entry.get("tasks") or []) and (only is True or task in only):
                out.append(name)
            continue
        cls = import_object(entry["_target_"])
        if task in cls.tasks_scored(_merged_params(entry, "paper")):
            out.append(name)
    if not out:
        raise ConfigError(f"no {group} yaml joins arenas (arena: ...) for task {task!r}")
    return out


def arena_roles() -> dict[str, str]:
    """Method yaml name -> its arena role, for every method yaml that has one."""
    out = {}
    for name in choices("method"):
        role = arena_role("method", name)
        if role is not None:
            out[name] = role
    return out


def profile_subset(run: RunConfig, axis: str, listed: list[Any]) -> list[Any]:
    """The experiment's ``axis`` list (``datasets`` or ``methods``, as :func:`axis_list`
    gives it), narrowed to the entries the profile's ``axis`` names when it names some (e.g.
    a smoke profile keeping the two smallest datasets, or a default profile leaving out
    methods too slow for one machine); a list given on the command line is narrowed the
    same way, and must keep at least one."""
    keep = getattr(run.profile, axis)
    if keep is None:
        return listed
    names = [entry_name(d) for d in listed]
    out = [d for d, n in zip(listed, names, strict=True) if n in set(keep)]
    if not out:
        raise ConfigError(f"profile {run.profile.name!r} keeps {axis} {sorted(set(keep))}, "
                          f"none of which is listed; listed: {', '.join(names)}")
    return out


def declared(exp: Any, axis: str) -> set[str] | None:
    """The names the experiment's own yaml lists on ``axis`` (``datasets`` / ``methods``;
    ``arena`` expanded to the members), before any command-line narrowing; None when the
    experiment has no yaml of its name (a config composed by hand). ``exp``: an
    :class:`ExperimentSpec` or the composed ``experiment`` node."""
    name = str(exp.name or "")
    if name not in entries("experiment"):
        return None
    value = load_entry("experiment", name).get(axis)
    items = value if isinstance(value, list) else [value]
    out = {entry_name(v) for v in items if v is not None and v != ARENA_AXIS}
    if ARENA_AXIS in items:
        out |= set(arena_members(axis[:-1], str(exp.task)))
    return out


def _by_dataset(exp: ExperimentSpec, key: str, listed: list[Any]) -> dict[str, Any]:
    """The experiment's ``key: {dataset: ...}`` map for the datasets listed: every name must
    be a dataset of the experiment's yaml; one a profile or a ``datasets=`` override left
    out is skipped (its settings unused)."""
    names = [entry_name(d) for d in listed]
    by = dict(getattr(exp, key) or {})
    allowed = set(names) | (declared(exp, "datasets") or set())
    stray = sorted(set(by) - allowed)
    if stray:
        raise not_among(key, stray[0], "experiment's datasets", names)
    return {k: v for k, v in by.items() if k in names}


def dataset_epsilons(run: RunConfig, kept: list[Any], epsilons: list[Any]
                     ) -> dict[str, list[Any]]:
    """Epsilons per kept dataset name: the grid's, or, for a dataset the profile's
    ``dataset_epsilons: {dataset: [eps, ...]}`` names (an arena's cheaper default profile),
    those of the grid's it lists, so each of its cells is one the whole grid holds (the
    same trial key). A name that is not an experiment's dataset, or a list that keeps
    none of the grid's epsilons, is a ConfigError."""
    by = dict(run.profile.dataset_epsilons or {})
    names = [entry_name(d) for d in kept]
    allowed = set(names) | (declared(run.experiment, "datasets") or set())
    stray = sorted(set(by) - allowed)
    if stray:
        raise not_among("profile.dataset_epsilons", stray[0], "experiment's datasets", names)
    out = {}
    for name in names:
        if by.get(name) is None:
            out[name] = list(epsilons)
            continue
        key = f"profile.dataset_epsilons.{name}"
        keep = {float(e) for e in axis_items(by[name], key)}
        out[name] = [e for e in epsilons if float(e) in keep]
        if not out[name]:
            raise invalid(key, sorted(keep), f"it keeps none of the grid's epsilons "
                          f"{list(epsilons)}; name some of them, or give "
                          "profile.dataset_epsilons=null for every epsilon")
    return out


def dataset_task_params(exp: ExperimentSpec, listed: list[Any], kept: list[Any]
                        ) -> dict[str, dict[str, Any]]:
    """Task parameters per kept dataset name: the experiment's ``task_params``, updated by
    its ``task_params_by_dataset: {dataset: {param: value}}`` (a parameter whose value
    depends on the data, such as which extra targets exist)."""
    common = dict(exp.task_params)
    by = _by_dataset(exp, "task_params_by_dataset", listed)
    return {n: {**common, **dict(by.get(n) or {})} for n in map(entry_name, kept)}


def dataset_method_params(exp: ExperimentSpec, listed: list[Any], kept: list[Any],
                          methods: Sequence[AxisPoint]) -> dict[str, dict[str, dict[str, Any]]]:
    """``method_params_by_dataset: {dataset: {method: {param: value or [values]}}}`` per
    dataset name, checked: every dataset and method is in the grid and every parameter is
    one the method's class takes (a setting tuned per dataset, e.g. a step size, or a
    per-dataset sweep, e.g. an ensemble size that must fit the data). A method of the
    experiment's yaml that the grid does not hold (``methods=`` narrowed it away) is
    skipped; any other name is an error."""
    by = _by_dataset(exp, "method_params_by_dataset", listed)
    entries = {m.name: m.entry for m in methods}
    own_methods = declared(exp, "methods") or set()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for dname in map(entry_name, listed):
        per = {str(k): dict(v or {}) for k, v in dict(by.get(dname) or {}).items()}
        for mname, params in list(per.items()):
            if mname not in entries and mname in own_methods:
                del per[mname]      # a method the grid was narrowed away from: unused
                continue
            if mname not in entries:
                raise not_among(f"method_params_by_dataset.{dname}", mname,
                                "experiment's methods", entries)
            valid = _param_names(import_object(entries[mname]["_target_"]))
            bad = sorted(set(params) - valid) if valid is not None else []
            if bad:
                raise unknown_key(f"method_params_by_dataset.{dname}.{mname}", bad[0], valid,
                                  noun="parameter")
        out[dname] = per
    return {n: out[n] for n in map(entry_name, kept)}


def _param_names(cls: type) -> set[str] | None:
    """The keyword parameters of a method class (None if it takes ``**kwargs``)."""
    sig = inspect.signature(cls.__init__)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n in sig.parameters if n != "self"}


def with_dataset_params(methods: Sequence[AxisPoint], params: Mapping[str, Mapping[str, Any]]
                        ) -> list[AxisPoint]:
    """The grid's methods on one dataset: each with that dataset's fixed parameters (id
    unchanged: the same method, set for the data) and one point per value of a listed one
    (id ``name[k=v]``, as any sweep point)."""
    out = []
    for m in methods:
        over = dict(params.get(m.name) or {})
        fixed = {k: v for k, v in over.items() if not isinstance(v, list | tuple)}
        swept = {k: v for k, v in over.items() if isinstance(v, list | tuple)}
        for p in sweep_points(swept, f"method_params_by_dataset.{m.name}"):
            if not p:
                out.append(replace(m, point={**m.point, **fixed}))
                continue
            tail = ",".join(f"{k}={_fmt(v)}" for k, v in p.items())
            ident = f"{m.id[:-1]},{tail}]" if m.id.endswith("]") else f"{m.id}[{tail}]"
            pin = {k: v for k, v in m.pin.items() if k != "method"}
            label = m.label + " (" + ", ".join(f"{k}={_fmt(v)}" for k, v in p.items()) + ")"
            out.append(replace(m, id=ident, point={**m.point, **fixed, **p}, label=label,
                               pin=pin))
    return out


def _with_target(group: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    if "_target_" not in entry:
        raise not_set("_target_", "a yaml names the class or loader it configures",
                      where=f"{group} {name!r}")
    return entry


def costliest_first(specs: Sequence[TrialSpec]) -> list[TrialSpec]:
    """``specs`` in dispatch order: each (dataset, method) block where it first appears, the
    larger budgets first within it, trials in order.

    Workers take trials in this order, so the longest ones should come first (the classic
    longest-processing-time rule): a grid that ends with a long trial leaves the other
    workers idle while it runs. A trial's run time is not known before it runs, but for the
    mechanisms whose cost depends on the budget it grows with it (an adaptive marginal
    mechanism runs more rounds and fits larger models at a larger eps), and for the others
    the order is immaterial. It also keeps a release shared by two methods
    (dpbench/artifacts.py) from being built by the first method's last, longest trial while
    the second method's trial for the same cell waits on its lock with nothing else left to
    run.
    The grid's own order (:func:`expand`) is unchanged: this is only the order of work, used
    by the local runner and by the SLURM submission alike.
    """
    blocks: dict[tuple[str, str], int] = {}
    for s in specs:
        blocks.setdefault((s.dataset, s.method), len(blocks))
    return sorted(specs, key=lambda s: (blocks[(s.dataset, s.method)], -s.epsilon, s.trial))
