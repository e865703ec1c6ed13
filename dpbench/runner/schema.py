"""The one schema of a composed config: typed specs, the checks that make them, every refusal.

:func:`run_config` turns a composed config into a :class:`RunConfig` (its
:class:`ExperimentSpec`, :class:`ArenaSpec`, :class:`ProfileSpec`, :class:`RunnerSpec`), or
refuses it with a one-line :class:`ConfigError` naming the bad value and the valid choices;
:func:`figure_spec` does the same for a figure spec (a ``conf/figure`` yaml or an inline
one). Each spec declares what its fields may hold as ``CONSTRAINTS`` (modelled on
scikit-learn's ``_parameter_constraints``): a key of none of its fields is refused with
the valid keys named. The grid expander (``runner/grid.py``) expands a checked
:class:`RunConfig`; what only the expansion can see (a cell the task, data or method
contract rules out, a per-dataset setting for a dataset the grid does not hold, a swept
value of a type the method's default is not) is refused there, in the wording of this
module's helpers (:func:`unknown`, :func:`unknown_key`, :func:`invalid`, :func:`not_among`,
:func:`not_set`), so every refusal reads the same way.

The names a config may use are the config tree's entries (:func:`entries`: every yaml of
``conf/<group>/`` in every root, by file stem), listed here for the same reason.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import omegaconf._utils
import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_yaml_loader

from dpbench.privacy.relations import RELATIONS
from dpbench.roots import conf_dirs
from dpbench.runner.execute import resolve_delta
from dpbench.tasks import TASKS

BUDGET_UNITS = ("epsilon", "mu", "rho")


class ConfigError(ValueError):
    """Invalid experiment configuration (one-line message)."""


# --- the wording of every refusal -------------------------------------------------------


def _line(text: str) -> str:
    return " ".join(text.split())


def did_you_mean(value: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name (difflib), else empty."""
    close = difflib.get_close_matches(str(value), list(valid), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _at(where: str | None) -> str:
    return f"{where}: " if where else ""


def unknown(what: str, value: Any, valid: Iterable[str], where: str | None = None
            ) -> ConfigError:
    """``[where: ]unknown <what> 'value' (did you mean ...?); valid: a, b``."""
    valid = [str(v) for v in valid]
    return ConfigError(_line(f"{_at(where)}unknown {what} {value!r}"
                             f"{did_you_mean(str(value), valid)}; valid: {', '.join(valid)}"))


def unknown_key(where: str, key: Any, valid: Iterable[str], noun: str = "key") -> ConfigError:
    """``where: unknown key 'k' (did you mean ...?); valid: a, b`` (``noun``: e.g.
    ``parameter`` for a method's keyword)."""
    valid = sorted(str(v) for v in valid)
    return ConfigError(_line(f"{where}: unknown {noun} {key!r}{did_you_mean(str(key), valid)}"
                             f"; valid: {', '.join(valid)}"))


def invalid(key: str, value: Any, must: str) -> ConfigError:
    """``key=value is invalid: <must>`` (``must`` says what it must be)."""
    return ConfigError(_line(f"{key}={value!r} is invalid: {must}"))


def not_among(key: str, value: Any, what: str, valid: Iterable[str],
              listed: str | None = None) -> ConfigError:
    """``key names 'value', which is not among the <what> (did you mean ...?); valid: ...``
    (``listed``: what to say in place of a long list of ``valid``)."""
    valid = [str(v) for v in valid]
    return ConfigError(_line(f"{key} names {value!r}, which is not among the {what}"
                             f"{did_you_mean(str(value), valid)}; valid: "
                             f"{listed or ', '.join(valid)}"))


def not_set(key: str, hint: str, where: str | None = None) -> ConfigError:
    """``[where: ]key is not set; <hint>``."""
    return ConfigError(_line(f"{_at(where)}{key} is not set; {hint}"))


# --- the config tree's entries ----------------------------------------------------------


def conf_dir() -> Path:
    """The repository's Hydra config tree."""
    return conf_dirs()[0]


def entries(group: str) -> dict[str, Path]:
    """Name -> yaml file of every entry of ``conf/<group>/`` (subfolders included) in every
    root (dpbench.roots); a name is its file stem and must be unique within a group.

    Listed once per version of the folders: the listing is kept with the modification time
    of every folder it walked (adding, removing or renaming a yaml changes its folder's), so
    a later call costs a few ``stat`` calls (an arena asks thousands of times)."""
    roots = tuple(conf_dirs())
    hit = _LISTINGS.get((group, roots))
    if hit is not None and all(_mtime(d) == m for d, m in hit[0]):
        return dict(hit[1])
    folders: list[tuple[str, int | None]] = []
    found: dict[str, Path] = {}
    for base in roots:
        top = str(base / group)
        folders.append((top, _mtime(top)))
        files: list[tuple[list[str], str]] = []
        for here, dirs, names in os.walk(top):
            folders += [(os.path.join(here, d), _mtime(os.path.join(here, d))) for d in dirs]
            files += [(os.path.relpath(os.path.join(here, n), top).split(os.sep),
                       os.path.join(here, n)) for n in names if n.endswith(".yaml")]
        for _, name in sorted(files):          # path order: parts compared one by one
            path = Path(name)
            if path.stem in found:
                raise ConfigError(f"{group} {path.stem!r} is defined twice: {found[path.stem]} "
                                  f"and {path}")
            found[path.stem] = path
    _LISTINGS[(group, roots)] = (tuple(folders), found)
    return dict(found)


_LISTINGS: dict[tuple[str, tuple[Path, ...]], tuple[tuple[tuple[str, int | None], ...],
                                                    dict[str, Path]]] = {}


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def choices(group: str) -> list[str]:
    """Names of the yaml files in ``conf/<group>/`` of every root."""
    return sorted(entries(group))


def read_yaml(path: Path) -> Any:
    """A yaml file's content as plain Python (OmegaConf's own yaml loader, so numbers such
    as ``1e-5`` parse as they do in a composed config), parsed once per file version
    (cached on path, size and modification time: an arena reads every yaml of the tree)."""
    st = path.stat()
    return copy.deepcopy(_parsed_yaml(str(path), st.st_size, st.st_mtime_ns))


@functools.cache
def yaml_loader() -> type:
    """OmegaConf's yaml loader (its float and timestamp rules, duplicate keys refused) on
    libyaml's C parser where PyYAML has it: the same values, parsed ~8x faster (``list``
    and an arena's expansion read every yaml of the tree); the pure-Python one otherwise."""
    slow = get_yaml_loader()
    try:
        from yaml._yaml import CParser
    except ImportError:                # PyYAML built without libyaml
        return slow
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    class Loader(CParser, slow):       # type: ignore[misc, valid-type]
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    return Loader


def fast_omegaconf_load() -> None:
    """Point ``OmegaConf.load`` (Hydra's reader of every config file, called at each
    compose) at :func:`yaml_loader`: it looks its loader up in ``omegaconf._utils`` at each
    call. The values are OmegaConf's own (a test compares every shipped yaml)."""
    omegaconf._utils.get_yaml_loader = yaml_loader


@functools.lru_cache(maxsize=4096)
def _parsed_yaml(path: str, size: int, mtime_ns: int) -> Any:
    del size, mtime_ns                 # the cache key: a changed file is parsed again
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=yaml_loader())


def top_level_keys() -> list[str]:
    """The keys a composed config may hold at its top level: conf/config.yaml's own keys and
    its config groups (experiment, profile, runner). An override or an experiment yaml that
    adds another one would be ignored by every command, so it is refused instead."""
    root = read_yaml(conf_dir() / "config.yaml") or {}
    groups = {next(iter(d)) for d in root.get("defaults", []) if isinstance(d, Mapping)}
    return sorted((set(root) - {"defaults"}) | groups)


# --- constraints (scikit-learn's ``_parameter_constraints``, for config fields) ----------


@dataclass(frozen=True)
class Interval:
    """A number in an interval: ``kind`` int (a whole number, never a bool) or float (any
    finite real); ``low`` / ``high`` None for an open end; ``closed`` which ends are in."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"         # "left", "right", "both" or "neither"

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int if self.kind is int
                                                     else int | float):
            return False
        if not math.isfinite(value):
            return False
        lo_in = self.closed in ("left", "both")
        hi_in = self.closed in ("right", "both")
        if self.low is not None and (value < self.low or (value == self.low and not lo_in)):
            return False
        return self.high is None or value < self.high or (value == self.high and hi_in)

    def describe(self) -> str:
        noun = "a whole number" if self.kind is int else "a finite number"
        if self.low is not None and self.high is not None:
            left = "[" if self.closed in ("left", "both") else "("
            right = "]" if self.closed in ("right", "both") else ")"
            return f"{noun} in {left}{_num(self.low)}, {_num(self.high)}{right}"
        if self.low is not None:
            return f"{noun} {'>=' if self.closed in ('left', 'both') else '>'} {_num(self.low)}"
        if self.high is not None:
            return f"{noun} {'<=' if self.closed in ('right', 'both') else '<'} " \
                   f"{_num(self.high)}"
        return noun


def _num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of names (``what`` names them in the refusal: ``unknown <what>``);
    ``valid`` may be a function, called when checked (e.g. the tree's entries)."""

    what: str
    valid: Sequence[str] | Callable[[], Sequence[str]]

    def names(self) -> list[str]:
        return list(self.valid() if callable(self.valid) else self.valid)


#: a constraint: an :class:`Interval`, :class:`Options`, a type (``str``, ``bool``,
#: ``Mapping``, ``list``) or None (the value may be null)
Constraint = Interval | Options | type | None


def check(key: str, value: Any, constraints: Sequence[Constraint]) -> Any:
    """``value`` if it satisfies one of ``constraints``, else the one refusal: ``unknown
    <what> 'x'; valid: ...`` for a name, ``key=x is invalid: it must be ...`` otherwise."""
    for c in constraints:
        if c is None:
            if value is None:
                return value
        elif isinstance(c, Interval):
            if c.holds(value):
                return value
        elif isinstance(c, Options):
            if isinstance(value, str) and value in c.names():
                return value
        elif c is list:
            if isinstance(value, list | tuple):
                return value
        elif isinstance(value, c) and not (c in (int, float) and isinstance(value, bool)):
            return value
    names = [c for c in constraints if isinstance(c, Options)]
    if names and (isinstance(value, str) or len(names) == len(constraints)):
        raise unknown(names[0].what, value, names[0].names())
    return _refuse(key, value, constraints)


_TYPE_WORDS = {str: "a string", bool: "true or false", Mapping: "a mapping",
               list: "a list", int: "a whole number", float: "a number"}


def _refuse(key: str, value: Any, constraints: Sequence[Constraint]) -> Any:
    words = []
    for c in constraints:
        if c is None:
            words.append("null")
        elif isinstance(c, Interval):
            words.append(c.describe())
        elif isinstance(c, Options):
            words.append(f"one of {', '.join(c.names())}")
        else:
            words.append(_TYPE_WORDS.get(c, c.__name__))
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    raise invalid(key, value, f"it must be {listed}")


def count(value: Any, key: str) -> int:
    """``value`` as a count >= 1 (a trial count or a profile cap), else a ConfigError naming
    ``key``: a float or a string is refused rather than truncated."""
    return int(check(key, value, [COUNT]))


COUNT = Interval(int, 1, None, "left")


def _build(cls: type, where: str, node: Mapping[str, Any], *, strict: bool = True,
           **given: Any) -> Any:
    """An instance of the spec class ``cls`` from ``node``: each field checked against
    ``cls.CONSTRAINTS`` (a missing one keeps its default); ``strict``: a key of no field is
    refused (the valid keys named). ``given`` sets fields already checked."""
    names = [f.name for f in fields(cls)]
    if strict:
        stray = sorted(set(map(str, node)) - set(names))
        if stray:
            raise unknown_key(where, stray[0], names)
    values = dict(given)
    for name, constraints in cls.CONSTRAINTS.items():
        if name in node and name not in given:
            values[name] = check(f"{where}.{name}", node[name], constraints)
    for f in fields(cls):
        if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
            raise not_set(f"{where}.{f.name}", "it has no default")
    return cls(**values)


# --- the typed specs ---------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileSpec:
    """A profile (``conf/profile/``, an experiment's ``profiles.<name>`` merged over it):
    caps on the grid, the entries it keeps, the caveat its reports state."""

    name: str
    trials: int | None = None
    max_epsilons: int | None = None
    #: one cap for every per-entry method sweep, or {method: cap}
    sweep_points: int | dict[str, int] | None = None
    datasets: tuple[str, ...] | None = None
    methods: tuple[str, ...] | None = None
    #: {dataset: [eps, ...]}: the grid's epsilons a dataset keeps (the others: all)
    dataset_epsilons: dict[str, Any] | None = None
    caveat: str | None = None

    CONSTRAINTS: ClassVar[dict[str, list[Constraint]]] = {
        "name": [str], "trials": [COUNT, None], "max_epsilons": [COUNT, None],
        "sweep_points": [COUNT, Mapping, None], "datasets": [list, None],
        "methods": [list, None], "dataset_epsilons": [Mapping, None], "caveat": [str, None]}


@dataclass(frozen=True)
class RunnerSpec:
    """The runner group (``conf/runner/``): its name and the local worker count (the SLURM
    backend checks its own settings, ``runner/slurm.py``)."""

    name: str
    n_jobs: int | None = None


@dataclass(frozen=True)
class ArenaSpec:
    """What only an arena (``experiment.arena: true``) reads: the bar-setting methods and the
    non-private references (None: the yamls' ``arena:`` roles)."""

    baselines: tuple[str, ...] | None = None
    references: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment yaml's ``experiment:`` block, as composed."""

    name: str
    task: str
    paper: str | None = None
    note: str | None = None
    #: the metric a board ranks on, and why (None: the task's primary)
    metric: str | None = None
    metric_why: str | None = None
    relation: str | None = None
    #: None: not an arena
    arena: ArenaSpec | None = None
    task_params: dict[str, Any] = field(default_factory=dict)
    task_params_by_dataset: dict[str, dict[str, Any]] = field(default_factory=dict)
    method_params_by_dataset: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=dict)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: each a ``conf/figure`` name or an inline spec (checked by :func:`figure_spec`)
    figures: tuple[Any, ...] = ()
    #: the metrics the shipped reference keeps of each trial (None: all): a grid too large
    #: to ship whole keeps those its figures read (``runner.reference.compacted``)
    reference_metrics: tuple[str, ...] | None = None

    CONSTRAINTS: ClassVar[dict[str, list[Constraint]]] = {
        "name": [str], "task": [Options("task", lambda: sorted(TASKS))],
        "paper": [str, None], "note": [str, None], "metric": [str, None],
        "metric_why": [str, None],
        "relation": [Options("experiment.relation", RELATIONS), None],
        "task_params": [Mapping, None], "task_params_by_dataset": [Mapping, None],
        "method_params_by_dataset": [Mapping, None], "profiles": [Mapping, None],
        "figures": [list, None], "reference_metrics": [list, None]}
    #: keys read only by arenas
    ARENA_KEYS: ClassVar[tuple[str, ...]] = ("baselines", "references")


@dataclass(frozen=True)
class FigureSpec:
    """One figure or table: its kind, name and the keys every kind takes (title, paper and
    note are the experiment's unless the figure has its own); ``keys`` holds the kind's own
    (each kind's ``KEYS``, report/kinds)."""

    kind: str
    name: str
    title: str | None = None
    paper: str | None = None
    note: str | None = None
    methods: Any = None
    keys: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunConfig:
    """A composed config, checked: what the grid expander and the commands read."""

    experiment: ExperimentSpec
    profile: ProfileSpec
    runner: RunnerSpec
    #: as listed (names or ``{name: {param: [values]}}``; ``arena`` for the arena members)
    datasets: tuple[Any, ...]
    methods: tuple[Any, ...]
    epsilons: tuple[float, ...]
    budget_unit: str
    #: a number in (0, 1) or a rule in n (training rows)
    delta: float | str
    #: the trials asked (``trials``), capped by the profile's
    trials: int
    dataset_sweep: dict[str, list[Any]] | None
    method_sweep: dict[str, list[Any]] | None
    time_limit_s: float | None
    results_dir: str
    reference: bool
    #: the user's own table and its schema yaml (``data=`` / ``schema=``, data/own.py)
    data: str | None = None
    data_schema: str | None = None


#: local worker processes allowed per core: more only queue on the cores and multiply the
#: memory (runner.n_jobs=100000 would fork until the machine stops)
WORKERS_PER_CORE = 4


def max_workers() -> int:
    """The most local worker processes ``runner.n_jobs`` may ask for on this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def check_settings(cfg: DictConfig | Mapping[str, Any]) -> None:
    """Refuse what every command depends on: an unknown top-level key and an invalid
    ``runner.n_jobs`` (checked for every command, before any work)."""
    valid = top_level_keys()
    stray = sorted(set(cfg) - set(valid))
    if stray:
        raise unknown("top-level key", stray[0], valid)
    runner = cfg.get("runner")
    if runner is not None and "n_jobs" in runner:
        n, most = runner["n_jobs"], max_workers()
        if not (Interval(int, 1, most).holds(n) or (n == -1 and not isinstance(n, bool))):
            raise invalid("runner.n_jobs", n,
                          f"it must be a whole number >= 1 and <= {most} (worker processes; "
                          f"at most {WORKERS_PER_CORE} per core of this machine's "
                          f"{os.cpu_count() or 1}) or -1 (one per core)")


def check_budget(epsilon: Any, delta: Any, unit: str = "epsilon") -> None:
    """Validate one grid point's privacy parameters (delta may be a rule in n)."""
    check("budget_unit", unit, [Options("budget_unit", BUDGET_UNITS)])
    check_epsilon(epsilon, unit)
    check_delta(delta)


def check_epsilon(epsilon: Any, unit: str = "epsilon") -> None:
    """A budget value (in ``unit``): a finite number > 0."""
    if not Interval(float, 0, None, "neither").holds(epsilon):
        raise invalid(unit, epsilon, "every value in epsilons must be a finite number > 0")


def check_delta(delta: Any) -> None:
    """A delta in (0, 1), or a rule in n giving values in (0, 1) for n >= 10."""
    if isinstance(delta, str):
        try:
            values = [resolve_delta(delta, n) for n in (10, 1000, 10**6)]
        except (ValueError, SyntaxError, ZeroDivisionError) as exc:
            raise invalid("delta", delta, f"it is not a valid rule in n ({exc})") from None
        if not all(0 < v < 1 for v in values):
            raise invalid("delta", delta, "it must give values in (0, 1) for n >= 10")
        return
    if not Interval(float, 0, 1, "neither").holds(delta):
        raise invalid("delta", delta,
                      "it must lie in (0, 1) (or be a rule in n such as 'n**-1.1')")


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node) if OmegaConf.is_config(node) else node


def _missing(value: Any) -> bool:
    return value is None or value == "???"


def axis_items(value: Any, name: str) -> list[Any]:
    """A grid list (``datasets``, ``methods``, ``epsilons``) as a list: a single value is a
    list of one; unset or empty is refused (an empty axis expands to no trials)."""
    if _missing(value):
        raise not_set(name, f"give it on the command line, e.g. {name}=[...]")
    if isinstance(value, str | int | float):
        return [value]
    if not value:
        raise invalid(name, [], f"it must hold at least one value, e.g. {name}=[...]")
    return list(value)


def entry_name(item: Any) -> str:
    """The yaml name of a grid list item: ``name`` or a per-entry sweep ``{name: {...}}``."""
    return str(next(iter(item))) if isinstance(item, Mapping) else str(item)


#: the value of an arena experiment's ``datasets`` / ``methods`` that means "every member"
ARENA_AXIS = "arena"


def _axis(value: Any, axis: str) -> tuple[Any, ...]:
    """``datasets`` / ``methods``: names of the group's yamls (or ``arena``) and per-entry
    sweeps ``{name: {param: [values]}}``."""
    items = axis_items([ARENA_AXIS] if value == ARENA_AXIS else value, axis)
    found = entries(axis[:-1])
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and len(item) == 1:
            sweep_map(next(iter(item.values())), f"{axis}.{entry_name(item)}")
        elif not isinstance(item, str):
            raise invalid(f"{axis}[{i}]", item, "it must be a name or {name: {param: "
                          "[values]}}")
        name = entry_name(item)
        if name != ARENA_AXIS and name not in found:
            raise unknown(axis[:-1], name, sorted(found))
    return tuple(items)


def sweep_map(sweep: Any, key: str) -> dict[str, list[Any]] | None:
    """A ``{param: [values]}`` sweep (a single value is a list of one), or None."""
    if not sweep:
        return None
    if not isinstance(sweep, Mapping):
        raise invalid(key, sweep, "it must map parameter names to lists")
    out = {}
    for name, values in sweep.items():
        vals = list(values) if isinstance(values, list | tuple) else [values]
        if not vals:
            raise invalid(f"{key}.{name}", [], "it must hold at least one value")
        out[str(name)] = vals
    return out


def profile_spec(node: Mapping[str, Any]) -> ProfileSpec:
    """The composed ``profile`` block, checked (a ``sweep_points`` map names methods)."""
    spec = _build(ProfileSpec, "profile", node)
    points = spec.sweep_points
    if isinstance(points, Mapping):
        methods = choices("method")
        for k, v in points.items():
            if str(k) not in methods:
                raise not_among("profile.sweep_points", str(k), "methods", methods,
                                listed="method names (`dpbench list methods`)")
            count(v, f"profile.sweep_points.{k}")
        points = {str(k): int(v) for k, v in points.items()}
    return ProfileSpec(**{**spec.__dict__, "sweep_points": points,
                          "datasets": None if spec.datasets is None else
                          tuple(map(str, spec.datasets)),
                          "methods": None if spec.methods is None else
                          tuple(map(str, spec.methods))})


def experiment_spec(node: Mapping[str, Any]) -> ExperimentSpec:
    """The composed ``experiment`` block, checked; arena keys only in an arena."""
    node = {k: v for k, v in node.items() if v is not None or k in ("name", "task")}
    if _missing(node.get("name")):
        raise not_set("experiment.name", "an experiment yaml names itself (experiment.name)")
    arena = check("experiment.arena", node.pop("arena", False), [bool])
    extra = {k: node.pop(k) for k in ExperimentSpec.ARENA_KEYS if k in node}
    if extra and not arena:
        key = next(iter(extra))
        raise invalid(f"experiment.{key}", extra[key], "only an arena reads it "
                      "(experiment.arena: true)")
    arena_spec = None
    if arena:
        for key, value in extra.items():
            check(f"experiment.{key}", value, [list])
        arena_spec = ArenaSpec(**{k: tuple(map(str, v)) for k, v in extra.items()})
    valid = [*ExperimentSpec.CONSTRAINTS, "arena", *ExperimentSpec.ARENA_KEYS]
    stray = sorted(set(map(str, node)) - set(valid))
    if stray:
        raise unknown_key("experiment", stray[0], valid)
    spec = _build(ExperimentSpec, "experiment", node, strict=False, arena=arena_spec)
    for key in ("task_params_by_dataset", "method_params_by_dataset", "profiles"):
        for name, value in (getattr(spec, key) or {}).items():
            check(f"experiment.{key}.{name}", value, [Mapping, None])
    figures = spec.figures or ()
    for i, item in enumerate(figures):
        check(f"experiment.figures[{i}]", item, [str, Mapping])
        if isinstance(item, str) and item not in entries("figure"):
            raise unknown("figure", item, choices("figure"))
    return ExperimentSpec(**{**spec.__dict__, "figures": tuple(figures),
                             **{k: dict(getattr(spec, k) or {}) for k in (
                                 "task_params", "task_params_by_dataset",
                                 "method_params_by_dataset", "profiles")}})


def run_config(cfg: DictConfig | Mapping[str, Any]) -> RunConfig:
    """The composed config checked into a :class:`RunConfig`, or the one-line
    :class:`ConfigError` of its first bad value."""
    check_settings(cfg)
    node = {k: _plain(cfg[k]) if not (OmegaConf.is_config(cfg) and OmegaConf.is_missing(cfg, k))
            else None for k in cfg}
    runner = node.get("runner") or {}
    profile = profile_spec(node.get("profile") or {})
    trials = count(node.get("trials"), "trials")
    if profile.trials is not None:
        trials = min(trials, profile.trials)
    epsilons = axis_items(node.get("epsilons"), "epsilons")
    unit = check("budget_unit", node.get("budget_unit", "epsilon"),
                 [Options("budget_unit", BUDGET_UNITS)])
    delta = node.get("delta")
    for eps in epsilons:
        check_epsilon(eps, unit)
    check_delta(delta)
    experiment = experiment_spec(node.get("experiment") or {})
    limit = node.get("time_limit_s")
    if limit is not None and not Interval(float, 0, None, "neither").holds(limit):
        raise invalid("time_limit_s", limit, "it must be seconds > 0, or null")
    return RunConfig(
        experiment=experiment, profile=profile,
        runner=RunnerSpec(str(runner.get("name", "")), runner.get("n_jobs")),
        datasets=_axis(node.get("datasets"), "datasets"),
        methods=_axis(node.get("methods"), "methods"),
        epsilons=tuple(epsilons), budget_unit=unit, delta=delta, trials=trials,
        dataset_sweep=sweep_map(node.get("dataset_sweep"), "dataset_sweep"),
        method_sweep=sweep_map(node.get("method_sweep"), "method_sweep"),
        time_limit_s=None if limit is None else float(limit),
        results_dir=str(node.get("results_dir", "results")),
        reference=bool(node.get("reference", True)),
        data=node.get("data"), data_schema=node.get("schema"))


#: the figure-spec keys every kind takes (the experiment fills title, paper and note)
COMMON_FIGURE_KEYS = frozenset({"kind", "name", "title", "paper", "note", "methods"})


def figure_fields(fig: Mapping[str, Any]) -> None:
    """Refuse a figure spec without a kind or a name (every figure needs both)."""
    for key in ("kind", "name"):
        if _missing(fig.get(key)):
            name = fig.get("name")
            raise not_set(key, "every figure spec needs a kind and a name",
                          where=f"figure {name if not _missing(name) else dict(fig)!r}")


def figure_spec(fig: Mapping[str, Any], kinds: Mapping[str, frozenset[str]]) -> FigureSpec:
    """A figure spec checked against ``kinds`` (kind -> the keys it reads, the report's
    registry ``report.figure_keys.declared_keys``): a kind and a name set, the kind known,
    no key its kind does not read."""
    figure_fields(fig)
    kind, name = fig["kind"], fig["name"]
    if kind not in kinds:
        raise unknown("kind", kind, sorted(kinds), where=f"figure {name!r}")
    valid = COMMON_FIGURE_KEYS | kinds[kind]
    stray = sorted(set(fig) - valid)
    if stray:
        raise unknown_key(f"figure {name!r} ({kind})", stray[0], valid)
    own = {k: v for k, v in fig.items() if k not in COMMON_FIGURE_KEYS}
    return FigureSpec(kind=str(kind), name=str(name), title=fig.get("title"),
                      paper=fig.get("paper"), note=fig.get("note"),
                      methods=fig.get("methods"), keys=own)
