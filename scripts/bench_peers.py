"""dpbench's AIM against smartnoise-synth's AIM, side by side on the same discretised Adult.

Both run on trial 0's training split of DD-SSP's Adult (47,842 rows, 15 attributes; as
scripts/bench_aim.py loads it), all 2-way marginals as the workload, the same eps,
delta (1e-5), model-size cap (200 MB), T = 16 d rounds, 1,000 estimation iterations and
the same number of sampled rows (the training set's), one after the other in this
sitting, each in a fresh process with a time limit. A run that does not finish in the
limit is reported as "did not finish in N s" (an honest lower bound for the ratio).

For each run: wall seconds (process start to synthetic rows written), peak resident
memory of the process (getrusage of the child), AIM rounds, and the accuracy figure:
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

The script prints how long it expects to take before it starts. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_aim import load_train, method_settings  # noqa: E402

from dpbench.methods.marginals.data import checked_codes, data_marginal  # noqa: E402
from dpbench.methods.marginals.workloads import all_kway  # noqa: E402

PEER_VENV = ROOT / ".bench-peers-venv"
PEER_PIN = "smartnoise-synth==1.0.8"
PEER_DEPS = ["mbi>=1.1,<2", "smartnoise-sql>=1.0.10", "Faker>=17.0.0", "disjoint-set>=0.9,<0.10",
             "pac-synth>=0.0.8,<0.0.9"]
PEER_SCRIPT = ROOT / "scripts" / "bench_peers_smartnoise.py"

#: rough seconds per run on 2 idle cores (README, Speed; smartnoise's eps-1 run has taken
#: 1,224 s idle and did not finish in 45 min under load), for the estimate printed before
#: starting; None: slower than any sensible limit
EXPECTED_S = {("smartnoise", 0.1): 300.0, ("smartnoise", 1.0): 1300.0,
              ("dpbench", 0.1): 35.0, ("dpbench", 1.0): 250.0}


def ensure_peer_venv() -> Path:
    """The peer environment's python, created (a few minutes, from PyPI) if missing."""
    python = PEER_VENV / "bin" / "python"
    if python.exists():
        return python
    print(f"creating {PEER_VENV} with {PEER_PIN} (once; a few minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--no-deps", PEER_PIN], check=True)
    subprocess.run([*pip, *PEER_DEPS], check=True)
    return python


def run_limited(cmd: list[str], limit_s: float, env: dict[str, str]) -> dict[str, object]:
    """Run ``cmd``; wall seconds, peak RSS (MB, getrusage of that child), its last stdout
    line parsed as JSON, and status ok / failed / timeout (killed after ``limit_s``)."""
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
    status = None
    while True:
        pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = "ok" if os.waitstatus_to_exitcode(code) == 0 else "failed"
            break
        if time.perf_counter() - t0 > limit_s:
            proc.kill()
            _, code, usage = os.wait4(proc.pid, 0)
            status = "timeout"
            break
        time.sleep(0.2)
    proc.returncode = os.waitstatus_to_exitcode(code)
    wall = time.perf_counter() - t0
    out.seek(0)
    err.seek(0)
    lines = [ln for ln in out.read().splitlines() if ln.startswith("{")]
    result = {"status": status, "wall_s": wall, "peak_mb": usage.ru_maxrss / 1024}
    if status == "ok" and lines:
        result.update(json.loads(lines[-1]))
    elif status == "failed":
        result["error"] = err.read()[-2000:]
    return result


def tv_error(real: pd.DataFrame, synth: pd.DataFrame, sizes: dict[str, int], k: int) -> float:
    """Mean total-variation distance over every k-way marginal (normalised tables)."""
    attrs = list(real.columns)
    rc = checked_codes(real, attrs, sizes)
    sc = checked_codes(synth[attrs].astype(np.int64), attrs, sizes)
    out = []
    for cl in all_kway(attrs, k):
        p = data_marginal(rc, cl, sizes).ravel()
        q = data_marginal(sc, cl, sizes).ravel()
        out.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(out))


def child_dpbench(args: argparse.Namespace) -> None:
    """One dpbench AIM fit + sample (run in its own process by :func:`main`)."""
    from bench_aim import BACKEND, CACHE_HIT, COMPILE_EVENTS
    from jax import monitoring

    from dpbench.methods.marginals.aim import AIMSettings, run_aim
    from dpbench.methods.marginals.workloads import build_workload
    from dpbench.privacy import Accountant

    seen = {"compile_s": 0.0, "programs": 0, "loaded": 0}

    def on_duration(name: str, dur: float, **_: object) -> None:
        if name in COMPILE_EVENTS:
            seen["compile_s"] += dur
            seen["programs"] += name == BACKEND

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(
        lambda name, **_: seen.update(loaded=seen["loaded"] + 1) if name == CACHE_HIT else None)
    frame = pd.read_csv(args.child[0])
    sizes = json.loads(Path(args.child[0]).with_suffix(".json").read_text())
    settings = {**method_settings("ddssp", "paper"), "max_model_size": args.max_model_size}
    t0 = time.perf_counter()
    model = run_aim(frame, sizes, build_workload("all_pairs", list(frame.columns)),
                    Accountant(args.eps[0], args.delta, "zcdp"),
                    np.random.default_rng(args.seed), AIMSettings(**settings))
    fit_s = time.perf_counter() - t0
    model.sample(args.rows, np.random.default_rng(args.seed + 1)).to_csv(args.child[1],
                                                                         index=False)
    print(json.dumps({"fit_s": fit_s, "sample_s": time.perf_counter() - t0 - fit_s,
                      "rounds": model.info["rounds"], "jax_compile_s": seen["compile_s"],
                      "compiled": seen["programs"] - seen["loaded"], "loaded": seen["loaded"]}))


def estimate_s(eps: list[float], limit: float, warm: bool) -> float:
    total = 0.0
    for e in eps:
        for impl in ("smartnoise", "dpbench", *(["dpbench"] if warm else [])):
            guess = EXPECTED_S.get((impl, e))
            total += limit if guess is None else min(guess, limit)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--max-model-size", type=float, default=200.0)
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

    python = ensure_peer_venv()
    frame, sizes = load_train("adult", "paper", args.seed)
    rows = len(frame)
    minutes = estimate_s(args.eps, args.limit, args.warm) / 60
    print(f"Adult n={rows}, {len(sizes)} attributes, 105 pairs; eps {args.eps}, delta "
          f"{args.delta}, cap {args.max_model_size} MB, T = 16 d, 1000 iterations, "
          f"limit {args.limit:.0f} s per run.\nExpected duration: about {minutes:.0f} min "
          f"(on 2 idle cores; smartnoise takes most of it).", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    data = work / "adult.csv"
    frame.to_csv(data, index=False)
    data.with_suffix(".json").write_text(json.dumps(sizes))
    cache = work / "cache"                         # empty: dpbench's first process is cold
    env = {**os.environ, "DPBENCH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load = os.getloadavg()
    runs = []
    for eps in args.eps:
        common = ["--eps", str(eps), "--delta", str(args.delta)]
        plan = [("smartnoise", [str(python), str(PEER_SCRIPT), str(data), "", *common,
                                "--max-model-size", str(args.max_model_size), "--rows",
                                str(rows), "--seed", str(args.seed)])]
        dp = [sys.executable, str(Path(__file__).resolve()), "--child", str(data), "",
              *common, "--max-model-size", str(args.max_model_size), "--rows", str(rows),
              "--seed", str(args.seed)]
        plan.append(("dpbench", dp))
        if args.warm:
            plan.append(("dpbench (compile cache filled)", dp))
        for name, cmd in plan:
            synth = work / f"{name.split()[0]}_{eps}_{len(runs)}.csv"
            cmd = [str(synth) if c == "" else c for c in cmd]
            print(f"  {name} eps {eps} ...", end=" ", flush=True)
            res = run_limited(cmd, args.limit, env)
            res.update(impl=name, eps=eps)
            if res["status"] == "ok":
                synthetic = pd.read_csv(synth)
                res["tv2"] = tv_error(frame, synthetic, sizes, 2)
                res["tv3"] = tv_error(frame, synthetic, sizes, 3)
                res["tv_2_and_3"] = (res["tv2"] * 105 + res["tv3"] * 455) / 560
            print(_describe(res, args.limit), flush=True)
            runs.append(res)
    report = {"started": started, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
              "load_avg_start": load, "load_avg_end": os.getloadavg(),
              "settings": {"delta": args.delta, "max_model_size": args.max_model_size,
                           "rounds": "16 d", "iters": 1000, "rows": rows, "seed": args.seed,
                           "limit_s": args.limit}, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(runs, args.limit))
    print(f"written {args.out}")


def _describe(res: dict[str, object], limit: float) -> str:
    if res["status"] == "timeout":
        return f"did not finish in {limit:.0f} s (peak {res['peak_mb']:.0f} MB so far)"
    if res["status"] != "ok":
        return f"FAILED: {str(res.get('error', ''))[-300:]}"
    jax = (f", JAX compile {res['jax_compile_s']:.1f} s ({res['compiled']} compiled, "
           f"{res['loaded']} loaded)" if "jax_compile_s" in res else "")
    return (f"{res['wall_s']:.1f} s, peak {res['peak_mb']:.0f} MB, {res['rounds']} rounds, "
            f"TV 2-way {res['tv2']:.4f}, 3-way {res['tv3']:.4f}{jax}")


def table(runs: list[dict[str, object]], limit: float) -> str:
    """Markdown table: one row per run, then the peer / dpbench ratios per eps."""
    lines = ["| implementation | eps | wall s | peak MB | rounds | mean TV, 2-way | "
             "mean TV, 3-way |", "|---|---|---|---|---|---|---|"]
    for r in runs:
        if r["status"] == "ok":
            lines.append(f"| {r['impl']} | {r['eps']} | {r['wall_s']:.1f} | "
                         f"{r['peak_mb']:.0f} | {r['rounds']} | {r['tv2']:.4f} | "
                         f"{r['tv3']:.4f} |")
        else:
            what = (f"did not finish in {limit:.0f} s" if r["status"] == "timeout"
                    else "failed")
            lines.append(f"| {r['impl']} | {r['eps']} | {what} | {r['peak_mb']:.0f} | | | |")
    lines += ["", "| eps | dpbench run | time: smartnoise / dpbench | peak memory: "
              "smartnoise / dpbench | mean TV (2+3-way): dpbench / smartnoise |",
              "|---|---|---|---|---|"]
    for eps in dict.fromkeys(r["eps"] for r in runs):
        peer = next(r for r in runs if r["eps"] == eps and r["impl"] == "smartnoise")
        for ours in (r for r in runs if r["eps"] == eps and r["impl"].startswith("dpbench")):
            if ours["status"] != "ok":
                continue
            speed = peer["wall_s"] / ours["wall_s"]
            sign = ">= " if peer["status"] == "timeout" else ""
            mem = peer["peak_mb"] / ours["peak_mb"]
            err = (f"{ours['tv_2_and_3'] / peer['tv_2_and_3']:.2f}" if peer["status"] == "ok"
                   else "n/a")
            lines.append(f"| {eps} | {ours['impl']} | {sign}{speed:.1f}x | {sign}{mem:.1f}x | "
                         f"{err} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
