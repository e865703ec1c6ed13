"""dpbench's MWEM, PEP, GEM, RAP and RAP-softmax beside the authors' code of the query-release paper
(Liu, Vietri & Wu, NeurIPS 2021; their iterative-dp), on the same rows and workload.

The authors' code is run from the user's own checkout, unedited, in its own virtual
environment ``.bench-peers-qr-venv`` (gitignored; created on first use: torch 2.13.0, numpy
1.26 and what their MWEM / PEP / GEM / RAP import, with their rdt 0.4.0 installed without
its dependencies and past its "Python < 3.9"), by scripts/bench_peers_qr_authors.py.

    git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp
    make bench-peers-qr PEER_QR=/path/to/iterative-dp
    python scripts/bench_peers_qr.py --checkout /path/to/iterative-dp --methods rap \
        --datasets qr_adult_reduced --eps 1 --limit 600 --out results/bench_peers_qr.json

Cells: ADULT (reduced) (``qr_adult_reduced``, their ``adult-small``: 7 attributes, 35
3-way marginals, 14,955 queries) and ADULT (``qr_adult``, their ``adult``: 13 attributes,
286 marginals, 334,128 queries); both sides read the same file (their
Datasets/adult.csv, which dpbench vendors as data/itdp_adult, the same bytes) and keep the
same 43,944 private rows (their ``adult_seed`` 0 split). MWEM and PEP run on ADULT
(reduced) only, as in the paper. eps 0.1 and 1, delta = 1/N^2, seed 0 on both sides.

Settings: dpbench's method yamls (conf/method/query_release/, paper profile), passed to
the authors' code as their flags: MWEM T 100; PEP T 50, T_max 25; GEM T 100, Adam lr 1e-4,
100 steps per round, alpha 0.67, network 512 / (1024, 1024), B = 1,000; RAP K 10, T 10, lr
1e-3 (Table 3; their adult scripts use 5e-3), 5,000 steps per round, n' = 1,000; RAP-softmax
the same with lr 0.1 (Table 3).
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

``--sides dpbench --reuse REPORT`` runs dpbench's side alone and takes the authors' runs
of the same cells from an earlier report (their code is seeded and unchanged, so only its
timings would move); the report says which side it reused. The script prints how long it
expects to take before it starts. Not a test.
"""

from __future__ import annotations

import argparse
import json
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
CLONE = ("git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp, then "
         "make bench-peers-qr PEER_QR=/path/to/iterative-dp")

DATASETS = {"qr_adult_reduced": "adult-small", "qr_adult": "adult"}
METHODS = ("mwem", "pep", "gem", "rap", "rap_softmax")
HISTOGRAM = ("mwem", "pep")              # the paper runs them on ADULT (reduced) only
#: dpbench yaml parameter -> the authors' runner flag
FLAGS = {"T": "--T", "K": "--K", "lr": "--lr", "max_iters": "--max-iters", "alpha": "--alpha"}
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
              ("dpbench", "rap_softmax", "qr_adult"): 18.0}


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


def child_dpbench(args: argparse.Namespace) -> None:
    """One dpbench fit (run in its own process by :func:`main`); prints one JSON line."""
    import time

    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits

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
    with threadpool_limits(limits=1):
        w, c = time.perf_counter(), time.process_time()
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
                      "rho": float(info["rho"]), "torch_threads": torch.get_num_threads()}))


def reused_runs(args: argparse.Namespace, overrides: dict, cases: list[tuple]
                ) -> dict[tuple, dict]:
    """The runs of ``--reuse`` by (side, method, dataset, eps) when a side is not run here;
    exits with a one-line error when the report is missing, of other settings or seed, or
    lacks a cell."""
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
    runs = {(r["side"], r["method"], r["dataset"], r["eps"]): r for r in report["runs"]}
    missing = [(s, m, d, e) for m, d, e in cases for s in ("authors", "dpbench")
               if s not in args.sides and (s, m, d, e) not in runs]
    if missing:
        sys.exit(f"{args.reuse} has no run of {missing[0]}")
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", help="the authors' iterative-dp checkout")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--T", nargs="+", default=[], metavar="METHOD=T",
                    help="a method's T on both sides instead of its yaml's, e.g. gem=30")
    ap.add_argument("--K", type=int, help="RAP's and RAP-softmax's K on both sides instead "
                    "of their yamls'")
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench_peers_qr.json")
    ap.add_argument("--sides", nargs="+", choices=("authors", "dpbench"),
                    default=["authors", "dpbench"], help="the sides to run")
    ap.add_argument("--reuse", type=Path, help="an earlier report (--out) of the same cells, "
                    "settings and seed: the sides not run here are taken from it")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_dpbench(args)
        return
    problem = checkout_problem(args.checkout)
    if problem:
        sys.exit(problem)
    if any(not e > 0 for e in args.eps):
        ap.error(f"--eps {args.eps}: every eps must be > 0")
    if not args.limit > 0:
        ap.error(f"--limit {args.limit}: must be > 0 seconds")
    overrides: dict[str, dict[str, int]] = {}
    for item in args.T:
        name, _, value = item.partition("=")
        if name not in METHODS or not value.isdigit() or int(value) < 1:
            ap.error(f"--T {item}: expected METHOD=T with METHOD one of {', '.join(METHODS)}")
        overrides.setdefault(name, {})["T"] = int(value)
    if args.K is not None:
        for name in ("rap", "rap_softmax"):
            overrides.setdefault(name, {})["K"] = args.K

    checkout = str(Path(args.checkout).resolve())
    cases = [(m, d, e) for d in args.datasets for e in args.eps for m in args.methods
             if d == "qr_adult_reduced" or m not in HISTOGRAM]
    if not cases:
        ap.error("nothing to run: MWEM and PEP run on qr_adult_reduced only")
    earlier = reused_runs(args, overrides, cases)
    # rdt 0.4.0 declares Python < 3.9 and pandas < 1.1.5; the one class their GEM uses
    # (OneHotEncodingTransformer.fit: pd.get_dummies) runs on the pandas pinned here
    python = ensure_venv(PEER_VENV, PEER_PINS,
                         ["--no-deps", "--ignore-requires-python", PEER_RDT])
    # a figure is for the yaml's T x K; another scales it (rounds cost about the same)
    scale = {m: rounds(settings(m, overrides)) / rounds(settings(m, {})) for m in args.methods}
    guess = [EXPECTED_S[side, m, d] * scale[m] if (side, m, d) in EXPECTED_S else None
             for m, d, _ in cases for side in ("authors", "dpbench")]
    total = sum(args.limit if g is None else min(g, args.limit) for g in guess)
    for m in dict.fromkeys(m for m, _, _ in cases):
        print(f"{m}: {json.dumps(settings(m, overrides))}")
    print(f"{len(cases)} cells x 2 sides, limit {args.limit:.0f} s per run. Expected "
          f"duration: {'about' if None not in guess else 'at most'} {total / 60:.0f} min "
          f"(one idle core each, one after the other).", flush=True)

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="bench_peers_qr_"))
    start = sitting()
    runs = []
    for i, (method, dataset, eps) in enumerate(cases):
        params = settings(method, overrides)
        common = ["--eps", str(eps), "--seed", str(args.seed)]
        plan = [("authors", [str(python), str(PEER_SCRIPT), checkout, str(work / f"run{i}"),
                             "--method", method, "--dataset", DATASETS[dataset], *common,
                             *peer_flags(method, params)]),
                ("dpbench", [sys.executable, str(Path(__file__).resolve()), "--child", method,
                             dataset, "--params", json.dumps(params), *common])]
        for side, cmd in plan:
            print(f"  {side} {method}, {dataset}, eps {eps} ...", end=" ", flush=True)
            if side not in args.sides:
                res = dict(earlier[side, method, dataset, eps])
                print(f"{describe(res, args.limit)} (from {args.reuse})", flush=True)
                runs.append(res)
                continue
            res, _ = run_limited(cmd, args.limit, env, ROOT)
            res.update(side=side, method=method, dataset=dataset, eps=eps)
            print(describe(res, args.limit), flush=True)
            runs.append(res)
        shutil.rmtree(work / f"run{i}", ignore_errors=True)     # GEM's pickles: ~10 MB a round
    shutil.rmtree(work, ignore_errors=True)
    write_report(args.out, start, runs=runs,
                 settings={"seed": args.seed, "limit_s": args.limit,
                           "methods": {m: settings(m, overrides) for m in args.methods}},
                 **({"reused": {"from": str(args.reuse), "sides": [
                     s for s in ("authors", "dpbench") if s not in args.sides]}}
                    if set(args.sides) != {"authors", "dpbench"} else {}))
    print(table(runs, args.limit))
    print(f"written {args.out}")


def per_ms(r: dict[str, Any], what: str) -> str:
    """Fit CPU ms per round or per step ("" where the run does not report its steps)."""
    count = r.get(what)
    return f"{1e3 * r['fit_cpu_s'] / count:.2f}" if count else ""


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


def table(runs: list[dict[str, Any]], limit: float) -> str:
    """Markdown: one row per run, then authors / dpbench per cell."""
    lines = ["| method | dataset | eps | side | wall s | CPU s | fit s (CPU) | peak MB | rounds "
             "| steps | fit ms / round | fit ms / step | max error | mean error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        head = f"| {r['method']} | {r['dataset']} | {r['eps']} | {r['side']} |"
        if r["status"] != "ok":
            what = f"did not finish in {limit:.0f} s" if r["status"] == "timeout" else "failed"
            lines.append(f"{head} {what} | {r['cpu_s']:.1f} | | {r['peak_mb']:.0f} | | | | | | |")
            continue
        lines.append(f"{head} {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['fit_s']:.1f} "
                     f"({r['fit_cpu_s']:.1f}) | {r['peak_mb']:.0f} | {r['rounds']} | "
                     f"{r.get('steps', '')} | {per_ms(r, 'rounds')} | {per_ms(r, 'steps')} | "
                     f"{r['max_error']:.4f} | {r['mean_error']:.5f} |")
    lines += ["", "| method | dataset | eps | wall: authors / dpbench | CPU | fit CPU | "
              "peak memory | max error | mean error |", "|---|---|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys((r["method"], r["dataset"], r["eps"]) for r in runs):
        pair = {r["side"]: r for r in runs if (r["method"], r["dataset"], r["eps"]) == cell}
        theirs, ours = pair.get("authors"), pair.get("dpbench")
        if not theirs or not ours or ours["status"] != "ok" or theirs["status"] == "failed":
            continue
        keys = ("wall_s", "cpu_s", "fit_cpu_s", "peak_mb", "max_error", "mean_error")
        lines.append(f"| {' | '.join(map(str, cell))} | "
                     + " | ".join(ratio(theirs, ours, k) for k in keys) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
