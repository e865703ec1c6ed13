"""Running one trial: data -> fit under a ledger -> task metrics -> stored record."""

from __future__ import annotations

import ast
import importlib
import math
import operator
import os
import platform
import resource
import signal
import socket
import sys
import threading
import time
import traceback
import tracemalloc
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from threadpoolctl import threadpool_limits

from dpbench import compile_cache
from dpbench.artifacts import ArtifactBusy, artifact_context
from dpbench.privacy.accountant import (
    BUDGET_REL_TOL,
    Accountant,
    BudgetExceeded,
    validate_budget,
)
from dpbench.privacy.conversions import cdp_eps, gdp_eps
from dpbench.privacy.relations import group_guarantee, group_size, native_target
from dpbench.roots import commit
from dpbench.runner import hostspeed
from dpbench.runner.diskspace import is_full
from dpbench.runner.reference import machine_text
from dpbench.runner.spec import TrialSpec, digest
from dpbench.runner.store import FAILED, OK, ResultStore
from dpbench.tasks import TASKS

if TYPE_CHECKING:
    from dpbench.methods.base import Method

_VERSIONED = ("dpbench", "numpy", "scipy", "pandas", "scikit-learn", "mbi", "jax", "torch",
              "opacus", "numpyro")


def import_object(path: str) -> Any:
    """Import ``pkg.module.attr`` or ``pkg.module:attr``."""
    module, _, attr = path.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from None


#: the longest delta rule accepted, and the largest exact integer power (in bits) it may
#: compute: beyond, a power is taken in floating point, where it overflows at once
MAX_RULE_CHARS, MAX_INT_POWER_BITS = 200, 4096
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv}


def _power(a: float, b: float) -> float:
    """``a ** b``, exact for small integers (the rules' usual ``1/n**2``), else in floating
    point, so that no rule computes an unbounded integer."""
    if isinstance(a, int) and isinstance(b, int) and b > 0 and \
            a.bit_length() * b > MAX_INT_POWER_BITS:
        return float(a) ** float(b)
    return a ** b


def _evaluate(node: ast.AST, n: int) -> float:
    """The value of a delta rule's syntax tree: n, numbers, + - * / ** and unary minus."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, n)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id == "n":
        return n
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand, n)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_evaluate(node.left, n), _evaluate(node.right, n))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left, n), _evaluate(node.right, n))
    raise ValueError("it may only use n, numbers and + - * / **")


def resolve_delta(delta: float | str, n: int) -> float:
    """A numeric delta, or a rule in n such as ``"n**-1.1"`` or ``"1/n**2"``, evaluated with
    bounded arithmetic (no builtins, no unbounded integer power); ValueError naming the rule
    for anything else, an overflow, a division by zero or a complex value."""
    if not isinstance(delta, str):
        return float(delta)
    if len(delta) > MAX_RULE_CHARS:
        raise ValueError(f"delta rule of {len(delta)} characters (at most {MAX_RULE_CHARS})")
    try:
        value = _evaluate(ast.parse(delta, mode="eval"), n)
    except SyntaxError as exc:
        raise ValueError(f"delta rule {delta!r} is not an expression ({exc.msg})") from None
    except (OverflowError, ZeroDivisionError, RecursionError) as exc:
        raise ValueError(f"delta rule {delta!r} cannot be evaluated at n = {n}: "
                         f"{type(exc).__name__}") from None
    except ValueError as exc:
        raise ValueError(f"delta rule {delta!r}: {exc}") from None
    if isinstance(value, complex):
        raise ValueError(f"delta rule {delta!r} is not a real number at n = {n}")
    return float(value)


def target_epsilon(value: float, delta: float, unit: str) -> float:
    """The (epsilon, delta) target equivalent to a budget given as epsilon, mu-GDP or rho-zCDP."""
    if unit == "epsilon":
        return float(value)
    if unit == "mu":
        return gdp_eps(value, delta)
    if unit == "rho":
        return cdp_eps(value, delta)
    raise ValueError(f"budget_unit={unit!r} unknown; valid: epsilon, mu, rho")


#: the largest (epsilon, delta) target a trial may have: no mechanism here is private in any
#: useful sense beyond it, and the zCDP / GDP conversions are checked to round-trip up to
#: ten times it (tests/core/test_privacy_conversions.py); a typo such as 1e308 is refused
MAX_EPSILON = 1e4


def trial_ledger(spec: TrialSpec, n: int, model: Method) -> tuple[float, float, int, Accountant]:
    """The cell's (epsilon, delta) target for ``n`` training rows, the group size that states
    it under the cell's relation, and the empty ledger ``model`` fits against; a one-line
    ValueError when the budget is invalid or the method cannot run within it
    (``Method.check_budget``). The runner calls it before any trial (preflight) and in the
    trial itself, so both see the same budget."""
    delta = resolve_delta(spec.delta, n)
    epsilon = target_epsilon(spec.epsilon, delta, spec.budget_unit)
    validate_budget(epsilon, delta)
    if epsilon > MAX_EPSILON:
        given = f"{spec.budget_unit}={spec.epsilon:g}" + (
            f" (epsilon {epsilon:.4g} at delta {delta:.3g})" if spec.budget_unit != "epsilon"
            else "")
        raise ValueError(f"{given} is beyond the largest budget a trial may have: valid: "
                         f"epsilon <= {MAX_EPSILON:g}")
    group = relation_group(model.neighbours, spec.relation)
    ledger = Accountant(*native_target(epsilon, delta, model.accounting, group),
                        currency=model.accounting)
    model.check_budget(ledger)
    return epsilon, delta, group, ledger


class TrialTimeout(Exception):
    """A trial ran past its time limit (``time_limit_s``): stored as a failed record."""


@contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`TrialTimeout` in this thread after ``seconds`` (None: no limit).

    SIGALRM interrupts Python code between bytecodes, so a long native call (one BLAS
    product, one XLA program) ends first; the limit is for cells that run for minutes.
    Only the main thread may set it (the local and SLURM workers run trials there);
    elsewhere the limit is not applied."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TrialTimeout(f"exceeded the time limit of {seconds:g} s (time_limit_s)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def relation_group(native: str, relation: str | None) -> int:
    """The group size k that turns the method's native guarantee into one under the cell's
    ``relation`` (1 when none is set); a ValueError if none does (the grid refuses such
    cells before any trial, so this is a last guard)."""
    if relation is None:
        return 1
    k = group_size(native, relation)
    if k is None:
        raise ValueError(f"a {native} guarantee implies none under {relation} neighbours")
    return k


def relation_record(ledger: Accountant, relation: str | None, group: int, epsilon: float,
                    delta: float) -> dict[str, Any]:
    """The record's statement of a cell stated for another relation than the method's:
    the relation, the group size, the cell's (epsilon, delta) and the guarantee derived
    from what the ledger spent (privacy/relations.py)."""
    if relation is None:
        return {}
    eps_k, delta_k = group_guarantee(ledger.summary(), group)
    if eps_k > epsilon * (1 + BUDGET_REL_TOL) or delta_k > delta * (1 + BUDGET_REL_TOL):
        raise BudgetExceeded(f"under {relation} neighbours the method spent ({eps_k:.6g}, "
                             f"{delta_k:.3g}) of a cell's ({epsilon:.6g}, {delta:.3g})")
    return {"relation": relation, "group_k": float(group), "cell_epsilon": epsilon,
            "cell_delta": delta, "relation_epsilon": eps_k, "relation_delta": delta_k}


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def reset_peak_rss() -> bool:
    """Reset this process's peak resident set size (Linux: clear_refs 5); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    """Peak RSS since the last reset (VmHWM), in MiB; None where /proc is unavailable."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def execute(spec: TrialSpec, *, trace_memory: bool = False) -> dict[str, Any]:
    """Run one trial and return its record (status ok or failed, never raises on method errors)."""
    record: dict[str, Any] = {
        "key": spec.key, "spec": spec.to_dict(), "host": socket.gethostname(), "pid": os.getpid(),
        "started_at": datetime.now(UTC).isoformat(), "versions": library_versions(),
        "commit": commit(), "cpu": machine_text(),
        "argv": sys.argv[:1],
    }
    # the machine's speed now (a fixed workload's CPU seconds, re-measured every few
    # minutes): what makes this trial's cpu_s comparable with another sitting's
    record[hostspeed.FIELD] = hostspeed.current()
    rss_reset = reset_peak_rss()
    t0, cpu0 = time.perf_counter(), time.process_time()
    if trace_memory:
        tracemalloc.start()
    try:
        # one BLAS thread: bit-identical results whatever the worker count
        with threadpool_limits(limits=1), time_limit(spec.meta.get("time_limit_s")):
            loader = import_object(spec.dataset_target)
            split = loader(rng=spec.data_rng(), **spec.dataset_params)
            t_data = time.perf_counter()
            cls = import_object(spec.method_target)
            model = cls(**spec.method_params)
            model.check_data(split.train)     # an arena's cell out of the method's reach
            epsilon, delta, group, ledger = trial_ledger(spec, split.train.n, model)
            model.fit(split.train, ledger, spec.method_rng())
            t_fit = time.perf_counter()
            if cls.private and not ledger.charges:
                raise RuntimeError(f"private method {spec.method!r} charged nothing to its ledger")
            task = TASKS[spec.task]
            kinds = cls.scored_kinds(task, spec.method_params)
            metrics = task.score(model.output(kinds), split, spec.task_params)
            t_eval = time.perf_counter()
        record.update(
            status=OK,
            metrics={k: float(v) for k, v in metrics.items()},
            info=model.info(),
            privacy={**ledger.summary(), "private": cls.private,
                     "neighbours": model.neighbours,  # an instance may refine its class's
                     **relation_record(ledger, spec.relation, group, epsilon, delta),
                     **({"noiseless_info": ",".join(sorted(cls.noiseless_info))}
                        if cls.noiseless_info else {}),
                     "charges": [c.__dict__ for c in ledger.charges]},
            n_train=split.train.n, n_test=split.test.n, d=split.train.d,
            timing={"data_s": t_data - t0, "fit_s": t_fit - t_data, "eval_s": t_eval - t_fit},
        )
    except Exception as exc:  # the trial fails, the sweep goes on
        if is_full(exc) or isinstance(exc, ArtifactBusy):   # ... unless the disk is full
            raise          # (the run stops) or the trial is deferred: nothing recorded
        record.update(status=FAILED, error=f"{type(exc).__name__}: {exc}",
                      traceback=traceback.format_exc())
    finally:
        if trace_memory:
            record["peak_mem_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    record["wall_s"] = time.perf_counter() - t0
    # the worker process's CPU seconds over the trial (every thread): unlike wall_s, not
    # stretched when other work shares the cores, so it is what reference costs keep
    record["cpu_s"] = time.process_time() - cpu0
    record["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # whole-process peak RSS during this trial (native JAX/torch memory included)
    record["peak_rss_mb"] = peak_rss_mb() if rss_reset else None
    record["finished_at"] = datetime.now(UTC).isoformat()
    _finite_or_none(record)
    return record


#: outcomes of :func:`run_trial` besides a record's own status (ok / failed, computed here)
DONE_ELSEWHERE = "done by another run"    # stored ok (before or while this run was at it)
FAILED_ELSEWHERE = "failed in another run"  # stored failed by another run since ``since``
HELD = "held by another run"              # a live run holds the trial's lease: ask again later
#: test aid: append "<key> <host> <pid>" to this file each time a trial starts computing
COMPUTE_LOG_ENV = "DPBENCH_COMPUTE_LOG"
#: test aid: seconds a trial sleeps, holding its lease, before its record is stored
HOLD_ENV = "DPBENCH_TRIAL_HOLD_S"


def run_trial(spec: TrialSpec | dict[str, Any], store_root: str, *,
              trace_memory: bool = False, since: float | None = None,
              defer: bool = False) -> str:
    """Compute one trial under its lease and store its record; returns the outcome.

    This is the unit of work for every backend (local joblib worker, SLURM task). The trial
    is computed only if it is not stored ok and this process wins its lease
    (``ResultStore.claim``), so concurrent runs of one grid split it. Outcomes: ``ok`` /
    ``failed`` (computed here), :data:`DONE_ELSEWHERE` (already stored ok),
    :data:`FAILED_ELSEWHERE` (stored failed by another run after ``since``, the unix time
    this run started: not retried; failed records from before are), :data:`HELD` (another
    live run is computing it; or, with ``defer``, another process is building a shared
    artifact it needs: the runner asks again later, its worker meanwhile takes other trials).
    A damaged record is quarantined before the trial is recomputed.
    """
    spec = spec if isinstance(spec, TrialSpec) else TrialSpec.from_dict(spec)
    store = ResultStore(store_root)
    outcome = stored_outcome(store, spec.key, since)
    if outcome:
        return outcome
    lease = store.claim(spec.key)
    if lease is None:
        return HELD
    try:
        outcome = stored_outcome(store, spec.key, since)  # stored while we were claiming it
        if outcome:
            return outcome
        store.quarantine(spec.key, lease=lease)  # a damaged record: kept aside, not overwritten
        # Shared intermediates (one release per trial cell for every method built on it) are
        # cached under <results_dir>/cache, keyed by the cell's data identity (artifacts.py);
        # so are compiled JAX programs (compile_cache.py), for every later trial and process.
        cache = Path(store_root).parent / "cache"
        compile_cache.use_root(cache)
        compile_cache.max_bytes()           # a bad cache cap fails here, before the work
        try:
            with store.keep_alive(lease), artifact_context(
                    cell=digest(spec.data_identity()), root=cache, defer=defer):
                _log_computation(spec.key)
                record = execute(spec, trace_memory=trace_memory)
                time.sleep(float(os.environ.get(HOLD_ENV) or 0))
        except ArtifactBusy:
            return HELD
        store.put(record)
        compile_cache.prune_if_grown()      # the stored programs back within their cap
        return record["status"]
    finally:
        store.release(lease)


def stored_outcome(store: ResultStore, key: str, since: float | None) -> str | None:
    """:data:`DONE_ELSEWHERE` if ``key`` is stored ok, :data:`FAILED_ELSEWHERE` if it was
    stored failed after ``since``; None if the trial is still to compute."""
    record = store.get(key)
    if record is None:
        return None
    if record["status"] == OK:
        return DONE_ELSEWHERE
    if since is not None and _finished_unix(record) >= since:
        return FAILED_ELSEWHERE
    return None


def _finished_unix(record: dict[str, Any]) -> float:
    """When a record was finished (unix time; -inf if it does not say)."""
    try:
        return datetime.fromisoformat(record["finished_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return -math.inf


def _log_computation(key: str) -> None:
    """Append this computation to the file named by :data:`COMPUTE_LOG_ENV`, if set (one
    short O_APPEND write: lines of concurrent processes never interleave)."""
    path = os.environ.get(COMPUTE_LOG_ENV)
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{key} {socket.gethostname()} {os.getpid()}\n".encode())
        finally:
            os.close(fd)


def _finite_or_none(obj: Any) -> None:
    """Replace nan/inf metric values by None so the JSON stays standard."""
    metrics = obj.get("metrics") or {}
    for k, v in metrics.items():
        if isinstance(v, float) and not math.isfinite(v):
            metrics[k] = None
