"""Time the excess-risk paper's 4-way AIM fit and its logistic regressions, per dataset.

For each dataset and settings profile this builds the trial the runner would run for
experiment exrisk_table2 (trial 0 at one eps, delta = 1/n^2, the tstr task's view of the
data, method aim_tstr's settings under the profile: conf/method/marginals/aim_tstr.yaml),
through dpbench's own config composition (``compose_config`` + ``expand``), then times in
this process, BLAS pinned to one thread as in the runner:

- one AIM fit (``release_marginals``, outside any artifact context, so never a cache hit):
  rounds, total seconds, seconds per round (mean; the first round apart), estimation vs
  candidate selection (``run_aim``'s own counters in ``model.info``);
- JAX warm-up, measured two ways: (a) JAX's compile events (tracing + lowering + XLA
  backend compile, from ``jax.monitoring``) summed over the fit; (b) a second, identical
  fit (same seed, so the same draws and cliques) right after the first: cold minus warm.
  Before each cold fit ``jax.clear_caches()`` drops compiled programs, so every repeat and
  every row starts cold, as a trial on a new model structure does (the persistent compile
  cache, dpbench/compile_cache.py, would still hand a repeat the programs the first fit
  compiled: run with ``DPBENCH_JAX_CACHE=off`` for cold repeats, or with a fresh
  ``DPBENCH_CACHE_DIR`` for a cold first fit);
- sampling the synthetic rows (as AIMSynth does), one ``tstr.evaluate`` call without the
  workload (the logistic-regression fits: synthetic rows and the real reference, per
  re-split and target), the task's marginal-error part (``marginal_errors``) apart, and one
  ``default_logistic`` fit on the real training rows: the baseline of the ratio line.

Not a test: run by hand, e.g.

    nice python scripts/bench_exrisk.py                                  # 6 datasets, default
    nice python scripts/bench_exrisk.py --datasets mpdp_heart --profile smoke
    nice python scripts/bench_exrisk.py --profile default paper --repeat 3 --out exrisk.json

With ``--repeat N`` every number is the median over N repeats (the JSON keeps each one).
AIM's settings are those the runner's method object builds from the trial's params.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax import monitoring
from threadpoolctl import threadpool_limits

from dpbench.artifacts import current_context
from dpbench.data.base import Split
from dpbench.data.workloads import build_workload
from dpbench.estimators import default_logistic
from dpbench.methods.marginals.aim import AIMSettings
from dpbench.methods.marginals.model import MarginalModel
from dpbench.methods.marginals.release import release_marginals
from dpbench.methods.outputs import SyntheticTable
from dpbench.methods.regression.aim_synth import AIMSynth
from dpbench.privacy import Accountant
from dpbench.runner.execute import import_object, resolve_delta, target_epsilon
from dpbench.runner.grid import expand, load_entry
from dpbench.runner.progress import progress_bar
from dpbench.runner.spec import TrialSpec
from dpbench.tasks import TASKS, tstr
from dpbench.workspace import compose_config

EXPERIMENT = "exrisk_table2"
METHOD = "aim_tstr"
PROFILES = ("default", "paper", "smoke")
COMPILE_EVENTS = ("/jax/core/compile/backend_compile_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/jaxpr_trace_duration")
COMPILE_NOTE = ("JAX warm-up = cold fit (after jax.clear_caches()) minus a second identical "
                "fit (same seed) in the same process; jax_compile_s = JAX's compile events "
                "(trace + lowering + XLA backend compile, jax.monitoring) summed over the fit")

#: (JSON key, header, format) of the printed table's columns
COLUMNS = (("dataset", "dataset", "{}"), ("profile", "profile", "{}"), ("n", "n", "{}"),
           ("rounds", "rounds", "{}"), ("fit_s", "fit_s", "{:.2f}"),
           ("warm_fit_s", "warm_s", "{:.2f}"), ("warmup_share", "warmup", "{:.0%}"),
           ("jax_compile_s", "jax_comp_s", "{:.2f}"), ("round_mean_s", "round_mean", "{:.3f}"),
           ("round1_s", "round1", "{:.3f}"), ("seconds_estimation", "estim_s", "{:.2f}"),
           ("seconds_selection", "select_s", "{:.2f}"), ("sample_s", "sample_s", "{:.3f}"),
           ("tstr_lr_s", "tstr_lr_s", "{:.3f}"), ("tstr_l1_s", "tstr_l1_s", "{:.3f}"),
           ("real_lr_s", "real_lr_s", "{:.4f}"))


class CompileClock:
    """Seconds and count of JAX compile events since the last ``reset`` (one listener:
    jax.monitoring has no public way to remove one)."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.backend_compiles = 0
        monitoring.register_event_duration_secs_listener(self._record)

    def _record(self, name: str, duration: float, **_: Any) -> None:
        if name in COMPILE_EVENTS:
            self.seconds[name] += duration
            self.backend_compiles += name == COMPILE_EVENTS[0]

    def reset(self) -> None:
        self.seconds.clear()
        self.backend_compiles = 0

    def total(self) -> float:
        return float(sum(self.seconds.values()))


def trial_spec(dataset: str, profile: str, epsilon: float) -> TrialSpec:
    """Trial 0 of exrisk_table2 for one dataset, profile and eps, as the runner expands it
    (the experiment's smoke profile narrows its datasets: lifted, any listed one may run)."""
    cfg = compose_config([f"experiment={EXPERIMENT}", f"profile={profile}",
                          f"datasets=[{dataset}]", f"methods=[{METHOD}]",
                          f"epsilons=[{epsilon}]", "trials=1", "++profile.datasets=null"])
    (spec,) = expand(cfg)
    return spec


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(fn(), wall seconds)."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def aim_settings(spec: TrialSpec) -> AIMSettings:
    """The AIM settings as the runner's method object builds them from the trial's params."""
    settings = AIMSynth(**spec.method_params).settings
    assert isinstance(settings, AIMSettings)
    return settings


def trial_data(spec: TrialSpec) -> tuple[Split, float, float]:
    """(split, epsilon, delta) of a trial, as the runner builds them (delta = 1/n^2)."""
    split = import_object(spec.dataset_target)(rng=spec.data_rng(), **spec.dataset_params)
    delta = resolve_delta(spec.delta, split.train.n)
    return split, target_epsilon(spec.epsilon, delta, spec.budget_unit), delta


def release(method: AIMSynth, settings: AIMSettings, split: Split, epsilon: float,
            delta: float, rng: np.random.Generator) -> MarginalModel:
    """The AIM model ``method`` releases with ``settings``, fitted here (never a cache hit)."""
    p = method.params
    model, info = release_marginals(
        split.train, Accountant(epsilon, delta, "zcdp"), rng, mechanism=p["mechanism"],
        workload=p["workload"], settings=settings, max_cells=p.get("max_cells"))
    if info["cache_hit"]:
        raise RuntimeError("the AIM fit came from the artifact cache: nothing was timed")
    return model


def aim_fit(method: AIMSynth, settings: AIMSettings, split: Split, epsilon: float,
            delta: float, rng: np.random.Generator, clock: CompileClock) -> dict[str, Any]:
    """One AIM release as ``method`` makes it, with ``settings`` (no artifact cache): the
    model and its timings."""
    clock.reset()
    model, wall = timed(lambda: release(method, settings, split, epsilon, delta, rng))
    rounds = [float(r["seconds"]) for r in model.info["trace"]]
    return {
        "model": model, "fit_s": wall, "rounds": int(model.info["rounds"]),
        "rounds_budget": int(model.info["rounds_budget"]),
        "annealed_rounds": int(model.info["annealed_rounds"]),
        "model_size_mb": float(model.info["model_size_mb"]),
        "measured": list(model.info["measured"]),
        "round_mean_s": float(np.mean(rounds)) if rounds else 0.0,
        "round1_s": rounds[0] if rounds else 0.0,
        "candidates_mean": float(np.mean([r["candidates"] for r in model.info["trace"]]))
        if rounds else 0.0,
        "outside_rounds_s": wall - sum(rounds),   # workload, 1-way init + final estimates
        "seconds_estimation": float(model.info["seconds_estimation"]),
        "seconds_selection": float(model.info["seconds_selection"]),
        "jax_compile_s": clock.total(),
        "jax_compile_by_event_s": {k.rsplit("/", 1)[1]: v for k, v in clock.seconds.items()},
        "backend_compiles": clock.backend_compiles,
    }


def one_repeat(spec: TrialSpec, settings: AIMSettings, clock: CompileClock,
               status: Callable[[str], None]) -> dict[str, Any]:
    """Every timing of one (dataset, profile) once: cold + warm AIM fit, sampling, LR."""
    split, epsilon, delta = trial_data(spec)
    method = AIMSynth(**spec.method_params)
    task_params = TASKS["tstr"].resolve_params(spec.task_params)

    status("cold AIM fit")
    jax.clear_caches()
    rng = spec.method_rng()
    cold = aim_fit(method, settings, split, epsilon, delta, rng, clock)
    status("warm AIM fit")
    warm = aim_fit(method, settings, split, epsilon, delta, spec.method_rng(), clock)

    status("sample + LR")
    released = cold.pop("model")
    warm.pop("model")
    rows = method.params["synth_rows"] or max(1, int(round(released.total)))
    synth, sample_s = timed(lambda: released.sample(rows, rng))   # as AIMSynth.fit draws it
    X, y = split.train.encoding.encode(synth)
    table = SyntheticTable(np.asarray(X), np.asarray(y), synth)
    tstr._REAL.clear()   # the real-data reference is cached per process: refit it each time
    _, lr_s = timed(lambda: tstr.evaluate(table, split, targets=task_params["targets"]))
    l1_s = 0.0
    if task_params["workload"] is not None:
        domain = dict(split.train.domain)
        _, l1_s = timed(lambda: tstr.marginal_errors(
            split.train.discrete, synth[list(domain)], domain, task_params["workload"],
            task_params["max_cells"]))
    _, real_s = timed(lambda: default_logistic(split.train.X, split.train.y))

    enc, p = split.train.encoding, method.params
    attrs = (*enc.attributes, enc.target)
    workload = build_workload(p["workload"], attrs, target=enc.target,
                              domain={a: int(split.train.domain[a]) for a in attrs},
                              max_cells=p.get("max_cells"))
    warmup = cold["fit_s"] - warm["fit_s"]
    return {**cold, "epsilon": epsilon, "delta": delta, "n": split.train.n,
            "attributes": len(attrs), "workload_marginals": len(workload),
            "warm_fit_s": warm["fit_s"], "warm_jax_compile_s": warm["jax_compile_s"],
            "warm_backend_compiles": warm["backend_compiles"],
            "warm_round_mean_s": warm["round_mean_s"], "warm_round1_s": warm["round1_s"],
            "warmup_s": warmup, "warmup_share": warmup / cold["fit_s"],
            "jax_compile_share": cold["jax_compile_s"] / cold["fit_s"],
            "warm_same_cliques": warm["measured"] == cold["measured"],
            "synthetic_rows": rows, "sample_s": sample_s, "tstr_lr_s": lr_s,
            "tstr_l1_s": l1_s, "real_lr_s": real_s}


def summarise(dataset: str, profile: str, spec: TrialSpec, settings: AIMSettings,
              reps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One row: medians over the repeats of every number (the repeats themselves kept)."""
    row: dict[str, Any] = {"dataset": dataset, "profile": profile,
                           "settings": settings.as_dict(), "method_params": spec.method_params}
    for key, value in reps[0].items():
        if isinstance(value, bool):
            row[key] = all(r[key] for r in reps)
        elif isinstance(value, int):
            row[key] = statistics.median_low(r[key] for r in reps)
        elif isinstance(value, float):
            row[key] = statistics.median(r[key] for r in reps)
    row["repeats"] = [{k: v for k, v in r.items() if k != "measured"} for r in reps]
    row["measured"] = reps[0]["measured"]
    return row


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    """A plain table, one row per (dataset, profile), as the other bench scripts print."""
    cells = [[h for _, h, _ in COLUMNS]]
    cells += [[fmt.format(r[k]) for k, _, fmt in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    for line in cells:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    datasets = list(load_entry("experiment", EXPERIMENT)["datasets"])
    ap.add_argument("--datasets", nargs="+", choices=datasets, default=datasets)
    ap.add_argument("--profile", nargs="+", choices=PROFILES, default=["default"],
                    help="aim_tstr (and dataset view) settings under these profiles")
    ap.add_argument("--epsilon", "--eps", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=1, help="repeats; every number is a median")
    ap.add_argument("--out", type=Path, help="also write the rows (and each repeat) as JSON")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if current_context() is not None:
        raise RuntimeError("inside an artifact context: AIM fits could come from the cache")

    clock = CompileClock()
    jax.numpy.zeros(()).block_until_ready()    # JAX backend start-up, outside every fit
    cases = [(d, p) for d in args.datasets for p in args.profile]
    rows: list[dict[str, Any]] = []
    with threadpool_limits(limits=1), progress_bar(disable=args.no_progress) as bar:
        task = bar.add_task("exrisk AIM bench", total=len(cases) * args.repeat, status="")
        for dataset, profile in cases:
            spec = trial_spec(dataset, profile, args.epsilon)
            settings = aim_settings(spec)
            reps = []
            for r in range(args.repeat):
                def status(stage: str, d: str = dataset, p: str = profile, r: int = r) -> None:
                    bar.update(task, status=f"{d} {p} #{r + 1}: {stage}")
                reps.append(one_repeat(spec, settings, clock, status))
                bar.update(task, advance=1)
            rows.append(summarise(dataset, profile, spec, settings, reps))

    print(f"{EXPERIMENT} / {METHOD}: eps {args.epsilon}, delta 1/n^2, trial 0, "
          f"median of {args.repeat} repeat(s), BLAS 1 thread, {os.cpu_count()} CPUs")
    print(COMPILE_NOTE)
    for profile in args.profile:
        first = next(r for r in rows if r["profile"] == profile)
        print(f"{profile} AIM settings: {first['settings']}, "
              f"max_cells {first['method_params'].get('max_cells')}")
    print_table(rows)
    for r in rows:
        if not r["warm_same_cliques"]:
            print(f"warning: {r['dataset']} {r['profile']}: the warm fit selected other "
                  "cliques than the cold one; its warm-up figure is not clean")
    print("ratios to the real-data default_logistic fit of the same dataset "
          "(baseline = 1.00, same process):")
    for r in rows:
        base = r["real_lr_s"]
        print(f"  {r['dataset']} {r['profile']}: AIM fit {r['fit_s'] / base:.1f}x, "
              f"warm AIM fit {r['warm_fit_s'] / base:.1f}x, JAX warm-up "
              f"{r['warmup_s'] / base:.1f}x, tstr LR fits {r['tstr_lr_s'] / base:.1f}x, "
              f"tstr marginal errors {r['tstr_l1_s'] / base:.1f}x")
    if args.out:
        meta = {"experiment": EXPERIMENT, "method": METHOD, "epsilon": args.epsilon,
                "repeat": args.repeat, "compile_measure": COMPILE_NOTE,
                "cpus": os.cpu_count(), "python": platform.python_version(),
                "jax": jax.__version__}
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
