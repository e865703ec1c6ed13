"""dpbench's AIM against smartnoise-synth's AIM, side by side on the same discretised Adult.

Both run on trial 0's training split of DD-SSP's Adult (47,842 rows, 15 attributes; as
scripts/bench_aim.py loads it), all 2-way marginals as the workload, the same eps,
delta (1e-5), model-size cap (200 MB), T = 16 d rounds, 1,000 estimation iterations and
the same number of sampled rows (the training set's), one after the other in this
sitting, each in a fresh process with a time limit. A run that does not finish in the
limit is reported as "did not finish in N s" (an honest lower bound for the ratio).

For each run: wall and CPU seconds (process start to synthetic rows written; the ratios
are printed for both, CPU first: it is not stretched by other work on the machine), peak
resident memory of the process (getrusage of the child), AIM rounds, and the accuracy figure:
mean total-variation distance over all 2-way and all 3-way marginals between the real
training rows and the synthetic rows (0.5 x L1 of the normalised tables). dpbench runs
twice per eps: first with an empty JAX compilation cache (what a user's first run pays)
and then in a second process that finds the programs compiled by the first
(dpbench/compile_cache.py).

smartnoise-synth 1.0.8 needs mbi < 2 (dpbench pins mbi 2), so it lives in its own
virtual environment, ``.bench-peers-venv`` (gitignored), created on first use:
smartnoise-synth without dependencies, then the ones its AIM imports (mbi 1.x,
smartnoise-sql, Faker, disjoint-set, pac-synth). Its declared opacus dependency is left
out: AIM does not use it, and it would pull an unpinned torch.

    make bench-peers                                   # eps 0.1 and 1, limit 1800 s per run
    python scripts/bench_peers.py --eps 0.1 --limit 900 --out results/bench_peers.json

``--exrisk DATASET ...`` runs the excess-risk paper's 4-way fits instead (method aim_tstr,
experiment exrisk_table2, conf/method/marginals/aim_tstr.yaml): for each dataset and
``--profile`` (default and paper), trial 0's rows as the runner gives them to AIM (every
row under the paper's protocol), delta = 1/n^2, all 4-way marginals of at most 10^6
cells, the profile's T, model cap and iterations; dpbench's fit is the one the runner
makes (``release_marginals`` with the trial's generator, outside the artifact cache),
smartnoise gets the same workload, T, cap, eps and delta. smartnoise cannot set the final
estimate's iterations (1,000; aim_tstr's are 500 in the default profile, 2,500 in the
paper's). Accuracy then adds the mean TV over the 4-way workload marginals.

    make bench-peers BENCH_PEERS_ARGS="--exrisk mpdp_heart mpdp_compas --eps 1"

The script prints how long it expects to take before it starts. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import _timing  # noqa: E402
from bench_aim import load_train, method_settings  # noqa: E402

from dpbench.data.marginals import checked_codes, data_marginal  # noqa: E402
from dpbench.data.workloads import all_kway, build_workload  # noqa: E402
from dpbench.methods.marginals.model import MarginalModel  # noqa: E402
from dpbench.privacy import Accountant  # noqa: E402
from dpbench.runner.grid import load_entry  # noqa: E402

PEER_VENV = ROOT / ".bench-peers-venv"
PEER_PIN = "smartnoise-synth==1.0.8"
PEER_DEPS = ["mbi>=1.1,<2", "smartnoise-sql>=1.0.10", "Faker>=17.0.0", "disjoint-set>=0.9,<0.10",
             "pac-synth>=0.0.8,<0.0.9"]
PEER_SCRIPT = ROOT / "scripts" / "bench_peers_smartnoise.py"

#: rough seconds per run on 2 idle cores (docs/speed.md; smartnoise's eps-1 run has taken
#: 1,224 s idle and did not finish in 45 min under load), for the estimate printed before
#: starting; a case without a guess counts as its whole time limit
EXPECTED_S = {("smartnoise", "adult", 0.1): 300.0, ("smartnoise", "adult", 1.0): 1300.0,
              ("dpbench", "adult", 0.1): 35.0, ("dpbench", "adult", 1.0): 250.0,
              ("smartnoise", "mpdp_compas-default", 1.0): 140.0,
              ("smartnoise", "mpdp_compas-paper", 1.0): 280.0,
              **{("dpbench", f"mpdp_{d}-{p}", 1.0): 10.0
                 for d in ("compas", "heart") for p in ("default", "paper")}}


@dataclass(frozen=True)
class Case:
    """One benchmark setting: the rows both implementations fit and how each is told to."""

    key: str                    # "adult" or "<excess-risk dataset>-<profile>"
    label: str                  # printed and stored
    frame: pd.DataFrame         # integer codes, the columns AIM models
    sizes: dict[str, int]
    eps: float
    delta: float
    peer_args: list[str]        # workload, T and cap for bench_peers_smartnoise.py
    child_args: list[str]       # how this script's --child rebuilds dpbench's fit
    tv_marginals: dict[int, list[tuple[str, ...]]]   # k -> the k-way marginals scored

    @property
    def rows(self) -> int:
        return len(self.frame)


def adult_case(eps: float, args: argparse.Namespace) -> Case:
    """DD-SSP's Adult (trial 0's training split), all pairs, the paper's AIM settings."""
    frame, sizes = load_train("adult", "paper", args.seed)
    cap = ["--max-model-size", str(args.max_model_size)]
    attrs = list(frame.columns)
    return Case("adult", "Adult, all pairs", frame, sizes, eps, args.delta, cap, cap,
                {2: all_kway(attrs, 2), 3: all_kway(attrs, 3)})


def exrisk_case(dataset: str, profile: str, eps: float) -> Case:
    """Trial 0 of exrisk_table2 for one dataset: aim_tstr's rows, delta, workload and
    settings under ``profile``, as the runner builds them (scripts/bench_exrisk.py)."""
    from bench_exrisk import METHOD, aim_settings, trial_data, trial_spec

    from dpbench.methods.regression.aim_synth import AIMSynth

    spec = trial_spec(dataset, profile, eps)
    split, _, delta = trial_data(spec)
    train = split.train
    attrs = [*train.encoding.attributes, train.encoding.target]
    sizes = {a: int(train.domain[a]) for a in attrs}
    settings = aim_settings(spec)
    params = AIMSynth(**spec.method_params).params
    kway = re.fullmatch(r"all_(\d+)way", str(params["workload"]))
    if kway is None:     # smartnoise's workload is all k-way marginals: nothing else maps
        raise ValueError(f"{METHOD}'s workload {params['workload']!r} is not all_<k>way")
    degree = int(kway.group(1))
    max_cells = int(params["max_cells"])
    workload = build_workload(params["workload"], attrs, domain=sizes, max_cells=max_cells)
    rounds = settings.total_rounds(len(attrs))
    peer = ["--degree", str(degree), "--max-cells", str(max_cells), "--rounds", str(rounds),
            "--max-model-size", str(settings.max_model_size)]
    return Case(f"{dataset}-{profile}", f"{dataset}, {profile} profile", train.discrete[attrs],
                sizes, eps, delta, peer,
                ["--exrisk", dataset, "--profile", profile],
                {2: all_kway(attrs, 2), 3: all_kway(attrs, 3), degree: workload})


def run_limited(cmd: list[str], limit_s: float, env: dict[str, str]) -> dict[str, object]:
    """Run ``cmd`` (``_timing.run_limited``: status, wall, CPU, peak RSS, its JSON line);
    for a stopped smartnoise run, how far it got."""
    result, errors = _timing.run_limited(cmd, limit_s, env, ROOT)
    if result["status"] == "timeout" and "] fit started" in errors:   # its timed
        # "[t s] Selected" lines (scripts/bench_peers_smartnoise.py)
        done = re.findall(r"^\[([0-9.]+) s\] Selected", errors, flags=re.M)
        result["rounds_done"] = len(done)
        result["last_round_at_s"] = float(done[-1]) if done else None
        setup = re.findall(r"^\[([0-9.]+) s\] Initial Sigma", errors, flags=re.M)
        result["setup_done_at_s"] = float(setup[0]) if setup else None
    return result


def tv_error(real: pd.DataFrame, synth: pd.DataFrame, sizes: dict[str, int],
             marginals: list[tuple[str, ...]]) -> float:
    """Mean total-variation distance over the given marginals (normalised tables)."""
    attrs = list(real.columns)
    rc = checked_codes(real, attrs, sizes)
    sc = checked_codes(synth[attrs].astype(np.int64), attrs, sizes)
    out = []
    for cl in marginals:
        p = data_marginal(rc, cl, sizes).ravel()
        q = data_marginal(sc, cl, sizes).ravel()
        out.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(out))


def child_dpbench(args: argparse.Namespace) -> None:
    """One dpbench AIM fit + sample (run in its own process by :func:`main`)."""
    from bench_aim import BACKEND, CACHE_HIT, COMPILE_EVENTS
    from jax import monitoring

    seen = {"compile_s": 0.0, "programs": 0, "loaded": 0}

    def on_duration(name: str, dur: float, **_: object) -> None:
        if name in COMPILE_EVENTS:
            seen["compile_s"] += dur
            seen["programs"] += name == BACKEND

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(
        lambda name, **_: seen.update(loaded=seen["loaded"] + 1) if name == CACHE_HIT else None)
    t0 = time.perf_counter()
    model = fit_exrisk(args) if args.exrisk else fit_adult(args)
    fit_s = time.perf_counter() - t0
    model.sample(args.rows, np.random.default_rng(args.seed + 1)).to_csv(args.child[1],
                                                                         index=False)
    print(json.dumps({"fit_s": fit_s, "sample_s": time.perf_counter() - t0 - fit_s,
                      "rounds": model.info["rounds"], "jax_compile_s": seen["compile_s"],
                      "compiled": seen["programs"] - seen["loaded"], "loaded": seen["loaded"]}))


def fit_adult(args: argparse.Namespace) -> MarginalModel:
    """DD-SSP's paper-profile AIM on the CSV the parent wrote (all pairs, its cap)."""
    from dpbench.methods.marginals.aim import AIMSettings, run_aim

    frame = pd.read_csv(args.child[0])
    sizes = json.loads(Path(args.child[0]).with_suffix(".json").read_text())
    settings = {**method_settings("ddssp", "paper"), "max_model_size": args.max_model_size}
    return run_aim(frame, sizes, build_workload("all_pairs", list(frame.columns)),
                   Accountant(args.eps[0], args.delta, "zcdp"),
                   np.random.default_rng(args.seed), AIMSettings(**settings))


def fit_exrisk(args: argparse.Namespace) -> MarginalModel:
    """aim_tstr's fit of trial 0, as the runner makes it (outside the artifact cache)."""
    from bench_exrisk import aim_settings, release, trial_data, trial_spec

    from dpbench.methods.regression.aim_synth import AIMSynth

    spec = trial_spec(args.exrisk[0], args.profile[0], args.eps[0])
    split, epsilon, delta = trial_data(spec)
    return release(AIMSynth(**spec.method_params), aim_settings(spec), split, epsilon, delta,
                   spec.method_rng())


def estimate_s(cases: list[Case], limit: float, warm: bool) -> tuple[float, bool]:
    """Expected seconds of the whole plan, and whether every run had a guess."""
    total, known = 0.0, True
    for case in cases:
        for impl in ("smartnoise", "dpbench", *(["dpbench"] if warm else [])):
            guess = EXPECTED_S.get((impl, case.key, case.eps))
            known &= guess is not None
            total += limit if guess is None else min(guess, limit)
    return total, known


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--delta", type=float, default=1e-5, help="Adult only (exrisk: 1/n^2)")
    ap.add_argument("--max-model-size", type=float, default=200.0, help="Adult only")
    ap.add_argument("--exrisk", nargs="+", metavar="DATASET",
                    help="the excess-risk paper's 4-way fits on these datasets instead")
    ap.add_argument("--profile", nargs="+", choices=["default", "paper"],
                    default=["default", "paper"], help="aim_tstr's settings (with --exrisk)")
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-warm", dest="warm", action="store_false",
                    help="skip dpbench's second process (with the compile cache filled)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench_peers.json")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_dpbench(args)
        return
    if args.exrisk:
        valid = list(load_entry("experiment", "exrisk_table2")["datasets"])
        for d in args.exrisk:
            if d not in valid:
                ap.error(f"--exrisk {d}: not an exrisk_table2 dataset; valid: {', '.join(valid)}")
    if any(not e > 0 for e in args.eps):
        ap.error(f"--eps {args.eps}: every eps must be > 0")
    if not 0 < args.delta < 1:
        ap.error(f"--delta {args.delta}: must be in (0, 1)")
    if not args.limit > 0:
        ap.error(f"--limit {args.limit}: must be > 0 seconds")

    python = _timing.ensure_venv(PEER_VENV, ["--no-deps", PEER_PIN], PEER_DEPS)
    cases = ([exrisk_case(d, prof, e) for d in args.exrisk for prof in args.profile
              for e in args.eps] if args.exrisk else [adult_case(e, args) for e in args.eps])
    seconds, known = estimate_s(cases, args.limit, args.warm)
    for case in cases:
        print(f"{case.label}: n={case.rows}, {len(case.sizes)} attributes, eps {case.eps}, "
              f"delta {case.delta:.3g}, smartnoise {' '.join(case.peer_args)}")
    print(f"Limit {args.limit:.0f} s per run. Expected duration: "
          f"{'about' if known else 'at most'} {seconds / 60:.0f} min "
          f"(on 2 idle cores; smartnoise takes most of it).", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    cache = work / "cache"                         # empty: dpbench's first process is cold
    env = {**os.environ, "DPBENCH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    start = _timing.sitting()
    runs = []
    for case in cases:
        data = work / f"{case.key}.csv"
        case.frame.to_csv(data, index=False)
        data.with_suffix(".json").write_text(json.dumps(case.sizes))
        common = ["--eps", str(case.eps), "--delta", str(case.delta), "--rows", str(case.rows),
                  "--seed", str(args.seed)]
        plan = [("smartnoise", [str(python), str(PEER_SCRIPT), str(data), "", *common,
                                *case.peer_args])]
        dp = [sys.executable, str(Path(__file__).resolve()), "--child", str(data), "",
              *common, *case.child_args]
        plan.append(("dpbench", dp))
        if args.warm:
            plan.append(("dpbench (compile cache filled)", dp))
        for name, cmd in plan:
            synth = work / f"{name.split()[0]}_{len(runs)}.csv"
            cmd = [str(synth) if c == "" else c for c in cmd]
            print(f"  {name}, {case.label}, eps {case.eps} ...", end=" ", flush=True)
            res = run_limited(cmd, args.limit, env)
            res.update(impl=name, case=case.label, eps=case.eps)
            if res["status"] == "ok":
                synthetic = pd.read_csv(synth)
                res["tv"] = {k: tv_error(case.frame, synthetic, case.sizes, m)
                             for k, m in case.tv_marginals.items()}
                count = sum(len(m) for m in case.tv_marginals.values())
                res["tv_mean"] = sum(res["tv"][k] * len(m)
                                     for k, m in case.tv_marginals.items()) / count
            print(_describe(res, args.limit), flush=True)
            runs.append(res)
    _timing.write_report(
        args.out, start, settings={"seed": args.seed, "limit_s": args.limit},
        cases=[{"label": c.label, "eps": c.eps, "delta": c.delta, "rows": c.rows,
                "smartnoise": c.peer_args, "dpbench": c.child_args,
                "tv_marginals": {k: len(m) for k, m in c.tv_marginals.items()}}
               for c in cases],
        runs=runs)
    print(table(runs, args.limit))
    print(f"written {args.out}")


def _describe(res: dict[str, Any], limit: float) -> str:
    if res["status"] == "timeout":
        return (f"did not finish in {limit:.0f} s (peak {res['peak_mb']:.0f} MB so far"
                f"{_done(res)})")
    if res["status"] != "ok":
        return f"FAILED: {str(res.get('error', ''))[-300:]}"
    jax = (f", JAX compile {res['jax_compile_s']:.1f} s ({res['compiled']} compiled, "
           f"{res['loaded']} loaded)" if "jax_compile_s" in res else "")
    tv = ", ".join(f"{k}-way {v:.4f}" for k, v in res["tv"].items())
    return (f"{res['wall_s']:.1f} s wall, {res['cpu_s']:.1f} s CPU, peak "
            f"{res['peak_mb']:.0f} MB, {res['rounds']} rounds, mean TV {tv}{jax}")


def _done(res: dict[str, Any]) -> str:
    """How far a stopped peer run got (set-up, rounds), else ""."""
    if "rounds_done" not in res:
        return ""
    setup = res.get("setup_done_at_s")
    text = "set-up not done" if setup is None else f"set-up done at {setup:.0f} s"
    if res["rounds_done"]:
        done = res["rounds_done"]
        return (f", {text}, {done} round{'s' * (done > 1)} done, the last at "
                f"{res['last_round_at_s']:.0f} s")
    return f", {text}, no round done"


def table(runs: list[dict[str, Any]], limit: float) -> str:
    """Markdown tables: one row per run, then the peer / dpbench ratios per case."""
    orders = sorted({k for r in runs for k in r.get("tv", {})})
    lines = ["| case | implementation | eps | wall s | CPU s | peak MB | rounds | "
             + " | ".join(f"mean TV, {k}-way" for k in orders) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(orders)]
    for r in runs:
        head = f"| {r['case']} | {r['impl']} | {r['eps']} |"
        if r["status"] == "ok":
            tv = " | ".join(f"{r['tv'][k]:.4f}" if k in r["tv"] else "" for k in orders)
            lines.append(f"{head} {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_mb']:.0f} | "
                         f"{r['rounds']} | {tv} |")
        else:
            what = (f"did not finish in {limit:.0f} s{_done(r)}" if r["status"] == "timeout"
                    else "failed")
            lines.append(f"{head} {what} | {r['cpu_s']:.1f} | {r['peak_mb']:.0f} | |"
                         + " |" * len(orders))
    # CPU seconds first: unlike wall time they are not stretched when other work shares
    # the cores (the README's ratios are CPU ratios)
    lines += ["", "| case | eps | dpbench run | CPU: smartnoise / dpbench | wall: smartnoise / "
              "dpbench | peak memory: smartnoise / dpbench | mean TV (all scored marginals): "
              "dpbench / smartnoise |", "|---|---|---|---|---|---|---|"]
    for case, eps in dict.fromkeys((r["case"], r["eps"]) for r in runs):
        mine = [r for r in runs if r["case"] == case and r["eps"] == eps]
        peer = next(r for r in mine if r["impl"] == "smartnoise")
        for ours in (r for r in mine if r["impl"].startswith("dpbench")):
            if ours["status"] != "ok":
                continue
            cpu = peer["cpu_s"] / ours["cpu_s"]
            speed = peer["wall_s"] / ours["wall_s"]
            sign = ">= " if peer["status"] == "timeout" else ""
            mem = peer["peak_mb"] / ours["peak_mb"]
            err = (f"{ours['tv_mean'] / peer['tv_mean']:.2f}" if peer["status"] == "ok"
                   else "n/a")
            lines.append(f"| {case} | {eps} | {ours['impl']} | {sign}{cpu:.1f}x | "
                         f"{sign}{speed:.1f}x | {sign}{mem:.1f}x | {err} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
