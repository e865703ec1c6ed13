"""Time AIM on Adult (DD-SSP's discretised Adult, all 2-way marginals): per round, total, JAX.

The data is trial 0's training split of conf/dataset/adult/adult.yaml (47,842 rows, the
linear-regression encoding: 14 features + education-num), exactly what DD-SSP gets.

Not a test: run by hand, e.g.

    nice python scripts/bench_aim.py                       # paper settings, eps 0.1 and 1.0
    nice python scripts/bench_aim.py --profile default --eps 0.05 2.0

Prints one row per run: rounds, annealed rounds, measured cliques, final model
size, total seconds, seconds in estimation, in candidate selection, and in JAX
compilation (tracing + lowering + XLA backend compile or persistent-cache load, from
jax.monitoring; then each of the three), how many programs were compiled and how many
loaded from the persistent cache, how many estimation programs were exported and how many
loaded from the program store, how many fits ran flat.py's shared size-class program
(dpbench/compile_cache.py, program_store.py;
``DPBENCH_CACHE_DIR`` picks its root, e.g. a fresh directory for a cold start;
``DPBENCH_JAX_CACHE=off`` disables both), the mean / max seconds per round, and a digest
of the fit (measured cliques, charges, model tables): equal digests mean identical fits,
e.g. before and after a change.

``--per-fit FILE`` appends one JSON line per estimation (model cells, iterations, whether the
shared program ran it, seconds including the wait for the result, compile-event seconds),
e.g. to compare the oracles (``--oracle hugin`` / ``guarded`` / ``semistable``) or the two programs
(``--shared-max-cells 0``) fit by fit.

Compile time in a later process: run the same command twice with one cache directory.
Like the ``dpbench`` command, the script re-executes itself with ``PYTHONHASHSEED=0`` when
the variable is unset (compile_cache.reexec_with_hash_seed); set it to ``random`` (or two
different values) to measure processes with different hash seeds. It also runs XLA on one
thread, as trials do, unless ``NPROC`` is set.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench import compile_cache  # noqa: E402

# like the dpbench command: XLA on one thread unless NPROC is set (NPROC=2 measures a
# 2-thread fit), PYTHONHASHSEED=0 unless set (one hash seed, so a later process finds the
# compiled programs; PYTHONHASHSEED=random measures a process without it)
compile_cache.pin_xla_threads()
compile_cache.reexec_with_hash_seed()

import jax  # noqa: E402
from jax import monitoring  # noqa: E402

from dpbench import program_store  # noqa: E402
from dpbench.data.workloads import build_workload  # noqa: E402
from dpbench.methods.marginals import _mbi, flat  # noqa: E402
from dpbench.methods.marginals.aim import AIMSettings, run_aim  # noqa: E402
from dpbench.methods.marginals.release import AIM_PARAMS  # noqa: E402
from dpbench.privacy import Accountant  # noqa: E402
from dpbench.runner.execute import import_object  # noqa: E402
from dpbench.runner.grid import load_entry  # noqa: E402

COMPILE_EVENTS = ("/jax/core/compile/backend_compile_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/jaxpr_trace_duration")
BACKEND = COMPILE_EVENTS[0]
CACHE_HIT = "/jax/compilation_cache/cache_hits"


def fit_digest(model: object) -> str:
    """First 12 hex digits of sha256 over measured cliques, charges and model tables."""
    h = hashlib.sha256(repr((model.info["measured"], [(c.label, c.rho) for c in model.charges])
                            ).encode())
    for t in model.tables:
        h.update(np.ascontiguousarray(t).tobytes())
    return h.hexdigest()[:12]


def record_fits(path: Path, compile_s: collections.Counter[str], context: dict) -> None:
    """Wrap the estimation entry point so each fit appends a JSON line to ``path``: its
    model's cells, iterations, whether flat.py's shared program ran it, wall seconds and
    compile-event seconds (trace + lower + backend or cache load), after the keys of
    ``context`` (updated by the caller), e.g. to compare oracles fit by fit on the same
    rounds."""
    inner = flat.estimate_mrf

    def timed(domain: object, measurements: list, *, iters: int, **kwargs: object) -> object:
        cliques = list(dict.fromkeys(tuple(m.clique) for m in measurements))
        before = sum(compile_s[e] for e in COMPILE_EVENTS)
        shared = flat.stats["fits"]
        t0 = time.perf_counter()
        fit = inner(domain, measurements, iters=iters, **kwargs)
        jax.block_until_ready(jax.tree_util.tree_leaves((fit.potentials, fit.marginals)))
        row = {**context, "cells": _mbi.model_size_mb(domain, cliques) * 2**20 / 8,
               "cliques": len(cliques), "iters": iters, "shared": flat.stats["fits"] > shared,
               "seconds": time.perf_counter() - t0,
               "compile_s": sum(compile_s[e] for e in COMPILE_EVENTS) - before}
        with path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        return fit

    flat.estimate_mrf = timed


def load_train(dataset: str, profile: str, seed: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """The training split of a dataset yaml (as the runner builds it), as AIM sees it:
    the encoding's features plus the target, integer codes, and their domain sizes."""
    entry = load_entry("dataset", dataset)
    params = {**entry.get("params", {}), **(entry.get("profiles", {}).get(profile) or {})}
    train = import_object(entry["_target_"])(rng=np.random.default_rng(seed), **params).train
    attrs = [*train.encoding.attributes, train.encoding.target]
    return train.discrete[attrs], {a: int(train.domain[a]) for a in attrs}


def method_settings(method: str, profile: str) -> dict[str, object]:
    """The AIM settings a method yaml gives under a profile (params + profile overrides)."""
    entry = load_entry("method", method)
    params = {**entry.get("params", {}), **(entry.get("profiles", {}).get(profile) or {})}
    return {k: v for k, v in params.items() if k in AIM_PARAMS and v is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--profile", choices=["paper", "default", "smoke"], default="paper",
                    help="settings of conf/method/marginals/ddssp.yaml under this profile")
    ap.add_argument("--max-model-size", type=float)
    ap.add_argument("--max-iters", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--rounds-per-attribute", type=float)
    ap.add_argument("--oracle", help="marginal oracle of the estimator (_mbi.ORACLES)")
    ap.add_argument("--shared-max-cells", type=int,
                    help="models up to this many cells use flat.py's shared program "
                         "(0: mbi's program per structure for every fit)")
    ap.add_argument("--dataset", default="adult", help="a conf/dataset yaml (default: adult)")
    ap.add_argument("--workload", default="all_pairs",
                    help="a workloads.py name, e.g. all_pairs (DD-SSP's), all_triples, all_4way")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="log every AIM round")
    ap.add_argument("--per-fit", type=Path, metavar="JSONL",
                    help="append one line per estimation (eps, oracle, model cells, "
                         "iterations, seconds, compile-event seconds) to this file")
    args = ap.parse_args()
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("jax").setLevel(logging.WARNING)

    settings = method_settings("ddssp", args.profile)
    for key in ("max_model_size", "max_iters", "rounds", "rounds_per_attribute", "oracle",
                "shared_max_cells"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    frame, sizes = load_train(args.dataset, args.profile, args.seed)
    workload = build_workload(args.workload, list(frame.columns))
    compile_s: collections.Counter[str] = collections.Counter()
    monitoring.register_event_duration_secs_listener(
        lambda name, dur, **_: compile_s.update({name: dur, name + ":n": 1})
        if name in COMPILE_EVENTS else None)
    monitoring.register_event_listener(
        lambda name, **_: compile_s.update({"hits": 1}) if name == CACHE_HIT else None)

    context = {"oracle": settings.get("oracle", AIMSettings().oracle)}
    if args.per_fit:
        record_fits(args.per_fit, compile_s, context)

    print(f"{args.dataset} n={len(frame)}, {len(sizes)} attributes, "
          f"workload {args.workload} ({len(workload)} cliques), settings {settings}, JAX cache "
          f"{compile_cache.jax_cache_dir() if compile_cache.enabled() else 'off'}")
    header = ("eps", "rounds", "annealed", "cliques", "model_MB", "total_s", "estim_s",
              "select_s", "jax_compile_s", "trace_s", "lower_s", "backend_s", "compiled",
              "loaded", "exported", "export_loaded", "shared_fits", "round_mean_s", "round_max_s",
              "fallbacks", "digest")
    print(" | ".join(header))
    for eps in args.eps:
        context["eps"] = eps
        compile_s.clear()
        exported, loaded = program_store.stats["exported"], program_store.stats["loaded"]
        shared = flat.stats["fits"]
        fallbacks = sum(_mbi.FALLBACKS.values())
        acc = Accountant(eps, args.delta, "zcdp")
        t0 = time.perf_counter()
        model = run_aim(frame, sizes, workload, acc, np.random.default_rng(args.seed),
                        AIMSettings(**settings))
        total = time.perf_counter() - t0
        info = model.info
        per_round = [r["seconds"] for r in info["trace"]] or [0.0]
        row = (eps, info["rounds"], info["annealed_rounds"], len(set(info["measured"])),
               round(info["model_size_mb"], 2), round(total, 1),
               round(info["seconds_estimation"], 1), round(info["seconds_selection"], 1),
               round(sum(compile_s[e] for e in COMPILE_EVENTS), 1),
               *(round(compile_s[e], 2) for e in reversed(COMPILE_EVENTS)),
               compile_s[BACKEND + ":n"] - compile_s["hits"], compile_s["hits"],
               program_store.stats["exported"] - exported, program_store.stats["loaded"] - loaded,
               flat.stats["fits"] - shared,
               round(float(np.mean(per_round)), 2), round(float(np.max(per_round)), 2),
               sum(_mbi.FALLBACKS.values()) - fallbacks, fit_digest(model))
        print(" | ".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
