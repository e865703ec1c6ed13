"""dpbench's MWEM, PEP, GEM, GEM-Pub, RAP and RAP-softmax beside the authors' code of the
query-release paper (Liu, Vietri & Wu, NeurIPS 2021; their iterative-dp), on the same rows
and workload.

The authors' code is run from the user's own checkout, unedited, in its own virtual
environment ``.bench-peers-qr-venv`` (gitignored; created on first use: torch 2.13.0, numpy
1.26 and what their MWEM / PEP / GEM / RAP import, with their rdt 0.4.0 installed without
its dependencies and past its "Python < 3.9"), by scripts/bench_peers_qr_authors.py.

    git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp
    make bench-peers-qr PEER_QR=/path/to/iterative-dp
    make bench-peers-qr-gem-pub PEER_QR=/path/to/iterative-dp     # GEM-Pub, 5 seeds a side
    python scripts/bench_peers_qr.py --checkout /path/to/iterative-dp --methods rap \
        --datasets qr_adult_reduced --eps 1 --limit 600 --out results/bench_peers_qr.json

Cells: ADULT (reduced) (``qr_adult_reduced``, their ``adult-small``: 7 attributes, 35
3-way marginals, 14,955 queries) and ADULT (``qr_adult``, their ``adult``: 13 attributes,
286 marginals, 334,128 queries); both sides read the same file (their
Datasets/adult.csv, which dpbench vendors as data/itdp_adult, the same bytes) and keep the
same 43,944 private rows (their ``adult_seed`` 0 split). MWEM and PEP run on ADULT
(reduced) only, as in the paper, GEM-Pub on ADULT only (its 4,869 public rows). eps 0.1
and 1, delta = 1/N^2; seed 0 on both sides, or ``--trials N``: seeds 0 .. N-1 on each side
(independent draws: the sides' generators differ), and then per cell and error each side's
mean ± s.e. and z = (dpbench - authors) / sqrt(se_d^2 + se_a^2).

Settings: dpbench's method yamls (conf/method/query_release/, paper profile), passed to
the authors' code as their flags: MWEM T 100; PEP T 50, T_max 25; GEM T 100, Adam lr 1e-4,
100 steps per round, alpha 0.67, network 512 / (1024, 1024), B = 1,000; RAP K 10, T 10, lr
1e-3 (Table 3; their adult scripts use 5e-3), 5,000 steps per round, n' = 1,000; RAP-softmax
the same with lr 0.1 (Table 3); GEM-Pub GEM's settings at T 40 after a pre-training on the
public rows of at most 10,000 epochs (stop after 500 without improvement, halve the rate
after 100; ``--pretrain-epochs`` lowers the cap on both sides, arguments of their
``GEM_nondp.fit`` that their script does not expose). Each side pre-trains once, seeded
with ``pretrain_seed`` (0), as its own run before the fits (limit ``--pretrain-limit``),
and every seed and eps fine-tunes from it: the authors' from its ``best.pkl`` (generator
and latents), dpbench's from its artifact cache in the scratch directory.
``--T gem=30`` (and ``--K``) changes a method's T on both sides. Their RAP converts eps to
rho with Bun & Steinke's bound, so dpbench's RAP and RAP-softmax run with
``rho_conversion: bun_steinke`` here (the same rho); the other methods use the exact
conversion on both sides.

Each run is a fresh process, one after the other, with one torch thread and
OMP_NUM_THREADS=1 (dpbench: also one BLAS thread), killed after ``--limit`` seconds (then
reported as "did not finish in N s", a lower bound). For each: wall and CPU seconds of the
process and of the fit (each side's fit after its imports: dpbench's side imports what its
fits import on first use, scipy.optimize and Numba, before the fit's clock, as the
authors' side imports its modules before its own), peak resident memory (getrusage of the
child), rounds, optimiser steps (MWEM: multiplicative updates on dpbench's side, rounds on
theirs; PEP: projection steps; GEM / RAP: Adam steps) and fit CPU ms per step, and the max
and mean absolute error of the output over the whole workload on the private rows. Then
the ratios authors / dpbench. The output compared: MWEM and PEP their last distribution,
GEM the expected answers of the EMA (0.9) of the last T/2 rounds' generators (their
``distr`` errors), RAP the clipped answers of the relaxed rows.

``--methods`` defaults to every method but GEM-Pub (its pre-training alone takes hours:
``make bench-peers-qr-gem-pub``). ``--sides dpbench --reuse REPORT`` runs dpbench's side
alone and takes the authors' runs of the same cells and seeds from an earlier report (their
code is seeded and unchanged, so only its timings would move); the report says which side
it reused. The script prints how long it expects to take before it starts. Not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _timing import ensure_venv, run_limited, sitting, write_report  # noqa: E402

PEER_VENV = ROOT / ".bench-peers-qr-venv"
PEER_SCRIPT = ROOT / "scripts" / "bench_peers_qr_authors.py"
#: torch pinned (the CPU build; an unpinned torch pulls CUDA), numpy < 2 (their np.infty),
#: and what their MWEM / PEP / GEM / RAP modules import; rdt separately (below)
PEER_PINS = ["torch==2.13.0", "numpy==1.26.4", "pandas==2.2.3", "scipy==1.13.1",
             "scikit-learn==1.5.2", "matplotlib==3.9.2", "networkx==3.3", "tqdm==4.67.1"]
PEER_RDT = "rdt==0.4.0"
#: files that say a folder is their checkout
CHECKOUT_FILES = ("mwem.py", "pep.py", "gem.py", "rap.py", "Util/qm.py", "Util/util_gem.py",
                  "Datasets/adult.csv", "Datasets/adult-domain.json")
#: and for GEM-Pub, their pre-training
PUBLIC_FILES = ("gem_nondp.py",)
CLONE = ("git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp, then "
         "make bench-peers-qr PEER_QR=/path/to/iterative-dp")

DATASETS = {"qr_adult_reduced": "adult-small", "qr_adult": "adult"}
METHODS = ("mwem", "pep", "gem", "gem_pub", "rap", "rap_softmax")
HISTOGRAM = ("mwem", "pep")              # the paper runs them on ADULT (reduced) only
PUBLIC = ("gem_pub",)                    # needs public rows: ADULT only
#: dpbench yaml parameter -> the authors' runner flag
FLAGS = {"T": "--T", "K": "--K", "lr": "--lr", "max_iters": "--max-iters", "alpha": "--alpha",
         "pretrain_epochs": "--pretrain-epochs", "pretrain_early_stop": "--pretrain-early-stop",
         "pretrain_patience": "--pretrain-patience", "pretrain_seed": "--pretrain-seed"}
#: seconds per run at the yaml's T (and K) (the CPU seconds measured 2026-11-27,
#: docs/speed.md, RAP's with the compiled step; wall time on a busy machine is longer),
#: for the estimate printed before starting; a case without a figure counts as its limit
EXPECTED_S = {("authors", "mwem", "qr_adult_reduced"): 20.0,
              ("dpbench", "mwem", "qr_adult_reduced"): 6.0,
              ("authors", "pep", "qr_adult_reduced"): 50.0,
              ("dpbench", "pep", "qr_adult_reduced"): 7.0,
              ("authors", "gem", "qr_adult_reduced"): 310.0,
              ("dpbench", "gem", "qr_adult_reduced"): 235.0,
              ("authors", "rap", "qr_adult_reduced"): 27.0,
              ("dpbench", "rap", "qr_adult_reduced"): 9.0,
              ("authors", "rap_softmax", "qr_adult_reduced"): 60.0,
              ("dpbench", "rap_softmax", "qr_adult_reduced"): 12.0,
              ("authors", "gem", "qr_adult"): 1200.0,   # T 30 measured: 344-367 s
              ("dpbench", "gem", "qr_adult"): 200.0,    # T 30: 56-64 s
              ("authors", "rap", "qr_adult"): 512.0,
              ("dpbench", "rap", "qr_adult"): 49.0,
              ("authors", "rap_softmax", "qr_adult"): 152.0,
              ("dpbench", "rap_softmax", "qr_adult"): 18.0,
              # GEM-Pub's fine-tuning, T 40, from GEM's T 30 (authors 280-299 CPU-s, dpbench
              # 41-51; issue 62) and GEM-Pub's T 2 (7.2 / 2.0 CPU-s a round; 2026-11-28)
              ("authors", "gem_pub", "qr_adult"): 420.0,
              ("dpbench", "gem_pub", "qr_adult"): 70.0}
#: CPU seconds per epoch of GEM-Pub's pre-training at the paper network (2 epochs measured
#: 2026-11-28 on the AMD EPYC VM: 16.9 and 7.2 CPU-s), times the cap for the estimate
PRETRAIN_EPOCH_S = {"authors": 8.5, "dpbench": 3.6}


def checkout_problem(path: str | None, files: tuple[str, ...] = CHECKOUT_FILES,
                     clone: str = CLONE) -> str | None:
    """Why ``path`` is not the authors' checkout holding ``files`` (one line naming how to
    get it, ``clone``), or None."""
    if not path:
        return f"this benchmark needs the authors' code: {clone}"
    missing = [f for f in files if not (Path(path) / f).is_file()]
    if missing:
        return (f"{path} is not a checkout of terranceliu/iterative-dp (no "
                f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): {clone}")
    return None


def settings(method: str, overrides: dict[str, dict[str, int]]) -> dict[str, Any]:
    """dpbench's paper-profile parameters of ``method`` (its yaml), with ``overrides``."""
    from dpbench.runner.grid import _merged_params, load_entry

    params = _merged_params(load_entry("method", method), "paper")
    params.update(overrides.get(method, {}))
    if method.startswith("rap"):
        params["rho_conversion"] = "bun_steinke"          # rap.py's get_rho
    return params


def rounds(params: dict[str, Any]) -> int:
    """Selections a run makes: T, times K for RAP."""
    return int(params["T"]) * int(params.get("K", 1))


def peer_flags(method: str, params: dict[str, Any]) -> list[str]:
    """The authors' runner flags for dpbench's ``params``."""
    out = []
    for key, flag in FLAGS.items():
        if key in params and not (method in HISTOGRAM and key == "alpha"):
            out += [flag, str(params[key])]
    return out


def allowed(method: str, dataset: str) -> bool:
    """Whether the paper runs ``method`` on ``dataset`` (HISTOGRAM, PUBLIC)."""
    return ((method not in HISTOGRAM or dataset == "qr_adult_reduced")
            and (method not in PUBLIC or dataset == "qr_adult"))


def child_dpbench(args: argparse.Namespace) -> None:
    """One dpbench fit (run in its own process by :func:`main`), or with ``--pretrain-only``
    GEM-Pub's pre-training into the artifact cache ``--cache``; prints one JSON line."""
    import time

    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits

    from dpbench.artifacts import artifact_context
    from dpbench.data.query_release import load_query_data
    from dpbench.privacy.accountant import Accountant
    from dpbench.runner.execute import import_object
    from dpbench.runner.grid import _merged_params, load_entry, task_view

    torch.set_num_threads(1)
    method, dataset = args.child
    t0 = time.perf_counter()
    view = task_view(dataset, load_entry("dataset", dataset), "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "paper")).train
    params = json.loads(args.params)
    model = import_object(load_entry("method", method)["_target_"])(**params)
    acc = Accountant(args.eps[0], 1 / data.n**2, "zcdp")
    # what a fit imports on first use (scipy.optimize for the exact rho conversion; Numba,
    # RAP's loop), imported before the fit's clock as the authors' side imports its modules
    # before its own; the process's CPU seconds still hold them
    import numba  # noqa: F401
    import scipy.optimize  # noqa: F401
    setup_s = time.perf_counter() - t0
    # GEM-Pub's pre-training: one artifact a side, built by the --pretrain-only run
    cache = artifact_context("bench_peers_qr", args.cache)
    with threadpool_limits(limits=1), cache:
        w, c = time.perf_counter(), time.process_time()
        if args.pretrain_only:
            model.init_state(data, acc)
            print(json.dumps({"setup_s": setup_s, "pretrain_s": time.perf_counter() - w,
                              "pretrain_cpu_s": time.process_time() - c,
                              **model.pretrain_info_}))
            return
        model.fit(data, acc, np.random.default_rng(args.seed))
        fit_s, fit_cpu_s = time.perf_counter() - w, time.process_time() - c
        true = model.queries(data).answers(data.discrete)
    err = np.abs(true - model.answers_)
    info = model.info()
    steps = info.get("updates", info.get("projection_steps", info.get("steps")))
    print(json.dumps({"setup_s": setup_s, "fit_s": fit_s, "fit_cpu_s": fit_cpu_s,
                      "rounds": int(params["T"]),
                      "steps": int(np.sum(steps)), "n": int(data.n), "queries": int(true.size),
                      "max_error": float(err.max()), "mean_error": float(err.mean()),
                      "rho": float(info["rho"]), "torch_threads": torch.get_num_threads(),
                      **{k: v for k, v in info.items() if k == "pretrain_cached"}}))


def run_key(r: dict[str, Any], seed: int) -> tuple:
    """A run's place: (side, method, dataset, eps, seed); a pre-training's eps and seed are
    "pretrain" and None. Reports from before ``--trials`` hold one seed (``seed``)."""
    if r.get("phase") == "pretrain":
        return r["side"], r["method"], r["dataset"], "pretrain", None
    return r["side"], r["method"], r["dataset"], r["eps"], r.get("seed", seed)


def reused_runs(args: argparse.Namespace, overrides: dict, cases: list[tuple]
                ) -> dict[tuple, dict]:
    """The runs of ``--reuse`` by :func:`run_key` when a side is not run here; exits with a
    one-line error when the report is missing, of other settings or seeds, or lacks a
    run."""
    if set(args.sides) == {"authors", "dpbench"}:
        return {}
    if args.reuse is None or not args.reuse.is_file():
        sys.exit(f"--sides {' '.join(args.sides)} needs --reuse REPORT, an earlier report of "
                 f"the same cells (got {args.reuse})")
    report = json.loads(args.reuse.read_text())
    want = {m: settings(m, overrides) for m in args.methods}
    got = report.get("settings", {})
    if got.get("seed") != args.seed or any(got.get("methods", {}).get(m) != v
                                           for m, v in want.items()):
        sys.exit(f"{args.reuse} ran other settings or another seed than these "
                 f"(seed {args.seed}, {json.dumps(want)})")
    runs = {run_key(r, got["seed"]): r for r in report["runs"]}
    missing = [(s, m, d, e, seed) for seed in seeds(args) for m, d, e in cases
               for s in ("authors", "dpbench")
               if s not in args.sides and (s, m, d, e, seed) not in runs]
    if missing:
        sys.exit(f"{args.reuse} has no run of {missing[0]}")
    return runs


def seeds(args: argparse.Namespace) -> range:
    """Each side's seeds: ``--seed`` .. ``--seed`` + ``--trials`` - 1."""
    return range(args.seed, args.seed + args.trials)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", help="the authors' iterative-dp checkout")
    ap.add_argument("--methods", nargs="+", choices=METHODS,
                    default=[m for m in METHODS if m not in PUBLIC])
    ap.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--T", nargs="+", default=[], metavar="METHOD=T",
                    help="a method's T on both sides instead of its yaml's, e.g. gem=30")
    ap.add_argument("--K", type=int, help="RAP's and RAP-softmax's K on both sides instead "
                    "of their yamls'")
    ap.add_argument("--pretrain-epochs", type=int, help="GEM-Pub's pre-training cap on both "
                    "sides instead of its yaml's 10,000 epochs")
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--pretrain-limit", type=float, default=14400.0,
                    help="seconds for each side's GEM-Pub pre-training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=1, help="runs a side per cell, seeds "
                    "--seed .. --seed + trials - 1; from 2, errors as mean ± s.e. and z")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench_peers_qr.json")
    ap.add_argument("--sides", nargs="+", choices=("authors", "dpbench"),
                    default=["authors", "dpbench"], help="the sides to run")
    ap.add_argument("--reuse", type=Path, help="an earlier report (--out) of the same cells, "
                    "settings and seeds: the sides not run here are taken from it")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--pretrain-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.eps = args.eps[:1]
        child_dpbench(args)
        return
    problem = checkout_problem(args.checkout, CHECKOUT_FILES + (
        PUBLIC_FILES if set(args.methods) & set(PUBLIC) else ()))
    if problem:
        sys.exit(problem)
    if any(not e > 0 for e in args.eps):
        ap.error(f"--eps {args.eps}: every eps must be > 0")
    if not args.limit > 0 or not args.pretrain_limit > 0:
        ap.error(f"--limit {args.limit}, --pretrain-limit {args.pretrain_limit}: must be > 0 "
                 "seconds")
    if args.trials < 1 or (args.pretrain_epochs is not None and args.pretrain_epochs < 1):
        ap.error("--trials and --pretrain-epochs must be >= 1")
    overrides: dict[str, dict[str, int]] = {}
    for item in args.T:
        name, _, value = item.partition("=")
        if name not in METHODS or not value.isdigit() or int(value) < 1:
            ap.error(f"--T {item}: expected METHOD=T with METHOD one of {', '.join(METHODS)}")
        overrides.setdefault(name, {})["T"] = int(value)
    if args.K is not None:
        for name in ("rap", "rap_softmax"):
            overrides.setdefault(name, {})["K"] = args.K
    if args.pretrain_epochs is not None:
        for name in PUBLIC:
            overrides.setdefault(name, {})["pretrain_epochs"] = args.pretrain_epochs

    checkout = str(Path(args.checkout).resolve())
    cases = [(m, d, e) for d in args.datasets for e in args.eps for m in args.methods
             if allowed(m, d)]
    if not cases:
        ap.error("nothing to run: MWEM and PEP run on qr_adult_reduced only, GEM-Pub on "
                 "qr_adult only")
    earlier = reused_runs(args, overrides, cases)
    # rdt 0.4.0 declares Python < 3.9 and pandas < 1.1.5; the one class their GEM uses
    # (OneHotEncodingTransformer.fit: pd.get_dummies) runs on the pandas pinned here
    python = ensure_venv(PEER_VENV, PEER_PINS,
                         ["--no-deps", "--ignore-requires-python", PEER_RDT])
    pretrains = [(side, m, d) for m, d in dict.fromkeys((m, d) for m, d, _ in cases)
                 if m in PUBLIC for side in args.sides]
    print(f"{len(cases)} cells x {args.trials} seeds x 2 sides, limit {args.limit:.0f} s per "
          f"run{f', {len(pretrains)} pre-trainings first' if pretrains else ''}. Expected "
          f"duration: {expected(args, overrides, cases, pretrains)}", flush=True)

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="bench_peers_qr_"))
    start = sitting()
    runs, broken = [], set()

    def commands(method: str, dataset: str, eps: float, seed: int, tag: str,
                 *extra: str) -> dict[str, list[str]]:
        """Each side's command line for one run (``extra``: --pretrain-only)."""
        params = settings(method, overrides)
        common = ["--eps", str(eps), "--seed", str(seed), *extra]
        public = method in PUBLIC
        return {"authors": [str(python), str(PEER_SCRIPT), checkout, str(work / tag),
                            "--method", method, "--dataset", DATASETS[dataset], *common,
                            *peer_flags(method, params),
                            *(["--pretrained", str(work / f"pretrained_{dataset}")]
                              if public else [])],
                "dpbench": [sys.executable, str(Path(__file__).resolve()), "--child", method,
                            dataset, "--params", json.dumps(params), *common,
                            *(["--cache", str(work / "artifacts")] if public else [])]}

    for side, method, dataset in pretrains:
        print(f"  {side} {method} pre-training, {dataset} ...", end=" ", flush=True)
        cmd = commands(method, dataset, max(args.eps), args.seed, "pretrain",
                       "--pretrain-only")[side]
        res, _ = run_limited(cmd, args.pretrain_limit, env, ROOT)
        res.update(side=side, method=method, dataset=dataset, phase="pretrain")
        print(describe_pretrain(res, args.pretrain_limit), flush=True)
        runs.append(res)
        if res["status"] != "ok":
            broken.add((side, method, dataset))
    for seed in seeds(args):
        for i, (method, dataset, eps) in enumerate(cases):
            plan = commands(method, dataset, eps, seed, f"run{i}")
            for side in ("authors", "dpbench"):
                print(f"  {side} {method}, {dataset}, eps {eps}, seed {seed} ...", end=" ",
                      flush=True)
                if side not in args.sides:
                    res = dict(earlier[side, method, dataset, eps, seed])
                    print(f"{describe(res, args.limit)} (from {args.reuse})", flush=True)
                    runs.append(res)
                    continue
                if (side, method, dataset) in broken:
                    res = {"status": "failed", "error": "its pre-training did not finish",
                           "cpu_s": 0.0, "peak_mb": 0.0}
                else:
                    res, _ = run_limited(plan[side], args.limit, env, ROOT)
                res.update(side=side, method=method, dataset=dataset, eps=eps, seed=seed)
                print(describe(res, args.limit), flush=True)
                runs.append(res)
            shutil.rmtree(work / f"run{i}", ignore_errors=True)  # GEM's pickles: ~10 MB a round
    runs += [r for k, r in earlier.items() if k[3] == "pretrain" and k[0] not in args.sides]
    shutil.rmtree(work, ignore_errors=True)
    rows = compare(runs) if args.trials > 1 else []
    write_report(args.out, start, runs=runs, **({"comparison": rows} if rows else {}),
                 settings={"seed": args.seed, "trials": args.trials, "limit_s": args.limit,
                           "pretrain_limit_s": args.pretrain_limit,
                           "methods": {m: settings(m, overrides) for m in args.methods}},
                 **({"reused": {"from": str(args.reuse), "sides": [
                     s for s in ("authors", "dpbench") if s not in args.sides]}}
                    if set(args.sides) != {"authors", "dpbench"} else {}))
    print(table(runs, args.limit))
    if rows:
        print()
        print(errors_table(rows))
    print(f"written {args.out}")


def expected(args: argparse.Namespace, overrides: dict, cases: list[tuple],
             pretrains: list[tuple]) -> str:
    """The duration printed before starting, from EXPECTED_S (a figure is for the yaml's T
    x K; another scales it: rounds cost about the same) and PRETRAIN_EPOCH_S (times the
    epoch cap: an upper bound, pre-training stops earlier without improvement); a run
    without a figure counts as its limit."""
    scale = {m: rounds(settings(m, overrides)) / rounds(settings(m, {})) for m in args.methods}
    guess = [EXPECTED_S[side, m, d] * scale[m] if (side, m, d) in EXPECTED_S else None
             for m, d, _ in cases for side in ("authors", "dpbench")] * args.trials
    total = sum(args.limit if g is None else min(g, args.limit) for g in guess)
    total += sum(min(args.pretrain_limit, PRETRAIN_EPOCH_S[side]
                     * settings(m, overrides)["pretrain_epochs"]) for side, m, _ in pretrains)
    return (f"{'about' if None not in guess and not pretrains else 'at most'} "
            f"{total / 60:.0f} min (one idle core each, one after the other).")


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and its standard error (nan s.e. for a single value)."""
    m = math.fsum(values) / len(values)
    if len(values) < 2:
        return m, math.nan
    var = math.fsum((v - m) ** 2 for v in values) / (len(values) - 1)
    return m, math.sqrt(var / len(values))


def versus(authors: list[float], dpbench: list[float]) -> dict[str, float]:
    """Both sides' mean ± s.e., dpbench / authors and z = (dpbench - authors) /
    sqrt(se_d^2 + se_a^2) (nan where neither side has a spread)."""
    (ma, sa), (md, sd) = mean_se(authors), mean_se(dpbench)
    se = math.hypot(sa, sd)
    return {"authors": ma, "authors_se": sa, "dpbench": md, "dpbench_se": sd,
            "z": (md - ma) / se if se > 0 else math.nan, "ratio": md / ma}


def compare(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell (method, dataset, eps) and error: :func:`versus` over each side's finished
    runs, with their counts."""
    rows = []
    fits = [r for r in runs if r.get("phase") != "pretrain"]
    for cell in dict.fromkeys((r["method"], r["dataset"], r["eps"]) for r in fits):
        ok = {s: [r for r in fits if (r["method"], r["dataset"], r["eps"]) == cell
                  and r["side"] == s and r["status"] == "ok"] for s in ("authors", "dpbench")}
        if not all(ok.values()):
            continue
        for metric in ("max_error", "mean_error"):
            rows.append({"method": cell[0], "dataset": cell[1], "eps": cell[2],
                         "metric": metric, "runs": {s: len(v) for s, v in ok.items()},
                         **versus(*([r[metric] for r in ok[s]] for s in ok))})
    return rows


def errors_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one row per (cell, error) of :func:`compare`."""
    lines = ["| method | dataset | eps | error | authors (runs) | dpbench (runs) | "
             "dpbench / authors | z |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {r['dataset']} | {r['eps']:g} | "
                     f"{r['metric'].replace('_error', '')} | {r['authors']:.5f} ± "
                     f"{r['authors_se']:.5f} ({r['runs']['authors']}) | {r['dpbench']:.5f} ± "
                     f"{r['dpbench_se']:.5f} ({r['runs']['dpbench']}) | {r['ratio']:.3f} | "
                     f"{r['z']:+.2f} |")
    return "\n".join(lines)


def per_ms(r: dict[str, Any], what: str) -> str:
    """Fit CPU ms per round or per step ("" where the run does not report its steps)."""
    count = r.get(what)
    return f"{1e3 * r['fit_cpu_s'] / count:.2f}" if count else ""


def describe_pretrain(r: dict[str, Any], limit: float) -> str:
    """One line for a pre-training run."""
    if r["status"] != "ok":
        return describe(r, limit)
    return (f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU (pre-training "
            f"{r['pretrain_cpu_s']:.1f} s CPU), {r['pretrain_epochs_run']} epochs, best public "
            f"max error {r['pretrain_best_max_error']:.4f}")


def describe(r: dict[str, Any], limit: float) -> str:
    if r["status"] == "timeout":
        return f"did not finish in {limit:.0f} s (peak {r['peak_mb']:.0f} MB so far)"
    if r["status"] != "ok":
        return f"FAILED: {str(r.get('error', ''))[-300:]}"
    return (f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU (fit {r['fit_s']:.1f} s, "
            f"{r['fit_cpu_s']:.1f} s CPU), peak {r['peak_mb']:.0f} MB, {r.get('steps', '-')} "
            f"steps, max error {r['max_error']:.4f}, mean {r['mean_error']:.5f}")


def ratio(theirs: dict[str, Any], ours: dict[str, Any], key: str) -> str:
    """authors / dpbench of ``key``; a stopped authors' run's wall, CPU and memory so far
    bound the ratio from below, its other figures do not exist."""
    if theirs["status"] == "ok":
        return f"{theirs[key] / ours[key]:.2f}x"
    return f">= {theirs[key] / ours[key]:.2f}x" if key in ("wall_s", "cpu_s", "peak_mb") else "n/a"


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One side's runs of a cell as one: the first that did not finish if any (its figures
    bound a ratio), else the mean of each figure over the seeds (None: no run)."""
    if not runs:
        return None
    bad = [r for r in runs if r["status"] != "ok"]
    if bad:
        return bad[0]
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float)
            and not isinstance(v, bool) and all(k in r for r in runs)]
    return {**runs[0], **{k: math.fsum(r[k] for r in runs) / len(runs) for k in keys}}


def table(runs: list[dict[str, Any]], limit: float) -> str:
    """Markdown: one row per run (a pre-training's fit columns hold its CPU and epochs),
    then authors / dpbench per cell (each side's mean over its seeds)."""
    lines = ["| method | dataset | eps | seed | side | wall s | CPU s | fit s (CPU) | peak MB | "
             "rounds | steps | fit ms / round | fit ms / step | max error | mean error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        pre = r.get("phase") == "pretrain"
        head = (f"| {r['method']} | {r['dataset']} | {'pre-training' if pre else r['eps']} | "
                f"{'' if pre else r.get('seed', '')} | {r['side']} |")
        if r["status"] != "ok":
            what = f"did not finish in {limit:.0f} s" if r["status"] == "timeout" else "failed"
            lines.append(f"{head} {what} | {r['cpu_s']:.1f} | | {r['peak_mb']:.0f} | | | | | | |")
        elif pre:
            lines.append(f"{head} {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['pretrain_s']:.1f} "
                         f"({r['pretrain_cpu_s']:.1f}) | {r['peak_mb']:.0f} | "
                         f"{r['pretrain_epochs_run']} epochs | | | | "
                         f"{r['pretrain_best_max_error']:.4f} (public) | |")
        else:
            lines.append(f"{head} {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['fit_s']:.1f} "
                         f"({r['fit_cpu_s']:.1f}) | {r['peak_mb']:.0f} | {r['rounds']} | "
                         f"{r.get('steps', '')} | {per_ms(r, 'rounds')} | {per_ms(r, 'steps')} | "
                         f"{r['max_error']:.4f} | {r['mean_error']:.5f} |")
    lines += ["", "| method | dataset | eps | wall: authors / dpbench | CPU | fit CPU | "
              "peak memory | max error | mean error |", "|---|---|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys((r["method"], r["dataset"], r.get("eps", "pre-training"))
                              for r in runs):
        theirs, ours = (pooled([r for r in runs if r["side"] == side and (
            r["method"], r["dataset"], r.get("eps", "pre-training")) == cell])
            for side in ("authors", "dpbench"))
        if not theirs or not ours or ours["status"] != "ok" or theirs["status"] == "failed":
            continue
        keys = ("wall_s", "cpu_s", "pretrain_cpu_s" if cell[2] == "pre-training" else
                "fit_cpu_s", "peak_mb", "max_error", "mean_error")
        lines.append(f"| {' | '.join(map(str, cell))} | "
                     + " | ".join(ratio(theirs, ours, k) if k in ours else "" for k in keys)
                     + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
